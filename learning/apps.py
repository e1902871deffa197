from __future__ import annotations

from django.apps import AppConfig


class LearningConfig(AppConfig):
    name = "learning"
    verbose_name = "Learning and upkeep"

    def ready(self) -> None:
        # The jobs register with the Celery app in every process: the services queue them
        # by name (host/queue.py), with the task's own options.
        from chat.signals import answer_completed
        from chat.turn_start import turn_start_register
        from chat.under_messages import under_messages_register
        from learning import receivers, tasks  # noqa: F401
        from learning.selectors import rules_under_messages, triage_inbox_items
        from learning.services.triage import triage_turn_start
        from memory_addon.inbox_items import inbox_items_register

        # The chat never names learning: learning hears its answers and fills its cards.
        answer_completed.connect(receivers.answer_completed, dispatch_uid="learning-rule-check")
        under_messages_register(rules_under_messages)
        turn_start_register(triage_turn_start)
        inbox_items_register(triage_inbox_items)
