from __future__ import annotations

from typing import get_args

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class BridgesConfig(AppConfig):
    name = "bridges"
    verbose_name = _("Messaging bridges and outgoing events")

    def ready(self) -> None:
        # The jobs register with the Celery app in every process: the services queue them
        # by name (host/queue.py), with the task's own options.
        from bridges import outbox, receivers, tasks  # noqa: F401
        from bridges.selectors import endpoint_secrets_of
        from chat.signals import decided_answer_ended
        from host.stored_secrets import register_stored_secrets
        from knowledge import signals as knowledge_signals
        from memory_addon import signals as memory_signals
        from memory_addon.core.operations import Action
        from memory_addon.models import ChangeSet, Proposal

        register_stored_secrets(endpoint_secrets_of)
        # M19: an answer that went on after its question timed out goes back to its chat.
        decided_answer_ended.connect(
            receivers.decided_answer_ended, dispatch_uid="bridges-decided-answer"
        )
        # B4: the outbox hears the changes inside their transaction; memory and knowledge
        # never name bridges.
        for signal, receiver in (
            (memory_signals.change_set_written, outbox.memory_changed_event),
            (memory_signals.proposal_created, outbox.proposal_created_event),
            (memory_signals.proposal_resolved, outbox.proposal_resolved_event),
            (knowledge_signals.knowledge_indexed, outbox.knowledge_indexed_event),
        ):
            signal.connect(receiver, dispatch_uid=f"bridges-outbox-{receiver.__name__}")
        # Outgoing events may name these kinds and no other text (B4).
        outbox.event_kinds_allow(
            [
                *ChangeSet.Origin.values,
                *ChangeSet.Source.values,
                *Proposal.State.values,
                *(name for part in get_args(Action) for name in get_args(part)),
            ]
        )
