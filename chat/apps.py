from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ChatConfig(AppConfig):
    name = "chat"
    verbose_name = _("Chat")

    def ready(self) -> None:
        # The jobs register with the Celery app in every process: the services queue them
        # by name (host/queue.py), with the task's own options.
        from django.db.models.signals import post_delete, post_save

        from chat import search, tasks  # noqa: F401
        from chat.attachments import own_store_forget
        from chat.export import conversation_export_forget
        from chat.models import Conversation, Message
        from chat.selectors import conversation_titles
        from chat.signals import answer_completed
        from chat.views import inbox_questions
        from memory_addon.pages import inbox_section_register
        from memory_addon.selectors import conversation_titles_register
        from memory_addon.services.tools import chat_tool_register

        # The Inbox names the chat a proposal came from; memory cannot read chat's tables.
        conversation_titles_register(conversation_titles)
        # Questions during a run wait in the Inbox too (M19).
        inbox_section_register(inbox_questions)
        # Past-chat search (B10) runs with the memory tools, through their argument gate.
        chat_tool_register(search.SEARCH_TOOL, search.search_conversations_tool)
        post_save.connect(search.message_stored, sender=Message, dispatch_uid="chat-embed-stored")
        answer_completed.connect(search.answer_completed, dispatch_uid="chat-embed-answer")
        post_delete.connect(own_store_forget, sender=Conversation, dispatch_uid="chat-own-store")
        post_delete.connect(
            conversation_export_forget, sender=Conversation, dispatch_uid="chat-export"
        )
