"""The host's own jobs: a ping any live worker answers (/healthz, start-up checks), and
the purge of kept answers of keyed writes."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="memory_addon.ping")
def ping() -> str:
    """Answered by any live worker; /healthz uses it."""
    return "pong"


@shared_task(name="host.idempotent_answers_purge")
def idempotent_answers_purge() -> int:
    from host.idempotency import idempotent_answers_purge as purge

    return purge()
