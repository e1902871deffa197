"""Index jobs: read the reviewed files, chunk and embed them aside, show them in one commit."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from host.embeddings import (
    BATCH_SIZE,
    Embedder,
    EmbeddingUnavailable,
)
from host.outbound import release_db_connection
from knowledge import qdrant
from knowledge.core import scanning
from knowledge.core.chunking import chunk_pages
from knowledge.core.extract import Page, Unreadable, storable_pages
from knowledge.errors import KnowledgeRefusal
from knowledge.models import Chunk, Document, Job, Source, StagedChunk
from knowledge.services.embedders import store_embedder
from knowledge.services.extracted import _kept_pages
from knowledge.services.jobs import _beat, _claim, _finish, _Lost, _ours, _Stop
from knowledge.services.stores import _ensure_vector_index, _points_delete_on_commit
from knowledge.services.uploads import _upload_fetch
from knowledge.signals import knowledge_indexed

logger = logging.getLogger(__name__)
# Chunks staged per INSERT when no model embeds them (about 1.6 MB of text at most).
STAGE_BATCH_CHUNKS = 500


def index_run(job_id: int) -> None:
    job = _claim(job_id, Job.Kind.INDEX)
    if job is None:
        logger.info("Index job %s is not waiting to run; nothing to do", job_id)
        return
    try:
        _index_claimed(job)
    except _Lost:
        logger.warning("Index job %s was settled or deleted elsewhere; this run stops", job_id)


def _index_claimed(job: Job) -> None:
    source, store = job.source, job.store
    # A re-run after a crash starts from scratch: drop what the dead run staged.
    StagedChunk.objects.filter(job=job).delete()
    previous_status = source.status if source.status != Source.Status.INDEXING else Source.Status.OK
    Source.objects.filter(pk=source.pk).update(status=Source.Status.INDEXING)
    rows = job.scan_job.review if job.scan_job else []
    try:
        embedder = store_embedder(store)
        outcome = _index_rows(job, source, embedder, rows)
        if store.in_qdrant:
            qdrant.stage_points(store, job.pk, source.pk)
    except _Stop:
        StagedChunk.objects.filter(job=job).delete()
        Source.objects.filter(pk=source.pk).update(status=previous_status)
        _finish(job, Job.State.CANCELLED)
        return
    except (EmbeddingUnavailable, KnowledgeRefusal) as error:
        StagedChunk.objects.filter(job=job).delete()
        Source.objects.filter(pk=source.pk).update(
            status=Source.Status.ERROR, status_message=str(error)[:500]
        )
        _finish(job, Job.State.FAILED, error=str(error))
        return
    _commit(job, source, rows, outcome)


def _open_source_folder(source: Source) -> int:
    """The source's folder as a handle, opened from / without following any link."""
    try:
        return scanning.open_folder(Path(source.path))
    except scanning.UnsafePath as error:
        raise KnowledgeRefusal(
            f"Nothing was indexed: the source path goes through a symbolic link now ({error}) "
            "Fix the folder, then run Update now."
        ) from None
    except FileNotFoundError:
        raise KnowledgeRefusal(
            "Nothing was indexed: the folder no longer exists. Run Update now."
        ) from None
    except OSError as error:
        raise KnowledgeRefusal(
            f"Nothing was indexed: the folder cannot be opened ({error.strerror})."
        ) from None


def _read_reviewed(root_fd: int, source: Source, row: dict[str, Any]) -> tuple[bytes, str]:
    """The file's bytes, read through the folder handle, if they are what the person reviewed."""
    data = scanning.read_below(root_fd, row["path"], limit=source.max_file_bytes)
    digest = hashlib.sha256(data).hexdigest()
    if digest != row.get("sha256"):
        raise Unreadable("changed since the review; run Update now to review it again")
    return data, digest


def _index_rows(
    job: Job, source: Source, embedder: Embedder | None, rows: list[dict[str, Any]]
) -> dict[str, Any]:
    _upload_fetch(source)
    root_fd = _open_source_folder(source)
    try:
        return _index_open(job, source, embedder, rows, root_fd)
    finally:
        os.close(root_fd)


