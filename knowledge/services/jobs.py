"""Scan and index jobs: starting, claiming, heartbeats, settling, cancelling, reaping dead ones."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext as _

from host.queue import queue_job_on_commit
from knowledge import events
from knowledge.errors import JobBusy, KnowledgeRefusal
from knowledge.models import Job, Source, StagedChunk, Store

logger = logging.getLogger(__name__)

# The Celery task that runs each kind of job, by its registered name: knowledge/tasks.py
# imports these services (and these names), so the services queue by name instead of
# importing it (host/queue.py).
SCAN_TASK = "knowledge.scan_source"
INDEX_TASK = "knowledge.index_source"
TASK_OF_KIND: dict[str, str] = {Job.Kind.SCAN: SCAN_TASK, Job.Kind.INDEX: INDEX_TASK}


def _start_job(
    *,
    store: Store,
    source: Source,
    kind: str,
    auto_index: bool = False,
    scan_job: Job | None = None,
    wait_if_busy: bool = False,
) -> Job:
    """Start the job, or with `wait_if_busy` put it in line behind the collection's
    running one (it starts when that one ends)."""
    fields: dict[str, Any] = {
        "store": store,
        "source": source,
        "kind": kind,
        "scan_job": scan_job,
        "counts": {"auto_index": auto_index},
    }
    try:
        with transaction.atomic():
            job = Job.objects.create(**fields)
    except IntegrityError:
        if not wait_if_busy:
            raise JobBusy(
                _(
                    "A scan or index job is already running for this collection; "
                    "wait for it or cancel it."
                )
            ) from None
        return _wait_in_line(fields)
    _run_on_commit(job)
    return job


def _wait_in_line(fields: dict[str, Any]) -> Job:
    store: Store = fields["store"]
    limit = settings.KNOWLEDGE_JOBS_WAITING_PER_STORE
    # Parallel requests count the line one at a time (the caller's transaction holds it).
    Store.objects.select_for_update().filter(pk=store.pk).first()
    if Job.objects.filter(store=store, state=Job.State.WAITING).count() >= limit:
        raise JobBusy(
            _(
                "%(count)s jobs are already waiting for this collection; "
                "wait for them to finish or cancel some."
            )
            % {"count": limit}
        )
    job = Job.objects.create(**fields, state=Job.State.WAITING)
    events.job_changed_on_commit(job)
    # The running job may have ended before this one was in line: look again once
    # this one is committed.
    _start_next_on_commit(store.pk)
    return job


def _start_next_on_commit(store_id: int) -> None:
    transaction.on_commit(lambda: start_next_waiting(store_id))


def start_next_waiting(store_id: int) -> Job | None:
    """Start the collection's oldest waiting job, unless another job runs."""
    for job in Job.objects.filter(store_id=store_id, state=Job.State.WAITING).order_by(
        "created_at", "id"
    ):
        try:
            with transaction.atomic():
                started = Job.objects.filter(pk=job.pk, state=Job.State.WAITING).update(
                    state=Job.State.QUEUED
                )
        except IntegrityError:
            return None  # another job runs: its end starts this one
        if started:
            job.state = Job.State.QUEUED
            _run_on_commit(job)
            return job
    return None


def _run_on_commit(job: Job) -> None:
    queue_job_on_commit(TASK_OF_KIND[job.kind], job.pk)
    events.job_changed_on_commit(job)


def job_cancel(*, job: Job) -> None:
    # A job still in line has no worker to tell: it ends here.
    with transaction.atomic():
        cancelled = Job.objects.filter(pk=job.pk, state=Job.State.WAITING).update(
            state=Job.State.CANCELLED, cancel_requested=True, finished_at=timezone.now()
        )
        if cancelled and job.scan_job_id is not None:
            # Its review was confirmed but nothing was indexed: it waits for a new
            # confirmation, instead of leaving the files with no way to index them.
            Job.objects.filter(pk=job.scan_job_id, state=Job.State.SUCCEEDED).update(
                state=Job.State.REVIEW
            )
    if cancelled:
        job.refresh_from_db()
        events.job_changed_on_commit(job)
        return
    updated = Job.objects.filter(pk=job.pk, state__in=Job.ACTIVE_STATES).update(
        cancel_requested=True
    )
    if not updated:
        raise KnowledgeRefusal(_("This job is not running any more."))


