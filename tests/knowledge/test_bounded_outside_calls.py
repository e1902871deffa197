"""Calls to a collection's outside servers (embeddings, Qdrant) are bounded as a whole,
headers included (host/bounded_http.py)."""

from __future__ import annotations

import pytest

from host.embeddings import EmbeddingUnavailable, OpenAIEmbedder
from knowledge import qdrant
from knowledge.models import Store
from knowledge.qdrant import QdrantUnavailable


def test_an_embeddings_server_trickling_its_headers_is_given_up_on(slow_headers):
    embedder = OpenAIEmbedder(
        base_url=slow_headers.base_url, model_name="e", dimension=3, timeout=0.5, attempts=1
    )
    with pytest.raises(EmbeddingUnavailable, match="did not answer"):
        embedder.embed(["alpacas"])
    assert slow_headers.sent < 50


def test_a_qdrant_service_trickling_its_headers_fails_the_search_at_its_deadline(
    slow_headers, settings
):
    settings.KNOWLEDGE_QDRANT_LOCAL = ""
    settings.KNOWLEDGE_QDRANT_TIMEOUT_SECONDS = 0.5
    store = Store(
        backend=Store.Backend.QDRANT,
        qdrant_url=slow_headers.base_url.removesuffix("/v1"),
        qdrant_collection="c",
    )
    with pytest.raises(QdrantUnavailable, match="did not answer a search"):
        qdrant.vector_scored(store, [0.1, 0.2, 0.3], [1], limit=5)
    assert slow_headers.sent < 50
