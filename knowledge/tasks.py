from __future__ import annotations

from celery import shared_task

from knowledge import services
from knowledge.services.jobs import INDEX_TASK, SCAN_TASK


@shared_task(name=SCAN_TASK)
def scan_source(job_id: int) -> None:
    services.scan_run(job_id)


@shared_task(name=INDEX_TASK)
def index_source(job_id: int) -> None:
    services.index_run(job_id)


@shared_task(name="knowledge.watch_sources")
def watch_sources() -> int:
    return services.watch_sources()


@shared_task(name="knowledge.reap_stale_jobs")
def reap_stale_jobs() -> dict[str, int]:
    return services.stale_jobs_reap()
