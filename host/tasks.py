"""The host's own job: a ping any live worker answers (/healthz, start-up checks)."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="memory_addon.ping")
def ping() -> str:
    """Answered by any live worker; /healthz uses it."""
    return "pong"
