"""Embeddings calls are bounded as a whole, headers included (memory_addon/host/bounded_http.py)."""

from __future__ import annotations

import pytest

from knowledge.embeddings import EmbeddingUnavailable, OpenAIEmbedder
from tests.hostile_server import HostileServer


@pytest.fixture
def slow_headers():
    hostile = HostileServer("slow_headers").start()
    yield hostile
    hostile.stop()


def test_an_embeddings_server_trickling_its_headers_is_given_up_on(slow_headers):
    embedder = OpenAIEmbedder(
        base_url=slow_headers.base_url, model_name="e", dimension=3, timeout=0.5, attempts=1
    )
    with pytest.raises(EmbeddingUnavailable, match="did not answer"):
        embedder.embed(["alpacas"])
    assert slow_headers.sent < 50
