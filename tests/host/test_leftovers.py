"""What a delete leaves outside PostgreSQL is removed after the delete commits, by the
worker's sweep, whatever deleted the row."""

from __future__ import annotations

from pathlib import Path

import pytest

from host import filestore
from host.leftovers import SWEEP_KEY, leftovers_clear, storage_tree_forget
from host.models import Leftover
from host.queue import queued_run_started
from host.tasks import ping
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import ensure_user_scope
from tests.factories import UserFactory


def _exports_of(user_id: int) -> Path:
    folder = filestore.local_folder(filestore.exports())
    assert folder is not None
    return folder / filestore.exports_folder(user_id)


@pytest.mark.django_db(transaction=True)
def test_an_account_deleted_takes_its_exports_with_it_through_the_worker(client, celery_worker):
    # An earlier test's sweep may have been queued into a queue the worker fixture purged.
    queued_run_started(SWEEP_KEY)
    user, other = UserFactory(), UserFactory()
    for person in (user, other):
        file_write(
            user=person,
            scope=ensure_user_scope(person),
            path="home.md",
            content="Lives in Rome.\n",
            base_sha256=None,
        )
        client.force_login(person)
        assert client.get("/files/export.zip").status_code == 200
    assert any(_exports_of(user.pk).iterdir())

    user.delete()
    # The worker runs one job at a time in the order queued: the sweep the delete's
    # commit queued has run once this later ping is answered.
    assert ping.delay().get(timeout=60) == "pong"
    assert not _exports_of(user.pk).exists()
    assert any(_exports_of(other.pk).iterdir())
    assert not Leftover.objects.exists()


@pytest.mark.django_db
def test_a_leftover_outside_its_storage_is_refused_and_kept():
    """A stored prefix that climbs out of the storage's folder, or names all of it, is
    never followed."""
    for prefix in ("../not-ours", "/etc", ""):
        storage_tree_forget(filestore.EXPORTS, prefix)
    assert leftovers_clear() == 0
    kept = list(Leftover.objects.values_list("attempts", "last_error"))
    assert len(kept) == 3
    assert all(attempts == 1 and "refusing" in error for attempts, error in kept)


def test_the_beat_schedule_retries_owed_removals_every_five_minutes(settings):
    from config.celery import app

    entries = [
        entry
        for entry in settings.CELERY_BEAT_SCHEDULE.values()
        if entry["task"] == "host.leftovers_clear"
    ]
    assert len(entries) == 1 and float(entries[0]["schedule"]) <= 300
    assert "host.leftovers_clear" in app.tasks


@pytest.mark.django_db
def test_the_admin_lists_removals_still_owed_without_their_keys(admin_client):
    Leftover.objects.create(
        kind="qdrant-collection",
        target={
            "url": "https://q.example",
            "collection": "memory_host_x",
            "api_key_encrypted": "gAAAA-secret",
        },
        attempts=3,
        last_error="QdrantUnavailable: did not delete the collection",
    )
    page = admin_client.get("/admin/host/leftover/").content.decode()
    assert "memory_host_x" in page and "did not delete the collection" in page
    assert "gAAAA-secret" not in page
    row = Leftover.objects.get()
    detail = admin_client.get(f"/admin/host/leftover/{row.pk}/change/").content.decode()
    assert "memory_host_x" in detail and "gAAAA-secret" not in detail
