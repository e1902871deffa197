"""Vector search on real question embeddings: recall@10 and latency, product against plain pgvector.

The LoCoMo turns (5,882 passages) and questions are embedded with the packaged local
MiniLM model, as `knowledge_bench.bench_locomo` embeds them. Noise chunks fill each
collection up to 10k and 100k: each one is a mix of two or three real passage vectors
plus Gaussian noise of the passages' own spread, normalised, so they lie where real text
embeddings lie (near questions, not uniform on the sphere). The collection is split into
ten sources so filtered search (some sources switched off) is measured too.

For each ef_search: recall@10 of the product's HNSW query against exact search, and
p50/p95 of the product's query (`knowledge.retrieval.vector_scored`, as `rank` calls it)
against a plain pgvector query on the same index, interleaved in the same run.

Run: `python -m benchmarks.vector_bench` (writes the `vector` section of
docs/benchmarks.md); `make bench` runs it too.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

if __name__ == "__main__":  # standalone: the same embedded database as `make bench`
    from benchmarks.standalone import setup_django

    setup_django("bench")

from django.conf import settings
from django.db import connection
from django.test import override_settings

from accounts.models import User
from benchmarks.knowledge_bench import _locomo, _turns, percentile
from host.embeddings import FastembedEmbedder
from knowledge import services
from knowledge.models import Document, Source, Store
from knowledge.retrieval import vector_scored
from knowledge.services import stores

SOURCES = 10
K = 10
EF_VALUES = (40, 64, 100, 200, 400)
QUERIES = 600  # questions used per setting (recall and latency)


def _cache() -> Path:
    return Path(settings.DATA_DIR) / "bench-locomo-vectors.npz"


def embedded_locomo(embedder: FastembedEmbedder) -> tuple[np.ndarray, np.ndarray]:
    """(passages, questions) as unit vectors, cached under DATA_DIR after the first run."""
    cache = _cache()
    if cache.exists():
        data = np.load(cache)
        return data["passages"], data["questions"]
    passages: list[str] = []
    questions: list[str] = []
    for conversation in _locomo():
        passages += [text for _, text, _ in _turns(conversation)]
        questions += [
            qa["question"]
            for qa in conversation["qa"]
            if qa.get("category") in (1, 2, 3, 4) and qa.get("evidence")
        ]
    p = np.array(embedder.embed(passages), dtype=np.float32)
    q = np.array(embedder.embed(questions), dtype=np.float32)
    p /= np.linalg.norm(p, axis=1, keepdims=True)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    np.savez(cache, passages=p, questions=q)
    return p, q


def with_noise(passages: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """The passages plus `count - len(passages)` noise vectors shaped like them."""
    extra = count - len(passages)
    if extra <= 0:
        return passages[:count]
    spread = passages.std(axis=0)
    picks = rng.integers(0, len(passages), size=(extra, 3))
    weights = rng.dirichlet([1.0, 1.0, 0.5], size=extra).astype(np.float32)
    mixed = np.einsum("nk,nkd->nd", weights, passages[picks])
    mixed += 0.5 * spread * rng.normal(size=mixed.shape).astype(np.float32)
    mixed /= np.linalg.norm(mixed, axis=1, keepdims=True)
    return np.concatenate([passages, mixed.astype(np.float32)])


def _fill(store: Store, vectors: np.ndarray) -> tuple[list[int], np.ndarray, float]:
    """Load the vectors into SOURCES sources, then build the HNSW index: (source ids,
    chunk ids in vector order, build seconds)."""
    count = len(vectors)
    order = np.random.default_rng(1).permutation(count)  # passages spread over all sources
    owner = np.empty(count, dtype=np.int64)
    source_ids = []
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX IF EXISTS {store.index_name}")
    for s, part in enumerate(np.array_split(order, SOURCES)):
        source = Source.objects.create(
            store=store,
            kind=Source.Kind.FOLDER,
            path=f"/bench/{store.pk}/{s}",
            chunk_count=len(part),
            status=Source.Status.OK,
        )
        document = Document.objects.create(
            source=source, path="noise.txt", sha256="x", format="text", size=0
        )
        source_ids.append(source.pk)
        owner[part] = source.pk
        with (
            connection.cursor() as cursor,
            cursor.cursor.copy(
                "COPY knowledge_chunk (document_id, store_id, source_id, ordinal, text, "
                "token_count, embedding) FROM STDIN"
            ) as copy,
        ):
            for i in part:
                vector = "[" + ",".join(f"{x:.6f}" for x in vectors[i]) + "]"
                copy.write_row((document.pk, store.pk, source.pk, int(i), f"chunk {i}", 1, vector))
    start = time.perf_counter()
    stores._create_vector_index(store)
    build = time.perf_counter() - start
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE knowledge_chunk")
        cursor.execute("SELECT ordinal, id FROM knowledge_chunk WHERE store_id = %s", [store.pk])
        ids = np.empty(count, dtype=np.int64)
        for ordinal, chunk_id in cursor.fetchall():
            ids[ordinal] = chunk_id
    store.source_owner = owner  # type: ignore[attr-defined]
    return source_ids, ids, build


def _literal(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


def _plain(store: Store, query: np.ndarray, ef: int) -> list[int]:
    """The bare pgvector query on the same index: one statement, no filter but the store's."""
    raw = connection.cursor().cursor
    raw.execute(
        f"SELECT id FROM knowledge_chunk WHERE store_id = %s "
        f"ORDER BY embedding::vector({int(store.dimension or 0)}) "
        f"<=> %s::vector({int(store.dimension or 0)}) LIMIT %s",
        [store.pk, _literal(query), K],
    )
    return [row[0] for row in raw.fetchall()]