def _index_open(
    job: Job,
    source: Source,
    embedder: Embedder | None,
    rows: list[dict[str, Any]],
    root_fd: int,
) -> dict[str, Any]:
    to_index = [row for row in rows if row["status"] in ("new", "changed")]
    problems: list[dict[str, str]] = []
    documents: dict[str, dict[str, Any]] = {}
    staging = _Staging(job, embedder)
    progress = _Progress(job, staging, problems, of=len(to_index))
    # A large file is many batches: each one beats and checks for a cancel, so the
    # job stays alive (no reaper re-run) and stops when asked, not at the file's end.
    staging.after_batch = progress.report
    for row in to_index:
        progress.documents += 1
        try:
            digest, size, pages = _reviewed_pages(root_fd, source, row)
        except (Unreadable, scanning.UnsafePath) as error:
            problems.append({"path": row["path"], "reason": str(error)})
            continue
        except OSError as error:
            problems.append({"path": row["path"], "reason": f"cannot be read ({error.strerror})"})
            continue
        documents[row["path"]] = {"sha256": digest, "format": row["format"], "size": size}
        staging.add(row["path"], pages)
        progress.report()
    staging.flush()
    return {"documents": documents, "problems": problems}


def _reviewed_pages(
    root_fd: int, source: Source, row: dict[str, Any]
) -> tuple[str, int, list[Page]]:
    """A reviewed file's hash, size and pages (the text its scan kept, else extracted now)."""
    data, digest = _read_reviewed(root_fd, source, row)
    kept = _kept_pages(digest)
    if kept:  # kept by a scan; checked like freshly extracted text
        return digest, len(data), storable_pages(kept)
    pages = scanning.document_pages(data, row["format"], max_chars=scanning.MAX_EXTRACTED_CHARS)
    return digest, len(data), pages


class _Staging:
    """A job's chunks on their way to the staging table: embedded and written per batch."""

    def __init__(self, job: Job, embedder: Embedder | None) -> None:
        self.job, self.embedder = job, embedder
        self.pending: list[StagedChunk] = []
        self.staged = 0
        self.after_batch: Callable[[], None] | None = None
        # A model embeds a batch at a time; without one, chunks are staged in larger
        # batches (each batch is one INSERT round trip).
        self.batch_size = BATCH_SIZE if embedder is not None else STAGE_BATCH_CHUNKS

    @property
    def count(self) -> int:
        return self.staged + len(self.pending)

    def add(self, path: str, pages: list[Page]) -> None:
        for chunk in chunk_pages(
            pages,
            chunk_tokens=settings.KNOWLEDGE_CHUNK_TOKENS,
            overlap_tokens=settings.KNOWLEDGE_CHUNK_OVERLAP_TOKENS,
        ):
            self.pending.append(
                StagedChunk(
                    job=self.job,
                    path=path,
                    ordinal=chunk.ordinal,
                    page=chunk.page,
                    text=chunk.text,
                    token_count=chunk.tokens,
                )
            )
            if len(self.pending) >= self.batch_size:
                self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        if self.embedder is not None:
            release_db_connection()
            vectors = self.embedder.embed([chunk.text for chunk in self.pending])
            for chunk, vector in zip(self.pending, vectors, strict=True):
                chunk.embedding = vector
        try:
            StagedChunk.objects.bulk_create(self.pending)
        except IntegrityError:
            if Job.objects.filter(pk=self.job.pk).exists():
                raise
            # The collection was deleted while this batch was embedded, its job with it.
            raise _Lost from None
        self.staged += len(self.pending)
        self.pending = []
        if self.after_batch is not None:
            self.after_batch()


class _Progress:
    """Progress, heartbeat and the cancel check at most every
    KNOWLEDGE_PROGRESS_INTERVAL_SECONDS, not per file or batch: each beat is two
    queries, a template render and a push to the page."""

    def __init__(
        self, job: Job, staging: _Staging, problems: list[dict[str, str]], *, of: int
    ) -> None:
        self.job, self.staging, self.problems, self.of = job, staging, problems, of
        self.documents = 0
        self.last_beat = float("-inf")  # the first file reports at once

    def report(self) -> None:
        now = time.monotonic()
        if now - self.last_beat < settings.KNOWLEDGE_PROGRESS_INTERVAL_SECONDS:
            return
        _beat(
            self.job,
            progress=min(99, int(90 * self.documents / max(1, self.of))),
            counts={
                "documents": self.documents,
                "of": self.of,
                "chunks": self.staging.count,
                "problems": len(self.problems),
            },
        )
        self.last_beat = now


