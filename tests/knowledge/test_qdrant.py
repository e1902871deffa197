"""Collections whose vectors live in Qdrant (K1), against qdrant-client's local mode."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.utils import timezone

from host.leftovers import leftovers_clear
from host.models import Leftover
from knowledge import qdrant, services
from knowledge.errors import KnowledgeRefusal
from knowledge.models import Chunk, Job, StagedChunk, Store
from knowledge.retrieval import rank
from tests.fake_openai import fake_vector

pytestmark = pytest.mark.django_db
URL = "https://qdrant.example.org:6333"


@pytest.fixture(autouse=True)
def local_qdrant(settings):
    settings.KNOWLEDGE_QDRANT_LOCAL = ":memory:"


def _qdrant_store(user, profile, **extra):
    return services.store_create(
        owner=user,
        name=extra.pop("name", "In Qdrant"),
        provider="openai",
        ai_profile=profile,
        backend="qdrant",
        qdrant_url=URL,
        qdrant_api_key="qdrant-key-123",
        **extra,
    )


def _index_folder(store, folder, django_capture_on_commit_callbacks, source=None):
    if source is None:
        source, scan = services.source_add_folder(store=store, path=str(folder))
    else:
        scan = services.source_update_now(source=source)
    services.scan_run(scan.pk)
    scan.refresh_from_db()
    assert scan.state == Job.State.REVIEW, scan.error
    job = services.scan_confirm(scan_job=scan)
    with django_capture_on_commit_callbacks(execute=True):
        services.index_run(job.pk)
    job.refresh_from_db()
    assert job.state == Job.State.SUCCEEDED, job.error
    return source


def _points(store):
    client = qdrant.client(store)
    points, _ = client.scroll(store.qdrant_collection, limit=1000, with_vectors=True)
    return {int(point.id): point for point in points}


def test_round_trip_create_index_search_update_delete(
    user, embedding_profile, allowed_root, fake_openai, django_capture_on_commit_callbacks
):
    folder = allowed_root / "docs"
    folder.mkdir()
    (folder / "alpacas.txt").write_text("Alpacas are calm animals that live in the Andes.")
    (folder / "printer.txt").write_text("The office printer jams on glossy paper.")
    store = _qdrant_store(user, embedding_profile)
    assert qdrant.client(store).collection_exists(store.qdrant_collection)
    source = _index_folder(store, folder, django_capture_on_commit_callbacks)

    chunks = {chunk.document.path: chunk for chunk in Chunk.objects.filter(store=store)}
    assert set(chunks) == {"alpacas.txt", "printer.txt"}
    assert all(chunk.embedding is None for chunk in chunks.values())  # vectors only in Qdrant
    points = _points(store)
    assert set(points) == {chunk.pk for chunk in chunks.values()}
    alpaca = chunks["alpacas.txt"]
    assert points[alpaca.pk].payload == {"source_id": source.pk}
    assert points[alpaca.pk].vector == pytest.approx(fake_vector(alpaca.text), abs=1e-6)

    found = rank(store, "calm animals in the Andes", mode="vector")
    assert found.semantic and found.ids[0] == alpaca.pk
    assert found.similarity[alpaca.pk] > 0.5
    assert rank(store, "glossy paper jams", mode="hybrid").ids[0] == chunks["printer.txt"].pk

    # A changed file: its new chunk is found, the old one's point is gone after the commit.
    (folder / "alpacas.txt").write_text("Alpacas hum softly when they are curious.")
    _index_folder(store, folder, django_capture_on_commit_callbacks, source=source)
    new_alpaca = Chunk.objects.get(store=store, document__path="alpacas.txt")
    assert new_alpaca.pk != alpaca.pk
    assert set(_points(store)) == {new_alpaca.pk, chunks["printer.txt"].pk}
    assert rank(store, "alpacas hum softly", mode="vector").ids[0] == new_alpaca.pk

    services.store_delete(store=store)
    assert not qdrant.client(store).collection_exists(store.qdrant_collection)
    assert not Store.objects.filter(pk=store.pk).exists()


def test_points_of_an_uncommitted_job_are_never_found(user, embedding_profile):
    store = _qdrant_store(user, embedding_profile)
    source = store.sources.create(kind="folder", path="/nowhere")
    job = Job.objects.create(store=store, source=source, kind=Job.Kind.INDEX)
    StagedChunk.objects.create(
        job=job,
        path="a.txt",
        ordinal=0,
        text="staged only",
        token_count=2,
        embedding=fake_vector("staged only"),
    )
    qdrant.stage_points(store, job.pk, source.pk)
    assert len(_points(store)) == 1  # written before the commit ...
    vector = fake_vector("staged only")
    assert qdrant.vector_scored(store, vector, [source.pk], 10) == []  # ... but no row yet


def test_the_api_key_is_stored_encrypted_and_never_returned(user, embedding_profile, client):
    store = _qdrant_store(user, embedding_profile)
    stored = Store.objects.get(pk=store.pk)
    assert stored.qdrant_api_key == "qdrant-key-123"
    assert "qdrant-key-123" not in stored.qdrant_api_key_encrypted
    client.force_login(user)
    body = client.get(f"/api/knowledge/stores/{store.pk}").json()
    assert body["backend"] == "qdrant" and body["qdrant_url"] == URL
    assert "qdrant-key-123" not in str(body)


@pytest.mark.parametrize(
    ("url", "accepted"),
    [
        ("http://qdrant.example.org:6333", False),
        ("http://10.0.0.5:6333", False),
        ("ftp://qdrant.example.org", False),
        ("https://user:pw@qdrant.example.org", False),
        ("http://127.0.0.1:6333", True),
        ("http://localhost:6333/", True),
        ("https://qdrant.example.org:6333", True),
    ],
)
def test_plain_http_is_refused_except_to_this_machine(settings, url, accepted):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    if accepted:
        assert qdrant.check_url(url) == url.rstrip("/")
    else:
        with pytest.raises(KnowledgeRefusal):
            qdrant.check_url(url)


def test_an_admin_can_name_a_plain_http_service_host(settings):
    settings.KNOWLEDGE_QDRANT_PLAIN_HTTP_HOSTS = ["qdrant"]
    assert qdrant.check_url("http://qdrant:6333") == "http://qdrant:6333"


def test_the_api_refuses_plain_http_to_another_host_with_a_400(user, embedding_profile, client):
    client.force_login(user)
    response = client.post(
        "/api/knowledge/stores",
        {
            "name": "Remote",
            "provider": "openai",
            "ai_profile_id": embedding_profile.pk,
            "backend": "qdrant",
            "qdrant_url": "http://qdrant.example.org:6333",
        },
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "https://" in response.json()["detail"]
    assert not Store.objects.filter(name="Remote").exists()


def test_the_form_shows_the_refusal_as_a_form_error(user, embedding_profile, client):
    client.force_login(user)
    response = client.post(
        "/knowledge/new/",
        {
            "name": "Remote",
            "embedding": f"openai:{embedding_profile.pk}",
            "language": "english",
            "role_text": "on",
            "backend": "qdrant",
            "qdrant_url": "http://qdrant.example.org:6333",
        },
    )
    assert response.status_code == 200
    assert "Use https://" in response.content.decode()
    assert not Store.objects.filter(name="Remote").exists()


def test_a_keyword_only_collection_cannot_live_in_qdrant(user):
    with pytest.raises(KnowledgeRefusal):
        services.store_create(
            owner=user, name="kw", provider="none", backend="qdrant", qdrant_url=URL
        )


def test_search_answers_from_keywords_when_qdrant_does_not(
    user, embedding_profile, allowed_root, fake_openai, settings, django_capture_on_commit_callbacks
):
    folder = allowed_root / "docs"
    folder.mkdir()
    (folder / "alpacas.txt").write_text("Alpacas are calm animals that live in the Andes.")
    store = _qdrant_store(user, embedding_profile)
    _index_folder(store, folder, django_capture_on_commit_callbacks)
    settings.KNOWLEDGE_QDRANT_LOCAL = ""  # now the real client, to a port nobody listens on
    settings.KNOWLEDGE_QDRANT_TIMEOUT_SECONDS = 2
    Store.objects.filter(pk=store.pk).update(qdrant_url="http://127.0.0.1:9")
    store.refresh_from_db()
    found = rank(store, "calm alpacas", mode="hybrid")
    assert not found.semantic
    assert found.ids == [Chunk.objects.get(store=store).pk]


def test_an_account_deleted_with_a_collection_in_qdrant_removes_it_retrying_while_qdrant_is_down(
    user, embedding_profile, settings
):
    store = _qdrant_store(user, embedding_profile)
    name = store.qdrant_collection
    running = qdrant.client(store)  # the local-mode service, kept while it is "down"
    assert running.collection_exists(name)
    settings.KNOWLEDGE_QDRANT_LOCAL = ""  # down: the real client, to a port nobody listens on
    settings.KNOWLEDGE_QDRANT_TIMEOUT_SECONDS = 2
    Store.objects.filter(pk=store.pk).update(qdrant_url="http://127.0.0.1:9")

    user.delete()  # the cascade an account's delete runs, whatever deleted it
    assert not Store.objects.filter(pk=store.pk).exists()
    owed = Leftover.objects.get(kind="qdrant-collection")
    assert owed.target["collection"] == name
    assert "qdrant-key-123" not in str(owed.target)  # the key stays encrypted
    leftovers_clear()
    owed.refresh_from_db()
    assert owed.attempts == 1
    assert "did not delete the collection" in owed.last_error
    assert owed.next_try_at > timezone.now()
    leftovers_clear()  # not tried again before it is due
    owed.refresh_from_db()
    assert owed.attempts == 1

    settings.KNOWLEDGE_QDRANT_LOCAL = ":memory:"  # back up
    Leftover.objects.filter(pk=owed.pk).update(next_try_at=timezone.now())
    assert leftovers_clear() == 1
    assert not running.collection_exists(name)
    assert not Leftover.objects.exists()


class _CountingHandler(BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_POST(self) -> None:
        self.hits.append(self.path)
        self.send_response(500)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_the_outbound_rules_are_applied_when_each_qdrant_call_connects(
    user, embedding_profile, settings
):
    """The address passed when the store was made; what it leads to now is refused."""
    store = _qdrant_store(user, embedding_profile)
    source = store.sources.create(kind="folder", path="/nowhere")
    handler = type("Handler", (_CountingHandler,), {"hits": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        settings.KNOWLEDGE_QDRANT_LOCAL = ""
        settings.KNOWLEDGE_QDRANT_TIMEOUT_SECONDS = 2
        Store.objects.filter(pk=store.pk).update(
            qdrant_url=f"http://localhost:{server.server_address[1]}"
        )
        store.refresh_from_db()
        settings.OUTBOUND_ALLOW_LOOPBACK = False
        with pytest.raises(qdrant.QdrantUnavailable, match="loopback"):
            qdrant.vector_scored(store, fake_vector("x"), [source.pk], 5)
        assert handler.hits == []
        settings.OUTBOUND_ALLOW_LOOPBACK = True  # the same call, allowed, reaches it
        with pytest.raises(qdrant.QdrantUnavailable, match="did not answer a search"):
            qdrant.vector_scored(store, fake_vector("x"), [source.pk], 5)
        assert len(handler.hits) == 1
    finally:
        server.shutdown()
        server.server_close()
