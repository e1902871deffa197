"""Jobs reach the worker only once their row is committed (knowledge/services/jobs.py).

The services queue the Celery task by its registered name with `delay_on_commit`; what
leaves for the broker is observed with Celery's own `before_task_publish` signal.
"""

from __future__ import annotations

import pytest

from knowledge import services
from knowledge.models import Job


@pytest.fixture
def plain_store(user):
    return services.store_create(owner=user, name="Plain", provider="none")


@pytest.mark.django_db
def test_a_scan_is_sent_to_the_worker_only_after_its_commit(
    plain_store, allowed_root, published, django_capture_on_commit_callbacks
):
    folder = allowed_root / "docs"
    folder.mkdir()
    (folder / "notes.md").write_text("Alpacas hum.")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        _source, job = services.source_add_folder(store=plain_store, path=str(folder))
    assert published == []  # nothing left inside the transaction
    for callback in callbacks:
        callback()
    assert published == [("knowledge.scan_source", (job.pk,))]


@pytest.mark.django_db
def test_a_confirmed_review_sends_an_index_job_after_its_commit(
    plain_store, allowed_root, published, django_capture_on_commit_callbacks
):
    folder = allowed_root / "docs"
    folder.mkdir()
    (folder / "notes.md").write_text("Alpacas hum.")
    with django_capture_on_commit_callbacks(execute=False):
        _source, scan = services.source_add_folder(store=plain_store, path=str(folder))
    services.scan_run(scan.pk)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        index_job = services.scan_confirm(scan_job=Job.objects.get(pk=scan.pk))
    assert index_job.kind == Job.Kind.INDEX
    assert published == []
    for callback in callbacks:
        callback()
    assert published == [("knowledge.index_source", (index_job.pk,))]
