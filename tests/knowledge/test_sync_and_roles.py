"""Watch mode, uploads, autonomous opt-in and rebuilding after a model change."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from knowledge import services
from knowledge.errors import IndexMismatch
from knowledge.models import Chunk, Document, Job, Source
from knowledge.retrieval import retrieve
from tests.knowledge.conftest import barrier

pytestmark = pytest.mark.django_db(transaction=True)


def _indexed(store, folder, **options):
    source, job = services.source_add_folder(store=store, path=str(folder), **options)
    barrier()
    services.scan_confirm(scan_job=Job.objects.get(pk=job.pk))
    barrier()
    source.refresh_from_db()
    return source


def test_watched_sources_pick_up_changes_without_a_review(
    celery_worker, store, sample_folder, allowed_root
):
    source = _indexed(store, sample_folder, sync_mode=Source.SyncMode.WATCH)
    (sample_folder / "new.md").write_text("Capybaras enjoy warm baths.\n")
    assert services.watch_sources() == 1
    barrier()
    barrier()  # the scan queued the index job; wait for that one too
    assert Document.objects.filter(source=source, path="new.md").exists()
    assert "Capybaras" in retrieve([store], "capybaras baths", context_window=8192).block


def test_a_watched_source_without_changes_indexes_nothing(
    celery_worker, store, sample_folder, allowed_root
):
    _indexed(store, sample_folder, sync_mode=Source.SyncMode.WATCH)
    jobs = Job.objects.count()
    services.watch_sources()
    barrier()
    assert Job.objects.count() == jobs + 1  # the scan only
    assert Job.objects.filter(kind=Job.Kind.INDEX).count() == 1


def test_uploaded_files_are_indexed_from_the_data_folder(
    client, user, store, celery_worker, settings
):
    client.force_login(user)
    response = client.post(
        f"/knowledge/{store.pk}/uploads/",
        {
            "documents": [
                SimpleUploadedFile("../../etc/evil name.md", b"Ocelots hunt at night.\n"),
                SimpleUploadedFile("notes.txt", b"Okapis are shy.\n"),
            ]
        },
    )
    assert response.status_code == 302
    source = Source.objects.get(store=store)
    assert source.path.startswith(str(settings.DATA_DIR))
    barrier()
    services.scan_confirm(scan_job=Job.objects.get(source=source))
    barrier()
    assert sorted(Document.objects.values_list("path", flat=True)) == ["evil name.md", "notes.txt"]


def test_autonomous_runs_only_search_collections_that_opted_in(
    celery_worker, store, sample_folder, allowed_root
):
    _indexed(store, sample_folder)
    assert retrieve([store], "alpacas", context_window=8192, autonomous=True).block == ""
    store.autonomous_opt_in = True
    store.save()
    assert "Alpacas" in retrieve([store], "alpacas", context_window=8192, autonomous=True).block


def test_a_changed_model_is_refused_until_the_collection_is_rebuilt(
    client, user, celery_worker, store, embedding_profile, sample_folder, allowed_root
):
    source = _indexed(store, sample_folder)
    embedding_profile.model = "another-embed"
    embedding_profile.save()
    with pytest.raises(IndexMismatch, match="Rebuild"):
        services.store_embedder(store)
    client.force_login(user)
    page = client.get(f"/knowledge/{store.pk}/").content.decode()
    assert "Rebuild the index" in page
    client.post(f"/knowledge/{store.pk}/rebuild/")
    store.refresh_from_db()
    assert store.model_name == "another-embed"
    assert Chunk.objects.filter(store=store).count() == 0
    source.refresh_from_db()
    assert source.status == Source.Status.NEW and source.hashes == {}
    update = services.source_update_now(source=source)
    barrier()
    services.scan_confirm(scan_job=Job.objects.get(pk=update.pk))
    barrier()
    assert "Alpacas" in retrieve([store], "alpacas", context_window=8192).block


@pytest.mark.django_db(transaction=False)
def test_a_scan_can_be_cancelled_before_the_review(store, allowed_root):
    folder = allowed_root / "many"
    folder.mkdir()
    for i in range(120):
        (folder / f"note{i}.md").write_text(f"note {i}\n")
    # Inside the test transaction nothing is handed to a worker; the scan runs here.
    source, job = services.source_add_folder(store=store, path=str(folder))
    services.job_cancel(job=job)
    services.scan_run(job.pk)
    job.refresh_from_db()
    assert job.state == Job.State.CANCELLED and job.review == []
    assert Document.objects.filter(source=source).count() == 0
