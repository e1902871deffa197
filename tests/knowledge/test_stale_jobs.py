"""A worker killed mid-job: the reaper re-queues the job once, then fails it with a reason (K6).

Issue 10, item 18: before, the job stayed "running" with a stale heartbeat until
the broker's visibility timeout (an hour) and blocked the collection.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.utils import timezone

from knowledge import services
from knowledge.models import Chunk, Job, Source
from knowledge.services import jobs
from tests.knowledge.conftest import barrier


@pytest.fixture
def plain_store(user):
    return services.store_create(owner=user, name="Plain", provider="none")


def _dead_job(store, tmp_path, *, kind=Job.Kind.INDEX, seconds=3600):
    source = Source.objects.create(
        store=store, kind=Source.Kind.FOLDER, path=str(tmp_path), status=Source.Status.INDEXING
    )
    return Job.objects.create(
        store=store,
        source=source,
        kind=kind,
        state=Job.State.RUNNING,
        heartbeat_at=timezone.now() - timedelta(seconds=seconds),
    )


def test_the_beat_schedule_runs_the_reaper_every_few_minutes():
    from config.celery import app

    entries = [
        entry
        for entry in django_settings.CELERY_BEAT_SCHEDULE.values()
        if entry["task"] == "knowledge.reap_stale_jobs"
    ]
    assert len(entries) == 1 and float(entries[0]["schedule"]) <= 300  # type: ignore[arg-type]
    import knowledge.tasks  # noqa: F401 - registers the task with the app

    assert "knowledge.reap_stale_jobs" in app.tasks


@pytest.mark.django_db
def test_a_stale_job_is_requeued_once_then_failed_with_a_reason_the_page_shows(
    client, user, plain_store, allowed_root, tmp_path, django_capture_on_commit_callbacks
):
    job = _dead_job(plain_store, tmp_path)
    with django_capture_on_commit_callbacks() as queued:
        assert services.stale_jobs_reap() == {"requeued": 1, "failed": 0, "started": 0}
    job.refresh_from_db()
    assert job.state == Job.State.QUEUED and job.requeues == 1
    assert queued  # the task was sent again after the commit
    # The second run dies too.
    Job.objects.filter(pk=job.pk).update(
        state=Job.State.RUNNING, heartbeat_at=timezone.now() - timedelta(hours=1)
    )
    assert services.stale_jobs_reap() == {"requeued": 0, "failed": 1, "started": 0}
    job.refresh_from_db()
    assert job.state == Job.State.FAILED and job.finished_at is not None
    assert "stopped responding" in job.error
    job.source.refresh_from_db()
    assert job.source.status == Source.Status.ERROR
    # The collection is free again, and the page says what happened.
    services.source_update_now(source=job.source)
    client.force_login(user)
    Job.objects.filter(state=Job.State.QUEUED).delete()
    assert "stopped responding" in client.get(f"/knowledge/{plain_store.pk}/").content.decode()


@pytest.mark.django_db
def test_a_live_job_is_left_alone(plain_store, tmp_path):
    job = _dead_job(plain_store, tmp_path, seconds=5)
    assert services.stale_jobs_reap() == {"requeued": 0, "failed": 0, "started": 0}
    job.refresh_from_db()
    assert job.state == Job.State.RUNNING and job.requeues == 0


@pytest.mark.django_db
def test_a_requeued_job_whose_message_was_lost_is_failed_too(plain_store, tmp_path):
    job = _dead_job(plain_store, tmp_path, kind=Job.Kind.SCAN)
    services.stale_jobs_reap()
    Job.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    assert services.stale_jobs_reap() == {"requeued": 0, "failed": 1, "started": 0}


@pytest.mark.django_db(transaction=True)
def test_the_real_worker_finishes_a_requeued_index_job(
    celery_worker, store, sample_folder, allowed_root
):
    source, scan_job = services.source_add_folder(store=store, path=str(sample_folder))
    barrier()
    Job.objects.filter(pk=scan_job.pk).update(state=Job.State.SUCCEEDED)
    # The state a SIGKILLed worker leaves: running, a heartbeat from long ago, no task queued.
    job = Job.objects.create(
        store=store,
        source=source,
        kind=Job.Kind.INDEX,
        scan_job=scan_job,
        state=Job.State.RUNNING,
        heartbeat_at=timezone.now() - timedelta(hours=1),
    )
    assert services.stale_jobs_reap() == {"requeued": 1, "failed": 0, "started": 0}
    barrier()
    job.refresh_from_db()
    assert job.state == Job.State.SUCCEEDED, job.error
    assert Chunk.objects.filter(source=source).exists()


@pytest.mark.django_db
def test_a_slow_run_whose_job_was_sent_again_stops_without_touching_it(plain_store, tmp_path):
    job = _dead_job(plain_store, tmp_path)
    slow_run = Job.objects.get(pk=job.pk)  # what the still-living first run holds
    services.stale_jobs_reap()
    with pytest.raises(jobs._Lost):
        jobs._beat(slow_run, progress=50)
    with pytest.raises(jobs._Lost):
        jobs._finish(slow_run, Job.State.SUCCEEDED, progress=100)
    job.refresh_from_db()
    assert job.state == Job.State.QUEUED and job.progress == 0 and job.requeues == 1
