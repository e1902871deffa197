"""The host's own jobs: a ping any live worker answers (/healthz, start-up checks), the
purge of kept answers of keyed writes, and the sweep of what deletes left on other servers."""

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


@shared_task(name="host.leftovers_clear")
def leftovers_clear() -> int:
    from host.leftovers import SWEEP_KEY
    from host.leftovers import leftovers_clear as clear
    from host.queue import queued_run_started

    queued_run_started(SWEEP_KEY)  # a delete from now on queues the next sweep
    return clear()