def _claim(job_id: int, kind: str) -> Job | None:
    """Take a queued job, or one whose worker died (stale heartbeat), for this run.

    Taking over a dead worker's job counts as its retry (Job.requeues), like the reaper's
    re-queue: the count is also this run's claim, so a run that lost its job to a newer
    one notices at its next heartbeat and stops (_Lost) without touching the job.
    """
    now = timezone.now()
    stale = now - timedelta(seconds=settings.KNOWLEDGE_JOB_STALE_SECONDS)
    jobs = Job.objects.filter(pk=job_id, kind=kind)
    claimed = jobs.filter(state=Job.State.QUEUED).update(state=Job.State.RUNNING, heartbeat_at=now)
    if not claimed:
        dead = Q(heartbeat_at__lt=stale) | Q(heartbeat_at__isnull=True)
        claimed = jobs.filter(dead, state=Job.State.RUNNING).update(
            heartbeat_at=now, requeues=F("requeues") + 1
        )
    if not claimed:
        return None
    return Job.objects.select_related("source", "store").get(pk=job_id)


class _Stop(Exception):
    pass


class _Lost(Exception):
    """This run's job was settled elsewhere (re-queued or failed by the reaper): stop quietly."""


def _ours(job: Job) -> Q:
    return Q(pk=job.pk, state=Job.State.RUNNING, requeues=job.requeues)


def _beat(job: Job, *, progress: int | None = None, counts: dict[str, Any] | None = None) -> None:
    """Record liveness and progress outside any transaction; stop when cancel was asked."""
    fields: dict[str, Any] = {"heartbeat_at": timezone.now()}
    if progress is not None:
        job.progress = fields["progress"] = progress
    if counts is not None:
        job.counts = fields["counts"] = {**job.counts, **counts}
    if not Job.objects.filter(_ours(job)).update(**fields):
        raise _Lost
    if Job.objects.filter(pk=job.pk, cancel_requested=True).exists():
        raise _Stop
    events.job_changed_on_commit(job)


def _finish(job: Job, state: str, *, error: str = "", **fields: Any) -> None:
    """Settle a job this run (or the reaper) holds; a job settled elsewhere is left alone."""
    job.state, job.error, job.finished_at = state, error[:500], timezone.now()
    for name, value in fields.items():
        setattr(job, name, value)
    updated = Job.objects.filter(
        pk=job.pk, state__in=Job.ACTIVE_STATES, requeues=job.requeues
    ).update(state=job.state, error=job.error, finished_at=job.finished_at, **fields)
    if not updated:
        raise _Lost
    events.job_changed_on_commit(job)
    _start_next_on_commit(job.store_id)


def _stale_jobs() -> Q:
    cutoff = timezone.now() - timedelta(seconds=settings.KNOWLEDGE_JOB_STALE_SECONDS)
    # Running without a heartbeat for too long: the worker died. Queued again by us and
    # still not started: the message was lost with the broker.
    return Q(state=Job.State.RUNNING, heartbeat_at__lt=cutoff) | Q(
        state=Job.State.QUEUED, requeues__gt=0, heartbeat_at__lt=cutoff
    )


def stale_jobs_reap() -> dict[str, int]:
    """Settle jobs whose worker died: send them again once, then fail them with a reason.

    Runs from Celery beat every few minutes, so a killed worker blocks a collection for
    minutes, not for the broker's hour-long visibility timeout. A failed index job leaves
    the previous index serving; the collection can start a new job at once.
    """
    settled = {"requeued": 0, "failed": 0}
    for job_id in Job.objects.filter(_stale_jobs()).values_list("pk", flat=True):
        with transaction.atomic(durable=True):
            job = (
                Job.objects.select_for_update(skip_locked=True)
                .filter(_stale_jobs(), pk=job_id)
                .select_related("source", "store")
                .first()
            )
            if job is None:  # it beat or finished meanwhile, or another reaper has it
                continue
            if job.requeues < settings.KNOWLEDGE_JOB_MAX_REQUEUES:
                job.state, job.requeues, job.heartbeat_at = (
                    Job.State.QUEUED,
                    job.requeues + 1,
                    timezone.now(),
                )
                job.save(update_fields=["state", "requeues", "heartbeat_at"])
                _run_on_commit(job)
                settled["requeued"] += 1
                logger.warning("Job %s had a stale heartbeat; sent it again", job.pk)
                continue
            reason = (
                f"The worker running this {job.get_kind_display().lower()} stopped responding "
                f"(no heartbeat for {settings.KNOWLEDGE_JOB_STALE_SECONDS} s), also after a "
                "retry. The previous index is still in use; run Update now to try again."
            )
            StagedChunk.objects.filter(job=job).delete()
            if job.kind == Job.Kind.INDEX:
                Source.objects.filter(pk=job.source_id).update(
                    status=Source.Status.ERROR, status_message=reason[:500]
                )
            _finish(job, Job.State.FAILED, error=reason)
            settled["failed"] += 1
            logger.warning("Job %s had a stale heartbeat after a retry; failed it", job.pk)
    # A job left in line though nothing runs (its start was lost with a worker).
    settled["started"] = 0
    waiting = Job.objects.filter(state=Job.State.WAITING).values_list("store_id", flat=True)
    for store_id in set(waiting):
        if start_next_waiting(store_id) is not None:
            settled["started"] += 1
    return settled
