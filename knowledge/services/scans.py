"""Scan jobs: list what changed in a source for the person to review, then confirm or dismiss it."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils.translation import gettext as _

from knowledge.core import scanning
from knowledge.errors import KnowledgeRefusal
from knowledge.models import Job, Source
from knowledge.services.extracted import _expire_kept_pages, _keep_pages
from knowledge.services.jobs import _beat, _claim, _finish, _Lost, _start_job, _Stop
from knowledge.services.sources import source_remove
from knowledge.services.uploads import _held_elsewhere, _upload_fetch

logger = logging.getLogger(__name__)


def scan_confirm(*, scan_job: Job) -> Job:
    """The person confirmed the review: index what it listed."""
    with transaction.atomic(durable=True):
        locked = Job.objects.select_for_update().get(pk=scan_job.pk)
        if locked.kind != Job.Kind.SCAN or locked.state != Job.State.REVIEW:
            raise KnowledgeRefusal(_("This review is no longer waiting for a confirmation."))
        locked.state = Job.State.SUCCEEDED
        locked.save(update_fields=["state"])
        return _start_job(
            store=locked.store,
            source=locked.source,
            kind=Job.Kind.INDEX,
            scan_job=locked,
            wait_if_busy=True,
        )


def scan_dismiss(*, scan_job: Job) -> None:
    Job.objects.filter(pk=scan_job.pk, state=Job.State.REVIEW).update(state=Job.State.DISMISSED)
    if scan_job.source.status == Source.Status.NEW and not scan_job.source.documents.exists():
        source_remove(source=scan_job.source)


def _spec(source: Source) -> scanning.ScanSpec:
    return scanning.ScanSpec(
        keep_pages=_keep_pages,
        root=Path(source.path),
        include=tuple(source.include_globs),
        exclude=tuple(source.exclude_globs),
        use_gitignore=source.use_gitignore,
        max_file_bytes=source.max_file_bytes,
        known_hashes=dict(source.hashes),
    )


def scan_run(job_id: int) -> None:
    job = _claim(job_id, Job.Kind.SCAN)
    if job is None:
        logger.info("Scan job %s is not waiting to run; nothing to do", job_id)
        return
    try:
        _scan_claimed(job)
    except _Lost:
        logger.warning("Scan job %s was settled elsewhere; this run stops", job_id)


def _scan_claimed(job: Job) -> None:
    source = job.source
    checked = {"n": 0}

    def should_stop() -> bool:
        checked["n"] += 1
        if checked["n"] % 50:
            return False
        try:
            _beat(job)
        except _Stop:
            return True
        return False

    _expire_kept_pages()
    try:
        _upload_fetch(source)
        result = scanning.scan(_spec(source), should_stop=should_stop)
    except scanning.Cancelled:
        _finish(job, Job.State.CANCELLED)
        return
    _skip_known_uploads(source, result.rows)
    rows = [row.__dict__ for row in result.rows]
    if result.missing_root:
        _apply_missing_root(job, source, rows)
        return
    if result.fatal:
        Source.objects.filter(pk=source.pk).update(
            status=Source.Status.ERROR, status_message=result.fatal
        )
        _finish(job, Job.State.FAILED, error=result.fatal, review=rows)
        return
    summary = result.summary()
    counts = {**summary, "limit": result.limit_reached}
    changes = sum(summary["counts"][s] for s in ("new", "changed", "deleted"))  # type: ignore[index]
    if job.counts.get("auto_index"):
        if not changes:
            _finish(job, Job.State.SUCCEEDED, review=rows, counts=counts, progress=100)
            return
        _finish(job, Job.State.REVIEW, review=rows, counts=counts, progress=100)
        scan_confirm(scan_job=job)
        return
    _finish(job, Job.State.REVIEW, review=rows, counts=counts, progress=100)


def _skip_known_uploads(source: Source, rows: list[scanning.Row]) -> None:
    """Uploaded files the collection already holds are skipped by the scan as well.

    The check at upload time cannot see a parallel upload whose scan has not run yet;
    scans of one collection run one at a time, so here the earlier one is visible:
    as another source's document, or in a scan that waits for review.
    """
    if source.kind != Source.Kind.UPLOAD:
        return
    fresh = {
        row.sha256: index
        for index, row in enumerate(rows)
        if row.status in (scanning.NEW, scanning.CHANGED) and row.sha256
    }
    if not fresh:
        return
    held = _held_elsewhere(source.store_id, set(fresh), other_than=source)
    for digest, (_source, path) in held.items():
        index = fresh[digest]
        rows[index] = dataclasses.replace(
            rows[index], status=scanning.SKIPPED, reason=f"already in this collection as {path}"
        )


def _apply_missing_root(job: Job, source: Source, rows: list[dict[str, Any]]) -> None:
    """A deleted root removes the source's chunks at once, so no stale excerpt remains."""
    with transaction.atomic(durable=True):
        removed = source.documents.count()
        source.documents.all().delete()
        Source.objects.filter(pk=source.pk).update(
            status=Source.Status.MISSING,
            status_message="The folder no longer exists.",
            hashes={},
            file_count=0,
            chunk_count=0,
        )
        _finish(
            job,
            Job.State.SUCCEEDED,
            review=rows,
            progress=100,
            counts={"removed": removed, "new": 0, "unchanged": 0, "skipped": 0},
        )
