from __future__ import annotations

from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "chat"
    verbose_name = "Chat"

    def ready(self) -> None:
        # The jobs register with the Celery app in every process: the services queue them
        # by name (host/queue.py), with the task's own options.
        from chat import tasks  # noqa: F401
        from chat.selectors import conversation_titles
        from chat.views import inbox_questions
        from memory_addon.pages import inbox_section_register
        from memory_addon.selectors import conversation_titles_register

        # The Inbox names the chat a proposal came from; memory cannot read chat's tables.
        conversation_titles_register(conversation_titles)
        # Questions during a run wait in the Inbox too (M19).
        inbox_section_register(inbox_questions)
