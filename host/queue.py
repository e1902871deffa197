"""Queue a Celery job by its registered name.

Services queue their own app's jobs through this instead of importing the app's tasks
module: the tasks call the services, so that import would go in a circle.
"""

from __future__ import annotations

import logging
from functools import partial

from celery import current_app
from django.core.cache import cache
from django.db import transaction

logger = logging.getLogger(__name__)

# How long a "refresh is queued" mark lives: a job lost with its worker is queued again
# by the next write after this.
QUEUED_MARK_SECONDS = 600


def queue_job(name: str, *args: object, **options: object) -> None:
    """Send now; `options` are Celery's (countdown, queue...)."""
    current_app.signature(name, args=args, options=options).apply_async()


def queue_job_on_commit(name: str, *args: object, **options: object) -> None:
    """Send once the surrounding transaction commits, never for a rollback.

    A broker that is down is logged, never raised: the write is committed, and answering
    500 would make a retrying client store it twice. Each app's sweeper (the chat reaper,
    the bridges sweep, the stale-job reaper) queues what was lost once the broker is back.
    """
    transaction.on_commit(partial(queue_job, name, *args, **options), robust=True)


def queue_once_on_commit(name: str, key: str, *args: object) -> None:
    """Queue `name` after commit unless a run for `key` is already waiting: a burst of
    writes queues one job, which reads the state as it is when it runs. Without Redis
    for the mark it is queued anyway (such jobs are idempotent)."""

    def enqueue() -> None:
        try:
            first = cache.add(f"queued:{key}", 1, timeout=QUEUED_MARK_SECONDS)
        except Exception:
            first = True
        if first:
            queue_job(name, *args)

    transaction.on_commit(enqueue, robust=True)


def queued_run_started(key: str) -> None:
    """The waiting run for `key` has started: a write after this queues the next one."""
    try:
        cache.delete(f"queued:{key}")
    except Exception:
        logger.warning("Could not clear the queued mark %s", key)
