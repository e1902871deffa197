"""Queue a Celery job by its registered name.

Services queue their own app's jobs through this instead of importing the app's tasks
module: the tasks call the services, so that import would go in a circle.
"""

from __future__ import annotations

from functools import partial

from celery import current_app
from django.db import transaction


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
