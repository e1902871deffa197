"""Reads of the knowledge app that pages and the API share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from django.db.models import Count
from django.shortcuts import get_object_or_404

from accounts.models import User
from knowledge.core.scanning import ProblemRow, ReviewRow
from knowledge.models import Document, Job, Source, Store

FileStatus = Literal["indexed", "waiting", "skipped"]


@dataclass(frozen=True)
class FileRow:
    """One file of a collection as people see it: indexed, waiting, or skipped with a reason."""

    source: Source
    path: str
    status: FileStatus
    reason: str = ""
    size: int | None = None
    format: str = ""
    chunks: int = 0
    document_id: int | None = None


@dataclass(frozen=True)
class StoreFiles:
    rows: list[FileRow]

    def count(self, status: FileStatus) -> int:
        return sum(1 for row in self.rows if row.status == status)

    @property
    def indexed(self) -> int:
        return self.count("indexed")

    @property
    def waiting(self) -> int:
        return self.count("waiting")

    @property
    def skipped(self) -> int:
        return self.count("skipped")


def _waiting_jobs(store: Store) -> dict[int, Job]:
    """Per source, the scan whose files are not indexed yet: waiting for review or queued
    for (or in) an index job."""
    waiting: dict[int, Job] = {}
    for job in Job.objects.filter(store=store, kind=Job.Kind.SCAN, state=Job.State.REVIEW):
        waiting.setdefault(job.source_id, job)
    for job in Job.objects.filter(
        store=store, kind=Job.Kind.INDEX, state__in=Job.ACTIVE_STATES
    ).select_related("scan_job"):
        if job.scan_job is not None:
            waiting.setdefault(job.source_id, job.scan_job)
    return waiting


def _last_index_jobs(store: Store) -> dict[int, Job]:
    """Per source, its latest finished index job: its skipped files are the source's problems."""
    latest: dict[int, Job] = {}
    for job in (
        Job.objects.filter(store=store, kind=Job.Kind.INDEX, state=Job.State.SUCCEEDED)
        .select_related("scan_job")
        .order_by("-finished_at", "-id")
    ):
        latest.setdefault(job.source_id, job)
    return latest


def store_files(store: Store, *, source_id: int | None = None) -> StoreFiles:
    """Every file of the collection's sources (or of one source), grouped by source."""
    sources = {source.pk: source for source in store.sources.all()}
    if source_id is not None:
        sources = {pk: s for pk, s in sources.items() if pk == source_id}
    documents = (
        Document.objects.filter(source_id__in=sources)
        .annotate(chunk_total=Count("chunks"))
        .order_by("path")
    )
    waiting_jobs = _waiting_jobs(store)
    index_jobs = _last_index_jobs(store)
    by_source: dict[int, list[FileRow]] = {pk: [] for pk in sources}
    indexed: dict[int, set[str]] = {pk: set() for pk in sources}
    for document in documents:
        indexed[document.source_id].add(document.path)
        by_source[document.source_id].append(
            FileRow(
                source=sources[document.source_id],
                path=document.path,
                status="indexed",
                size=document.size,
                format=document.format,
                chunks=int(getattr(document, "chunk_total", 0)),
                document_id=document.pk,
            )
        )
    for pk, source in sources.items():
        scan = waiting_jobs.get(pk)
        for row in scan.review if scan else []:
            if row.get("status") in ("new", "changed") and row["path"] not in indexed[pk]:
                by_source[pk].append(
                    FileRow(
                        source=source,
                        path=row["path"],
                        status="waiting",
                        size=row.get("size"),
                        format=row.get("format") or "",
                    )
                )
        job = index_jobs.get(pk)
        if job is None:
            continue
        skipped: list[ReviewRow] = [
            row
            for row in (job.scan_job.review if job.scan_job else [])
            if row["status"] == "skipped"
        ]
        problems: list[ProblemRow] = job.problems
        skipped += [
            {"path": problem["path"], "status": "skipped", "reason": problem.get("reason", "")}
            for problem in problems
        ]
        for row in skipped:
            by_source[pk].append(
                FileRow(
                    source=source,
                    path=row["path"],
                    status="skipped",
                    reason=row.get("reason") or "",
                    size=row.get("size"),
                    format=row.get("format") or "",
                )
            )
    order = {"skipped": 0, "waiting": 1, "indexed": 2}
    rows = [
        row
        for pk in sorted(sources, key=lambda pk: sources[pk].label.lower())
        for row in sorted(by_source[pk], key=lambda r: (order[r.status], r.path.lower()))
    ]
    return StoreFiles(rows=rows)


def document_for(user_id: int, document_id: int) -> Document | None:
    """The document if it belongs to one of this person's collections."""
    return (
        Document.objects.filter(pk=document_id, source__store__owner_id=user_id)
        .select_related("source__store")
        .first()
    )


# The owner checks, one per resource, for pages and the API alike: a foreign or missing id
# is a 404, never a hint that the row exists.


def store_for_user(user: User, store_id: int) -> Store:
    return get_object_or_404(Store, pk=store_id, owner=user)


def source_for_user(user: User, source_id: int) -> Source:
    return get_object_or_404(
        Source.objects.select_related("store"), pk=source_id, store__owner=user
    )


def job_for_user(user: User, job_id: int) -> Job:
    return get_object_or_404(
        Job.objects.select_related("store", "source"), pk=job_id, store__owner=user
    )
