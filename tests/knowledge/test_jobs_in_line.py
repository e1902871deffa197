"""Uploads and confirmed reviews wait in line behind a collection's running job
(knowledge/services/jobs.py), one job running at a time, instead of being refused."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from knowledge import services
from knowledge.errors import JobBusy
from knowledge.models import Job, Source

pytestmark = pytest.mark.django_db


@pytest.fixture
def uploads(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    settings.MEDIA_ROOT = tmp_path / "uploads"
    return tmp_path / "uploads"


@pytest.fixture
def plain_store(user):
    return services.store_create(owner=user, name="Plain", provider="none")


def _upload(store, name: str, text: str) -> Job:
    _source, job = services.source_add_upload(
        store=store, files=[SimpleUploadedFile(name, text.encode())]
    )
    return job


def test_a_second_upload_waits_behind_the_first_scan_and_starts_when_it_ends(
    plain_store, uploads, published, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        first = _upload(plain_store, "a.txt", "Alpacas hum at dawn.")
        second = _upload(plain_store, "b.txt", "Llamas spit at noon.")
    second.refresh_from_db()
    assert second.state == Job.State.WAITING
    assert published == [("knowledge.scan_source", (first.pk,))]
    assert sorted(p.name for p in uploads.rglob("*") if p.is_file()) == ["a.txt", "b.txt"]

    with django_capture_on_commit_callbacks(execute=True):
        services.scan_run(first.pk)
    second.refresh_from_db()
    assert second.state == Job.State.QUEUED
    assert published[-1] == ("knowledge.scan_source", (second.pk,))
    with django_capture_on_commit_callbacks(execute=True):
        services.scan_run(second.pk)
    second.refresh_from_db()
    assert second.state == Job.State.REVIEW


def test_a_review_confirmed_while_another_scan_runs_indexes_after_it(
    plain_store, uploads, published, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        first = _upload(plain_store, "a.txt", "Alpacas hum at dawn.")
        services.scan_run(first.pk)
        second = _upload(plain_store, "b.txt", "Llamas spit at noon.")
    second.refresh_from_db()
    assert second.state == Job.State.QUEUED  # nothing ran: it started at once

    with django_capture_on_commit_callbacks(execute=True):
        index = services.scan_confirm(scan_job=Job.objects.get(pk=first.pk))
    assert index.state == Job.State.WAITING
    with django_capture_on_commit_callbacks(execute=True):
        services.scan_run(second.pk)
    index.refresh_from_db()
    assert index.state == Job.State.QUEUED
    with django_capture_on_commit_callbacks(execute=True):
        services.index_run(index.pk)
    index.refresh_from_db()
    assert index.state == Job.State.SUCCEEDED
    assert Source.objects.get(pk=first.source_id).chunk_count >= 1


def test_the_line_is_bounded_and_a_refused_upload_leaves_no_files(
    plain_store, uploads, settings, django_capture_on_commit_callbacks
):
    settings.KNOWLEDGE_JOBS_WAITING_PER_STORE = 1
    with django_capture_on_commit_callbacks(execute=True):
        _upload(plain_store, "a.txt", "Alpacas hum at dawn.")
        _upload(plain_store, "b.txt", "Llamas spit at noon.")
        with pytest.raises(JobBusy, match="already waiting"):
            _upload(plain_store, "c.txt", "Vicuñas graze at dusk.")
    assert sorted(p.name for p in uploads.rglob("*") if p.is_file()) == ["a.txt", "b.txt"]
    assert Source.objects.filter(store=plain_store).count() == 2


def test_a_cancelled_job_in_line_ends_at_once_and_never_runs(
    plain_store, uploads, published, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        first = _upload(plain_store, "a.txt", "Alpacas hum at dawn.")
        second = _upload(plain_store, "b.txt", "Llamas spit at noon.")
        services.job_cancel(job=second)
    second.refresh_from_db()
    assert second.state == Job.State.CANCELLED
    with django_capture_on_commit_callbacks(execute=True):
        services.scan_run(first.pk)
    second.refresh_from_db()
    assert second.state == Job.State.CANCELLED
    assert ("knowledge.scan_source", (second.pk,)) not in published


def test_the_reaper_starts_a_job_left_in_line_when_nothing_runs(
    plain_store, uploads, published, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        first = _upload(plain_store, "a.txt", "Alpacas hum at dawn.")
    # As if the start that follows a job's end was lost with its worker.
    second = Job.objects.create(
        store=plain_store, source=first.source, kind=Job.Kind.SCAN, state=Job.State.WAITING
    )
    Job.objects.filter(pk=first.pk).update(state=Job.State.CANCELLED)
    with django_capture_on_commit_callbacks(execute=True):
        assert services.stale_jobs_reap() == {"requeued": 0, "failed": 0, "started": 1}
    second.refresh_from_db()
    assert second.state == Job.State.QUEUED
    assert published[-1] == ("knowledge.scan_source", (second.pk,))


def test_a_cancelled_index_in_line_gives_its_review_back_to_confirm_again(
    plain_store, uploads, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        first = _upload(plain_store, "a.txt", "Alpacas hum at dawn.")
        services.scan_run(first.pk)
        second = _upload(plain_store, "b.txt", "Llamas spit at noon.")
        index = services.scan_confirm(scan_job=Job.objects.get(pk=first.pk))
        assert index.state == Job.State.WAITING
        services.job_cancel(job=index)
    first.refresh_from_db()
    assert first.state == Job.State.REVIEW
    with django_capture_on_commit_callbacks(execute=True):
        services.scan_run(second.pk)
        again = services.scan_confirm(scan_job=first)
    assert again.state == Job.State.QUEUED


@pytest.mark.django_db(transaction=True)
def test_parallel_confirms_never_wait_past_the_limit(plain_store, settings):
    settings.KNOWLEDGE_JOBS_WAITING_PER_STORE = 1
    count = 4
    scans = []
    for i in range(count + 1):
        source = Source.objects.create(store=plain_store, kind=Source.Kind.FOLDER, path=f"/d/{i}")
        scans.append(
            Job.objects.create(
                store=plain_store, source=source, kind=Job.Kind.SCAN, state=Job.State.REVIEW
            )
        )
    Job.objects.filter(pk=scans.pop().pk).update(state=Job.State.RUNNING)  # the one running
    start = threading.Barrier(count)

    def confirm(scan: Job) -> str:
        try:
            start.wait(timeout=30)
            return services.scan_confirm(scan_job=scan).state
        except JobBusy:
            return "refused"
        finally:
            connection.close()

    with ThreadPoolExecutor(count) as pool:
        outcomes = sorted(pool.map(confirm, scans))
    assert outcomes == ["refused"] * (count - 1) + [Job.State.WAITING]
    assert Job.objects.filter(store=plain_store, state=Job.State.WAITING).count() == 1
