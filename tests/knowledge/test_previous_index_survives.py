"""Whatever goes wrong while a collection is re-indexed, the previous index keeps serving (K6).

Issue 11, item 6: each test here fails if one of these single-line breakages is made —
the old chunks of a changed file deleted when indexing starts instead of at the commit,
the final commit split into several transactions, an embedding error that wipes the
previous index, a fatal scan error that wipes it. The jobs run in this process (no
worker), so a test can hold the embeddings server mid-index or make the commit fail.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connections

from knowledge import services
from knowledge.models import Chunk, Document, Job, Source
from knowledge.retrieval import retrieve
from knowledge.services import indexing, jobs

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def jobs_run_here(monkeypatch):
    """The session's Celery worker, if an earlier test started it, must not take these jobs."""
    monkeypatch.setattr(jobs, "_run_on_commit", lambda job: None)


OLD = "Alpacas are calm animals that live in the Andes."
NEW = "Alpacas hum when they are curious."


def _scan(job: Job) -> Job:
    services.scan_run(job.pk)
    job.refresh_from_db()
    assert job.state == Job.State.REVIEW, job.error
    return job


def _index(scan_job: Job) -> Job:
    index_job = services.scan_confirm(scan_job=scan_job)
    services.index_run(index_job.pk)
    index_job.refresh_from_db()
    return index_job


@pytest.fixture
def indexed(store, sample_folder, allowed_root, fake_openai):
    """A folder indexed once; its notes.txt then changes and a new scan awaits review."""
    source, job = services.source_add_folder(store=store, path=str(sample_folder))
    first = _index(_scan(job))
    assert first.state == Job.State.SUCCEEDED, first.error
    source.refresh_from_db()
    before = (source.chunk_count, source.hashes)
    assert Chunk.objects.filter(source=source, text__contains=OLD).exists()
    (sample_folder / "notes.txt").write_text(NEW + "\n")
    update = _scan(services.source_update_now(source=source))
    assert {r["path"]: r["status"] for r in update.review}["notes.txt"] == "changed"
    return source, update, before


def _serves_the_old_index(store, source: Source, before) -> None:
    source.refresh_from_db()
    assert (source.chunk_count, source.hashes) == before
    assert Chunk.objects.filter(source=source).count() == before[0]
    assert not Chunk.objects.filter(source=source, text__contains=NEW).exists()
    assert OLD in retrieve([store], "alpacas calm Andes", context_window=8192).block


def test_a_changed_files_old_chunks_serve_until_the_commit(store, indexed, fake_openai):
    source, update, before = indexed
    fake_openai.hold_after = len(fake_openai.embedding_inputs)  # the job's first batch waits
    index_job = services.scan_confirm(scan_job=update)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            services.index_run(index_job.pk)
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)
        finally:
            connections.close_all()

    worker = threading.Thread(target=run)
    worker.start()
    try:
        assert fake_openai.reached_hold.wait(timeout=60)
        index_job.refresh_from_db()
        assert index_job.state == Job.State.RUNNING
        # Mid-index: the changed file's old text is still what searches find.
        assert Chunk.objects.filter(source=source, text__contains=OLD).count() == 1
        assert Document.objects.filter(source=source, path="notes.txt").exists()
        assert Chunk.objects.filter(source=source).count() == before[0]
    finally:
        fake_openai.release.set()
        worker.join(timeout=120)
    assert not worker.is_alive() and not errors
    index_job.refresh_from_db()
    assert index_job.state == Job.State.SUCCEEDED, index_job.error
    assert not Chunk.objects.filter(source=source, text__contains=OLD).exists()
    assert Chunk.objects.filter(source=source, text__contains=NEW).count() == 1


def test_an_embedding_error_mid_index_keeps_the_previous_index(store, indexed, fake_openai):
    source, update, before = indexed
    fake_openai.failures = [400]  # not transient: no retry, the job fails
    index_job = _index(update)
    assert index_job.state == Job.State.FAILED and "400" in index_job.error
    _serves_the_old_index(store, source, before)


def test_a_failure_inside_the_final_commit_keeps_the_previous_index(store, indexed, monkeypatch):
    """The commit is one transaction: it fails at its last step and nothing of it stays."""
    source, update, before = indexed

    def broken_event(**_kwargs: object) -> None:
        raise RuntimeError("the outbox is unavailable")

    monkeypatch.setattr(indexing.knowledge_indexed, "send", broken_event)
    index_job = services.scan_confirm(scan_job=update)
    with pytest.raises(RuntimeError, match="outbox"):
        services.index_run(index_job.pk)
    assert Document.objects.filter(source=source, path="notes.txt").count() == 1
    _serves_the_old_index(store, source, before)


def test_a_fatal_scan_error_keeps_the_previous_index(store, indexed, sample_folder, tmp_path):
    source, update, before = indexed
    services.scan_dismiss(scan_job=update)
    # The root becomes a link: the scan refuses the whole folder (a fatal error).
    sample_folder.rename(tmp_path / "docs-moved")
    sample_folder.symlink_to(tmp_path / "docs-moved", target_is_directory=True)
    job = services.source_update_now(source=source)
    services.scan_run(job.pk)
    job.refresh_from_db()
    assert job.state == Job.State.FAILED and "symbolic link" in job.error
    source.refresh_from_db()
    assert source.status == Source.Status.ERROR
    _serves_the_old_index(store, source, before)
    assert Document.objects.filter(source=source).count() == len(source.hashes) == 4