def _commit(job: Job, source: Source, rows: list[dict[str, Any]], outcome: dict[str, Any]) -> None:
    """Make the new state visible in one transaction."""
    documents: dict[str, dict[str, Any]] = outcome["documents"]
    problems = outcome["problems"]
    removed_paths = {row["path"] for row in rows if row["status"] == "deleted"}
    replaced_paths = removed_paths | set(documents)
    with transaction.atomic(durable=True):
        locked = Source.objects.select_for_update().get(pk=source.pk)
        if not Job.objects.select_for_update().filter(_ours(job)).exists():
            raise _Lost
        if Job.objects.filter(pk=job.pk, cancel_requested=True).exists():
            _cancel_at_commit(job, locked)
            return
        removed = Document.objects.filter(source=locked, path__in=removed_paths).count()
        _replace_documents(job, locked, replaced_paths, documents)
        StagedChunk.objects.filter(job=job).delete()
        skipped = sum(1 for row in rows if row["status"] == "skipped") + len(problems)
        chunk_count = _settle_source(locked, replaced_paths, documents, problem_count=skipped)
        # Progress beats are throttled, so the last one may have counted fewer files.
        handled = sum(1 for row in rows if row["status"] in ("new", "changed"))
        counts = {
            **job.counts,
            "documents": handled,
            "of": handled,
            "new": len(documents),
            "unchanged": sum(1 for row in rows if row["status"] == "unchanged"),
            "removed": removed,
            "skipped": skipped,
            "chunks": chunk_count,
        }
        _finish(job, Job.State.SUCCEEDED, progress=100, problems=problems, counts=counts)
        # B4: written in the commit that makes the new index visible.
        knowledge_indexed.send(
            sender=Job,
            user_id=job.store.owner_id,
            store_id=job.store_id,
            source_id=locked.pk,
            job_id=job.pk,
            counts=counts,
        )


def _cancel_at_commit(job: Job, locked: Source) -> None:
    """Cancelled before its commit: the staged chunks go, the previous index stays."""
    if job.store.in_qdrant:
        _points_delete_on_commit(job.store, _staged_chunk_ids(job))
    StagedChunk.objects.filter(job=job).delete()
    Source.objects.filter(pk=locked.pk).update(
        status=Source.Status.OK if locked.hashes else Source.Status.NEW
    )
    _finish(job, Job.State.CANCELLED)


def _replace_documents(
    job: Job, locked: Source, replaced_paths: set[str], documents: dict[str, dict[str, Any]]
) -> None:
    """Swap the replaced and removed files' documents and chunks for the staged ones."""
    if job.store.in_qdrant:  # the replaced chunks' vectors go once they are gone
        _points_delete_on_commit(
            job.store,
            list(
                Chunk.objects.filter(source=locked, document__path__in=replaced_paths).values_list(
                    "pk", flat=True
                )
            ),
        )
    Document.objects.filter(source=locked, path__in=replaced_paths).delete()
    created = Document.objects.bulk_create(
        [Document(source=locked, path=path, **meta) for path, meta in documents.items()]
    )
    inserted = _insert_staged_chunks(job, locked, created)
    if job.store.semantic and not job.store.in_qdrant and inserted > 0:
        # The graph is built from the first rows (Qdrant stores keep no graph here).
        _ensure_vector_index(job.store)


def _insert_staged_chunks(job: Job, locked: Source, created: list[Document]) -> int:
    """Copy the job's staged chunks of these documents into the index; how many."""
    by_path = json.dumps({document.path: document.pk for document in created})
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO knowledge_chunk (id, document_id, store_id, source_id, ordinal, page,
                                         text, token_count, embedding)
            SELECT coalesce(s.chunk_id,
                            nextval(pg_get_serial_sequence('knowledge_chunk', 'id'))),
                   (%s::jsonb ->> s.path)::bigint, %s, %s, s.ordinal, s.page, s.text,
                   s.token_count, CASE WHEN %s THEN NULL ELSE s.embedding END
            FROM knowledge_stagedchunk s
            WHERE s.job_id = %s AND %s::jsonb ? s.path
            """,
            [by_path, job.store_id, locked.pk, job.store.in_qdrant, job.pk, by_path],
        )
        return int(cursor.rowcount)


def _settle_source(
    locked: Source,
    replaced_paths: set[str],
    documents: dict[str, dict[str, Any]],
    *,
    problem_count: int,
) -> int:
    """The source's file hashes and counts after the commit; its chunk count."""
    hashes = {path: sha for path, sha in locked.hashes.items() if path not in replaced_paths}
    hashes |= {path: meta["sha256"] for path, meta in documents.items()}
    chunk_count = Chunk.objects.filter(source=locked).count()
    Source.objects.filter(pk=locked.pk).update(
        status=Source.Status.OK,
        status_message="",
        hashes=hashes,
        file_count=len(hashes),
        chunk_count=chunk_count,
        problem_count=problem_count,
        last_indexed_at=timezone.now(),
    )
    return chunk_count


def _staged_chunk_ids(job: Job) -> list[int]:
    staged = StagedChunk.objects.filter(job=job).values_list("chunk_id", flat=True)
    return [int(i) for i in staged if i is not None]
