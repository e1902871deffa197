"""Filtered vector search returns k rows with recall@10 >= 0.95 against exact search."""

from __future__ import annotations

import numpy as np
import pytest

from knowledge.models import Chunk, Document, Source
from knowledge.retrieval import vector_ranking
from knowledge.services import store_create

pytestmark = pytest.mark.django_db
DIM = 64


def _fill(store, sources: int, per_source: int, rng) -> dict[int, np.ndarray]:
    vectors: dict[int, np.ndarray] = {}
    for s in range(sources):
        source = Source.objects.create(
            store=store,
            kind=Source.Kind.FOLDER,
            path=f"/data/{store.pk}/{s}",
            chunk_count=per_source,
        )
        document = Document.objects.create(
            source=source, path="d.txt", sha256="x", format="text", size=1
        )
        batch = rng.normal(size=(per_source, DIM)).astype(np.float32)
        batch /= np.linalg.norm(batch, axis=1, keepdims=True)
        rows = Chunk.objects.bulk_create(
            Chunk(
                document=document,
                store=store,
                source=source,
                ordinal=i,
                text=f"c{i}",
                token_count=1,
                embedding=batch[i].tolist(),
            )
            for i in range(per_source)
        )
        vectors |= {row.pk: batch[i] for i, row in enumerate(rows)}
    return vectors


def _exact(
    vectors: dict[int, np.ndarray], query: np.ndarray, allowed: set[int], k: int = 10
) -> list[int]:
    ids = [i for i in vectors if i in allowed]
    scores = np.array([vectors[i] @ query for i in ids])
    return [ids[j] for j in np.argsort(-scores)[:k]]


@pytest.fixture
def stores(user, embedding_profile, settings):
    settings.KNOWLEDGE_EXACT_SEARCH_MAX_CHUNKS = 500  # so the large store uses its HNSW index
    rng = np.random.default_rng(7)
    big = store_create(owner=user, name="big", provider="openai", ai_profile=embedding_profile)
    other = store_create(owner=user, name="other", provider="openai", ai_profile=embedding_profile)
    small = store_create(owner=user, name="small", provider="openai", ai_profile=embedding_profile)
    data = {
        "big": (big, _fill(big, 10, 400, rng)),
        "other": (other, _fill(other, 4, 500, rng)),
        "small": (small, _fill(small, 1, 40, rng)),
    }
    return data, rng


def _recall(store, vectors, source_ids, rng, queries=25):
    allowed = set(Chunk.objects.filter(source_id__in=source_ids).values_list("pk", flat=True))
    hits = total = 0
    for _ in range(queries):
        query = rng.normal(size=DIM).astype(np.float32)
        query /= np.linalg.norm(query)
        found = vector_ranking(store, query.tolist(), source_ids, limit=10)
        assert len(found) == 10
        assert set(found) <= allowed
        truth = _exact(vectors, query, allowed)
        hits += len(set(found) & set(truth))
        total += 10
    return hits / total


def test_hnsw_search_of_a_large_store_has_high_recall(stores):
    data, rng = stores
    big, vectors = data["big"]
    sources = list(big.sources.values_list("pk", flat=True))
    assert _recall(big, vectors, sources, rng) >= 0.95


def test_a_small_store_among_large_ones_gets_full_results(stores):
    data, rng = stores
    small, vectors = data["small"]
    assert _recall(small, vectors, list(small.sources.values_list("pk", flat=True)), rng) >= 0.95


def test_a_store_with_most_sources_disabled_gets_full_results(stores):
    data, rng = stores
    big, vectors = data["big"]
    enabled = list(big.sources.values_list("pk", flat=True)[:1])
    assert _recall(big, vectors, enabled, rng) >= 0.95


def test_a_store_with_some_sources_disabled_gets_full_results(stores):
    data, rng = stores
    big, vectors = data["big"]
    enabled = list(big.sources.values_list("pk", flat=True)[:6])
    assert _recall(big, vectors, enabled, rng) >= 0.95
