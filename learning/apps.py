from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class LearningConfig(AppConfig):
    name = "learning"
    verbose_name = _("Learning and upkeep")

    def ready(self) -> None:
        # The jobs register with the Celery app in every process: the services queue them
        # by name (host/queue.py), with the task's own options.
        from chat.questions import question_rule_saver_register
        from chat.signals import answer_completed
        from chat.turn_start import turn_start_register
        from chat.under_messages import under_messages_register
        from learning import receivers, tasks  # noqa: F401
        from learning.selectors import rules_under_messages, triage_inbox_section
        from learning.services.rules import rule_from_question
        from learning.services.triage import triage_turn_start
        from memory_addon.pages import inbox_section_register

        # The chat never names learning: learning hears its answers and fills its cards.
        answer_completed.connect(receivers.answer_completed, dispatch_uid="learning-rule-check")
        under_messages_register(rules_under_messages)
        # A question's permanent rule (M19) is saved the way every rule is.
        question_rule_saver_register(rule_from_question)
        turn_start_register(triage_turn_start)
        inbox_section_register(triage_inbox_section)
