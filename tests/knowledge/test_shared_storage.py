"""Uploads and exports on an S3-compatible server (moto's server mode on a local port):
upload, index, export, read back; removing the source removes its objects."""

from __future__ import annotations

import io
import zipfile

import boto3
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from moto.server import ThreadedMotoServer

from chat.models import Conversation, Message
from host.leftovers import leftovers_clear
from host.models import Leftover
from knowledge import services
from knowledge.models import Document, Job, Source, Store
from knowledge.retrieval import retrieve
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import ensure_user_scope
from tests.conftest import free_port
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
BUCKET = "memory-host-test"


@pytest.fixture
def s3(monkeypatch, settings):
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="test-key",
        aws_secret_access_key="test-secret",
        region_name="us-east-1",
    )
    client.create_bucket(Bucket=BUCKET)
    for name, value in {
        "S3_BUCKET": BUCKET,
        "S3_ENDPOINT_URL": endpoint,
        "S3_ACCESS_KEY_ID": "test-key",
        "S3_SECRET_ACCESS_KEY": "test-secret",
        "S3_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    from config.settings import s3_storage

    # What STORAGE_BACKEND=s3 configures (the settings module builds the same entries).
    settings.STORAGES = {
        **settings.STORAGES,
        "default": s3_storage("uploads"),
        "exports": s3_storage("exports"),
    }
    yield client
    server.stop()


def _keys(client, prefix: str) -> dict[str, bytes]:
    listing = client.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
    return {
        item["Key"]: client.get_object(Bucket=BUCKET, Key=item["Key"])["Body"].read()
        for item in listing
    }


def test_uploads_are_kept_on_s3_and_indexed_from_there(client, user, store, s3):
    client.force_login(user)
    response = client.post(
        f"/knowledge/{store.pk}/uploads/",
        {
            "documents": [
                SimpleUploadedFile("../../etc/evil name.md", b"Ocelots hunt at night.\n"),
                SimpleUploadedFile("notes.txt", b"Okapis are shy forest animals.\n"),
            ]
        },
    )
    assert response.status_code == 302
    source = Source.objects.get(store=store)
    prefix = f"uploads/knowledge/store-{store.pk}/source-{source.pk}/"
    assert _keys(s3, prefix) == {
        f"{prefix}evil name.md": b"Ocelots hunt at night.\n",
        f"{prefix}notes.txt": b"Okapis are shy forest animals.\n",
    }

    scan = Job.objects.get(source=source, kind=Job.Kind.SCAN)
    services.scan_run(scan.pk)  # what the worker's task runs, here in the test process
    scan.refresh_from_db()
    assert scan.state == Job.State.REVIEW, scan.error
    index = services.scan_confirm(scan_job=scan)
    services.index_run(index.pk)
    index.refresh_from_db()
    assert index.state == Job.State.SUCCEEDED, index.error
    assert sorted(Document.objects.values_list("path", flat=True)) == ["evil name.md", "notes.txt"]
    assert "Okapis" in retrieve([store], "okapis", context_window=8192).block
    # The person's storage quota counts the objects on the shared storage.
    assert services.upload_bytes(user.pk) == len(b"Ocelots hunt at night.\n") + len(
        b"Okapis are shy forest animals.\n"
    )

    # One file taken out, then the whole source: each removal is owed in its own
    # transaction and done by the sweep, so a storage that is down loses none of them.
    services.document_remove(document=Document.objects.get(source=source, path="notes.txt"))
    assert Leftover.objects.get().target == {
        "storage": "default",
        "prefix": f"knowledge/store-{store.pk}/source-{source.pk}/notes.txt",
    }
    assert leftovers_clear() == 1
    assert list(_keys(s3, prefix)) == [f"{prefix}evil name.md"]
    services.source_remove(source=Source.objects.get(pk=source.pk))
    assert list(_keys(s3, prefix)) == [f"{prefix}evil name.md"]
    assert leftovers_clear() == 1
    assert _keys(s3, prefix) == {}


def test_memory_and_conversation_exports_are_written_to_s3_and_read_back(client, user, s3):
    file_write(
        user=user,
        scope=ensure_user_scope(user),
        path="home.md",
        content="Lives in Rome.\n",
        base_sha256=None,
    )
    client.force_login(user)
    first = client.get("/files/export.zip")
    second = client.get("/files/export.zip")
    assert first.status_code == second.status_code == 200
    assert second["Content-Disposition"] == 'attachment; filename="memory-export.zip"'
    stored = _keys(s3, f"exports/user-{user.pk}/memory-")
    assert list(stored.values()) == [second.content]  # only the newest export is kept
    archive = zipfile.ZipFile(io.BytesIO(second.content))
    assert archive.read("Memory/home.md") == b"Lives in Rome.\n"

    conversation = Conversation.objects.create(owner=user, title="Trip plans")
    Message.objects.create(conversation=conversation, role="user", content="Book the okapi tour")
    response = client.get(f"/chat/{conversation.pk}/export.md")
    assert response.status_code == 200
    stored = _keys(s3, f"exports/user-{user.pk}/conversation-{conversation.pk}-")
    assert list(stored.values()) == [response.content]
    assert "Book the okapi tour" in response.content.decode()


def test_an_account_deleted_in_the_admin_leaves_no_uploads_or_exports_on_s3(
    client, admin_client, user, store, s3, django_capture_on_commit_callbacks
):
    """The cascade from the account takes the collection's rows; the sweep its objects."""
    client.force_login(user)
    response = client.post(
        f"/knowledge/{store.pk}/uploads/",
        {"documents": [SimpleUploadedFile("notes.txt", b"Okapis are shy forest animals.\n")]},
    )
    assert response.status_code == 302
    assert client.get("/files/export.zip").status_code == 200
    uploads = f"uploads/knowledge/store-{store.pk}/"
    exports = f"exports/user-{user.pk}/"
    assert _keys(s3, uploads) and _keys(s3, exports)
    other = UserFactory()  # another person's objects stay
    s3.put_object(Bucket=BUCKET, Key=f"exports/user-{other.pk}/memory-1", Body=b"theirs")

    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = admin_client.post(f"/admin/accounts/user/{user.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not Store.objects.filter(pk=store.pk).exists()
    assert queued, "the delete queues the sweep after its commit"
    # The delete itself waits on no storage server: the objects are owed, not gone yet.
    assert list(Leftover.objects.order_by("target__storage").values_list("kind", "target")) == [
        ("storage-tree", {"storage": "default", "prefix": f"knowledge/store-{store.pk}"}),
        ("storage-tree", {"storage": "exports", "prefix": f"user-{user.pk}"}),
    ]

    assert leftovers_clear() == 2  # what the worker's sweep runs
    assert _keys(s3, uploads) == {}
    assert _keys(s3, exports) == {}
    assert _keys(s3, f"exports/user-{other.pk}/") == {
        f"exports/user-{other.pk}/memory-1": b"theirs"
    }
    assert not Leftover.objects.exists()
