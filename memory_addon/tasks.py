from __future__ import annotations

from celery import shared_task

from memory_addon.services.changes import history_prune
from memory_addon.services.note_search import (
    note_embeddings_refresh,
    note_embeddings_refresh_started,
)
from memory_addon.services.proposals import proposals_expire


@shared_task(name="memory_addon.proposals_expire")
def proposals_expire_task() -> int:
    return proposals_expire()


@shared_task(name="memory_addon.history_prune")
def history_prune_task() -> int:
    return history_prune()


# Late acks and reject-on-worker-lost come from the Celery settings; the job is
# idempotent (it embeds only files whose hash differs from their vector's).
@shared_task(name="memory_addon.note_embeddings_refresh")
def note_embeddings_refresh_task(scope_id: int) -> int:
    """Embed a scope's changed notes for semantic list_memory (M4)."""
    note_embeddings_refresh_started(scope_id)
    return note_embeddings_refresh(scope_id=scope_id)
