from __future__ import annotations

from celery import shared_task

from memory_addon.services.changes import history_prune
from memory_addon.services.proposals import proposals_expire


@shared_task(name="memory_addon.ping")
def ping() -> str:
    """Answered by any live worker; /healthz uses it."""
    return "pong"


@shared_task(name="memory_addon.proposals_expire")
def proposals_expire_task() -> int:
    return proposals_expire()


@shared_task(name="memory_addon.history_prune")
def history_prune_task() -> int:
    return history_prune()