def _set_session_ef(ef: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"SET hnsw.ef_search = {int(ef)}")


def _exact_top(
    vectors: np.ndarray, ids: np.ndarray, query: np.ndarray, mask: np.ndarray | None
) -> set[int]:
    scores = vectors @ query
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    return {int(ids[j]) for j in np.argpartition(-scores, K)[:K]}


def bench_size(
    count: int, passages: np.ndarray, questions: np.ndarray, user: User
) -> dict[str, Any]:
    rng = np.random.default_rng(count)
    vectors = with_noise(passages, count, rng)
    store = Store.objects.create(
        owner=user,
        name=f"vector-{count}-{uuid.uuid4().hex[:6]}",
        provider="fastembed",
        model_name="bench",
        dimension=vectors.shape[1],
    )
    source_ids, ids, build = _fill(store, vectors)
    owner = store.source_owner  # type: ignore[attr-defined]
    picked = questions[rng.permutation(len(questions))[:QUERIES]]
    filtered_sources = source_ids[: SOURCES * 6 // 10]  # 60% on: still the index path
    filter_mask = np.isin(owner, filtered_sources)
    counts_all = (count, count)
    counts_filtered = (int(filter_mask.sum()), count)
    rows: dict[int, dict[str, float]] = {}
    _set_session_ef(40)
    for query in picked[:20]:  # warm the index pages
        _plain(store, query, 40)
    for ef in EF_VALUES:
        product_ms, plain_ms, recalls, plain_recalls, filtered = [], [], [], [], []
        with override_settings(KNOWLEDGE_HNSW_EF_SEARCH=ef, KNOWLEDGE_EXACT_SEARCH_MAX_CHUNKS=0):
            _set_session_ef(ef)
            for query in picked:
                truth = _exact_top(vectors, ids, query, None)
                as_list = query.tolist()
                start = time.perf_counter()
                found = vector_scored(store, as_list, source_ids, K, chunk_counts=counts_all)
                product_ms.append((time.perf_counter() - start) * 1000)
                start = time.perf_counter()
                plain = _plain(store, query, ef)
                plain_ms.append((time.perf_counter() - start) * 1000)
                recalls.append(len(truth & {i for i, _ in found}) / K)
                plain_recalls.append(len(truth & set(plain)) / K)
            for query in picked[:200]:
                truth = _exact_top(vectors, ids, query, filter_mask)
                found = vector_scored(
                    store, query.tolist(), filtered_sources, K, chunk_counts=counts_filtered
                )
                filtered.append(len(truth & {i for i, _ in found}) / K)
        rows[ef] = {
            "recall": float(np.mean(recalls)),
            "plain_recall": float(np.mean(plain_recalls)),
            "filtered_recall": float(np.mean(filtered)),
            "product_p50": percentile(product_ms, 0.5),
            "product_p95": percentile(product_ms, 0.95),
            "plain_p50": percentile(plain_ms, 0.5),
            "plain_p95": percentile(plain_ms, 0.95),
        }
        print(count, ef, rows[ef], flush=True)
    # The exact scan the product takes below its threshold, on this whole collection.
    exact_ms = []
    with override_settings(KNOWLEDGE_EXACT_SEARCH_MAX_CHUNKS=10**9):
        for query in picked[:100]:
            start = time.perf_counter()
            vector_scored(store, query.tolist(), source_ids, K, chunk_counts=counts_all)
            exact_ms.append((time.perf_counter() - start) * 1000)
    # As `rank` calls it: the default settings, limit 50 (fusion candidates).
    default_ms, default_recall = [], []
    for query in picked:
        truth = _exact_top(vectors, ids, query, None)
        start = time.perf_counter()
        found = vector_scored(store, query.tolist(), source_ids, 50, chunk_counts=counts_all)
        default_ms.append((time.perf_counter() - start) * 1000)
        default_recall.append(len(truth & {i for i, _ in found[:K]}) / K)
    _set_session_ef(40)
    services.store_delete(store=store)
    return {
        "build_s": build,
        "by_ef": rows,
        "exact_p50": percentile(exact_ms, 0.5),
        "exact_p95": percentile(exact_ms, 0.95),
        "default_p50": percentile(default_ms, 0.5),
        "default_p95": percentile(default_ms, 0.95),
        "default_recall": float(np.mean(default_recall)),
    }


def run(write_section: Callable[[str, str], None], machine: str) -> str:
    try:
        embedder = FastembedEmbedder(settings.EMBEDDING_MODEL)
    except Exception as error:  # no local model: nothing real to measure
        return f"vector benchmark skipped: no local model ({error})"
    passages, questions = embedded_locomo(embedder)
    user = User.objects.create_user(f"bench-v-{uuid.uuid4().hex[:8]}")
    sizes = {count: bench_size(count, passages, questions, user) for count in (10_000, 100_000)}
    lines = [
        "## Knowledge: vector search on real embeddings",
        "",
        "Command: `python -m benchmarks.vector_bench` (also part of `make bench`). "
        f"Machine: {machine}, shared with other work. Measured {time.strftime('%Y-%m-%d')}.",
        "",
        f"{len(passages):,} LoCoMo turns and {QUERIES} of its {len(questions):,} questions "
        f"(categories 1-4), embedded with {settings.EMBEDDING_MODEL} (the packaged local "
        "model); each collection is the turns plus noise chunks (mixes of two or three real "
        "turn vectors with Gaussian noise of their own spread) in ten sources. HNSW m "
        f"{settings.KNOWLEDGE_HNSW_M}, ef_construction {settings.KNOWLEDGE_HNSW_EF_CONSTRUCTION}, "
        "built after loading. recall@10 is against exact search on the same vectors. "
        "*Product* is `vector_scored` as `rank` calls it (one round trip: `SET LOCAL "
        "hnsw.ef_search` and the query in one statement string); *plain* is the bare "
        "`ORDER BY embedding <=> q LIMIT 10` on the same index with the same ef_search, "
        "timed alternately with it. *Filtered* is 6 of 10 sources switched on.",
        "",
        "| chunks | ef_search | recall@10 product / plain | filtered recall@10 "
        "| product p50 / p95 | plain p50 / p95 | product p95 ÷ plain p95 |",
        "|---|---|---|---|---|---|---|",
    ]
    for count, result in sizes.items():
        by_ef = result["by_ef"]
        for ef, row in by_ef.items():
            lines.append(
                f"| {count:,} | {ef} | {row['recall']:.3f} / {row['plain_recall']:.3f} "
                f"| {row['filtered_recall']:.3f} "
                f"| {row['product_p50']:.2f} / {row['product_p95']:.2f} ms "
                f"| {row['plain_p50']:.2f} / {row['plain_p95']:.2f} ms "
                f"| {row['product_p95'] / row['plain_p95']:.2f} |"
            )
    lines += [
        "",
        "Whole-collection exact scan (what the product does below "
        "KNOWLEDGE_EXACT_SEARCH_MAX_CHUNKS), and the product at its defaults as `rank` calls "
        f"it (limit 50, ef_search max({settings.KNOWLEDGE_HNSW_EF_SEARCH}, 2 x limit)):",
        "",
        "| chunks | HNSW build | exact scan p50 / p95 | product at defaults p50 / p95 | its recall@10 |",
        "|---|---|---|---|---|",
    ]
    for count, result in sizes.items():
        lines.append(
            f"| {count:,} | {result['build_s']:.1f} s "
            f"| {result['exact_p50']:.2f} / {result['exact_p95']:.2f} ms "
            f"| {result['default_p50']:.2f} / {result['default_p95']:.2f} ms "
            f"| {result['default_recall']:.3f} |"
        )
    body = "\n".join(lines) + "\n"
    write_section("vector", body)
    return body


if __name__ == "__main__":
    import platform

    from django.core.management import call_command

    from benchmarks.results import write_section
    from host.local_model import assemble_minilm

    call_command("migrate", interactive=False, verbosity=0)
    assemble_minilm(Path(os.environ["EMBEDDING_MODEL_PATH"]))
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    print(run(write_section, machine))
