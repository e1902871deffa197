"""Retrieval quality (B3): keyword (BM25 in PostgreSQL), vector, hybrid, and a BM25 reference.

Two sets: LoCoMo (../shared/data, one collection per conversation, one chunk per turn)
chooses the fusion method and weights; the Python language reference topics that
CPython ships (benchmarks/pydoc_questions.py) checks them. The reference BM25 is
`bm25s` over the same texts in the same run, with and without an English stemmer.
"""

from __future__ import annotations

import math
import os
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import bm25s
import numpy as np
from django.conf import settings
from django.db import connection
from django.test import override_settings

from accounts.models import User
from benchmarks.knowledge_bench import (
    DIM,
    _fill_synthetic,
    _locomo,
    _query,
    _turns,
    keyword_query,
    percentile,
    synthetic_vectors,
)
from benchmarks.pydoc_questions import QUESTIONS
from host.core import fusion
from host.embeddings import FastembedEmbedder
from knowledge import services
from knowledge.core.chunking import chunk_pages
from knowledge.core.extract import Page
from knowledge.models import Chunk, Document, Source, Store
from knowledge.retrieval import above_floor, keyword_scored, rank, vector_scored

K = 10
CANDIDATES = 50
KEYWORD_WEIGHTS = [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]
METHODS = ["rrf", "score"]


@dataclass
class Collection:
    name: str
    texts: list[str]
    labels: list[str]  # what a chunk counts as when judged (a turn id, a topic)
    cases: list[tuple[str, dict[str, int]]]  # question, graded relevant labels


@dataclass
class Lists:
    keyword: list[list[tuple[int, float]]] = field(default_factory=list)
    vector: list[list[tuple[int, float]]] = field(default_factory=list)
    reference: dict[str, list[list[int]]] = field(default_factory=dict)  # chunk positions
    label_of: dict[int, str] = field(default_factory=dict)
    keyword_ms: list[float] = field(default_factory=list)


def locomo_collections() -> list[Collection]:
    collections = []
    for number, conversation in enumerate(_locomo()):
        turns = _turns(conversation)
        cases = [
            (qa["question"], dict.fromkeys(qa["evidence"], 1))
            for qa in conversation["qa"]
            if qa.get("category") in (1, 2, 3, 4) and qa.get("evidence")
        ]
        collections.append(
            Collection(
                f"locomo-{number}",
                [text for _, text, _ in turns],
                [dia for dia, _, _ in turns],
                cases,
            )
        )
    return collections


def pydoc_collection() -> Collection:
    from pydoc_data.topics import topics

    texts, labels = [], []
    for topic, text in sorted(topics.items()):
        for chunk in chunk_pages(
            [Page(None, text)],
            chunk_tokens=settings.KNOWLEDGE_CHUNK_TOKENS,
            overlap_tokens=settings.KNOWLEDGE_CHUNK_OVERLAP_TOKENS,
        ):
            texts.append(chunk.text)
            labels.append(topic)
    return Collection("pydoc", texts, labels, QUESTIONS)


def ndcg(found: list[str], relevant: dict[str, int]) -> float:
    """nDCG@10 over distinct labels (a topic's second chunk is not a second hit)."""
    seen: list[str] = []
    for label in found:
        if label not in seen:
            seen.append(label)
        if len(seen) == K:
            break
    dcg = sum((2 ** relevant.get(label, 0) - 1) / math.log2(i + 2) for i, label in enumerate(seen))
    ideal = sorted(relevant.values(), reverse=True)[:K]
    best = sum((2**grade - 1) / math.log2(i + 2) for i, grade in enumerate(ideal))
    return dcg / best if best else 0.0


def recall(found: list[str], relevant: dict[str, int]) -> float:
    return len(set(found[:K]) & set(relevant)) / len(relevant)


def _user() -> User:
    return User.objects.create_user(f"bench-r-{uuid.uuid4().hex[:8]}")


def _tokenize(texts: list[str], stemmer: object | None) -> object:
    return bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)


def reference_bm25(collection: Collection) -> dict[str, list[list[int]]]:
    import Stemmer

    out = {}
    for name, stemmer in (("bm25s", None), ("bm25s + stemmer", Stemmer.Stemmer("english"))):
        retriever = bm25s.BM25(k1=settings.KNOWLEDGE_BM25_K1, b=settings.KNOWLEDGE_BM25_B)
        retriever.index(_tokenize(collection.texts, stemmer), show_progress=False)
        questions = [question for question, _ in collection.cases]
        results, scores = retriever.retrieve(
            _tokenize(questions, stemmer),
            k=min(CANDIDATES, len(collection.texts)),
            show_progress=False,
        )
        out[name] = [
            [int(doc) for doc, score in zip(row, row_scores, strict=True) if score > 0]
            for row, row_scores in zip(results, scores, strict=True)
        ]
    return out


def run_collection(
    collection: Collection, embedder: FastembedEmbedder | None, user: User
) -> tuple[Store, Lists]:
    provider = "fastembed" if embedder else "none"
    store = services.store_create(owner=user, name=collection.name, provider=provider)
    source = Source.objects.create(
        store=store, kind=Source.Kind.FOLDER, path=f"/bench/{collection.name}", status="ok"
    )
    document = Document.objects.create(
        source=source, path=collection.name, sha256="x", format="text", size=0
    )
    vectors = embedder.embed(collection.texts) if embedder else [None] * len(collection.texts)
    chunks = Chunk.objects.bulk_create(
        Chunk(
            document=document,
            store=store,
            source=source,
            ordinal=i,
            text=text,
            token_count=1,
            embedding=vector,
        )
        for i, (text, vector) in enumerate(zip(collection.texts, vectors, strict=True))
    )
    Source.objects.filter(pk=source.pk).update(chunk_count=len(chunks))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE knowledge_chunk")
    lists = Lists(label_of={chunk.pk: collection.labels[i] for i, chunk in enumerate(chunks)})
    ids = [chunk.pk for chunk in chunks]
    questions = [question for question, _ in collection.cases]
    query_vectors = embedder.embed(questions) if embedder else []
    for n, question in enumerate(questions):
        start = time.perf_counter()
        lists.keyword.append(keyword_scored(store, question, [source.pk], CANDIDATES))
        lists.keyword_ms.append((time.perf_counter() - start) * 1000)
        if embedder:
            lists.vector.append(
                above_floor(vector_scored(store, query_vectors[n], [source.pk], CANDIDATES))
            )
    lists.reference = {
        name: [[ids[i] for i in row] for row in rows]
        for name, rows in reference_bm25(collection).items()
    }
    return store, lists


def fused(lists: Lists, method: str, keyword_weight: float) -> list[list[int]]:
    return [
        fusion.fuse_weighted(
            [(vector, 1.0 - keyword_weight), (keyword, keyword_weight)],
            method=method,
            k=settings.KNOWLEDGE_RRF_K,
        )
        for keyword, vector in zip(lists.keyword, lists.vector, strict=True)
    ]


def evaluate(
    collections: list[Collection], embedder: FastembedEmbedder | None
) -> tuple[dict[str, tuple[float, float]], dict[tuple[str, float], float], list[float]]:
    """Mean nDCG@10 / recall@10 per retriever over every question of the collections."""
    user = _user()
    per_question: dict[str, list[tuple[float, float]]] = {}
    grid: dict[tuple[str, float], list[float]] = {}
    latencies: list[float] = []
    for collection in collections:
        store, lists = run_collection(collection, embedder, user)
        latencies += lists.keyword_ms
        runs: dict[str, list[list[int]]] = {
            "keyword (BM25 in PostgreSQL)": [[i for i, _ in row] for row in lists.keyword],
            **{f"reference: {name}": rows for name, rows in lists.reference.items()},
        }
        if embedder:
            runs["vector"] = [[i for i, _ in row] for row in lists.vector]
            runs["hybrid, equal-weight RRF (before)"] = fused(lists, "rrf", 0.5)
            weights = (
                settings.KNOWLEDGE_FUSION_KEYWORD_WEIGHT,
                settings.KNOWLEDGE_FUSION_VECTOR_WEIGHT,
            )
            share = weights[0] / sum(weights)
            runs["hybrid (settings)"] = fused(lists, settings.KNOWLEDGE_FUSION, share)
            # The product's own path for the first questions: the same order as above.
            for n, (question, _) in enumerate(collection.cases[:5]):
                if rank(store, question).ids != runs["hybrid (settings)"][n][:CANDIDATES]:
                    raise RuntimeError(f"rank() and the benchmark's fusion differ: {question!r}")
            for method in METHODS:
                for weight in KEYWORD_WEIGHTS:
                    for ranking, case in zip(
                        fused(lists, method, weight), collection.cases, strict=True
                    ):
                        found = [lists.label_of[i] for i in ranking]
                        grid.setdefault((method, weight), []).append(ndcg(found, case[1]))
        for name, rankings in runs.items():
            for ranking, (_, relevant) in zip(rankings, collection.cases, strict=True):
                found = [lists.label_of[i] for i in ranking]
                per_question.setdefault(name, []).append(
                    (ndcg(found, relevant), recall(found, relevant))
                )
        services.store_delete(store=store)
    table = {
        name: (float(np.mean([a for a, _ in rows])), float(np.mean([b for _, b in rows])))
        for name, rows in per_question.items()
    }
    return table, {key: float(np.mean(values)) for key, values in grid.items()}, latencies


def keyword_latency_at_scale(collections: list[Collection], count: int) -> dict[str, float]:
    """BM25 query time on one large collection of LoCoMo-like text (turns joined at random).

    Speaker names are in nearly every chunk. Each question also runs with no candidate
    budget (every chunk holding a query term scored): `exact` is the share of questions
    whose top 10 are the same in the same order.
    """
    rng = random.Random(count)
    turns = [text for collection in collections for text in collection.texts]
    questions = [q for collection in collections for q, _ in collection.cases]
    store = services.store_create(owner=_user(), name=f"scale-{count}", provider="none")
    source = Source.objects.create(
        store=store, kind=Source.Kind.FOLDER, path=f"/bench/scale-{count}", chunk_count=count
    )
    document = Document.objects.create(
        source=source, path="scale", sha256="x", format="text", size=0
    )
    start = time.perf_counter()
    with connection.cursor() as cursor:
        with cursor.cursor.copy(
            "COPY knowledge_chunk (document_id, store_id, source_id, ordinal, text, token_count) "
            "FROM STDIN"
        ) as copy:
            for i in range(count):
                text = " ".join(rng.choice(turns) for _ in range(8))
                copy.write_row((document.pk, store.pk, source.pk, i, text, 1))
        cursor.execute("ANALYZE knowledge_chunk")
    load = time.perf_counter() - start
    samples, unbounded, same = [], [], 0
    for question in rng.sample(questions, 200):
        start = time.perf_counter()
        found = keyword_scored(store, question, [source.pk], CANDIDATES)
        samples.append((time.perf_counter() - start) * 1000)
        with override_settings(KNOWLEDGE_BM25_MAX_CANDIDATES=10**12):
            start = time.perf_counter()
            every = keyword_scored(store, question, [source.pk], CANDIDATES)
            unbounded.append((time.perf_counter() - start) * 1000)
        same += [i for i, _ in found[:K]] == [i for i, _ in every[:K]]
    services.store_delete(store=store)
    return {
        "load_s": load,
        "p50": percentile(samples, 0.5),
        "p95": percentile(samples, 0.95),
        "unbounded_p50": percentile(unbounded, 0.5),
        "unbounded_p95": percentile(unbounded, 0.95),
        "exact": same / len(samples),
    }


def hybrid_latency_at_scale(count: int) -> dict[str, float]:
    """Keyword, vector and fused query time on the knowledge bench's synthetic store.

    Clustered 384-dimension vectors with the store's HNSW index; every chunk and every
    keyword query holds one common word. Query embedding excluded.
    """
    rng = np.random.default_rng(count)
    store = Store.objects.create(
        owner=_user(),
        name=f"hybrid-{count}",
        provider="fastembed",
        model_name="synthetic",
        dimension=DIM,
    )
    vectors = synthetic_vectors(count, "clustered", rng)
    _fill_synthetic(store, vectors, rng)
    source_ids = list(store.sources.values_list("pk", flat=True))
    weights = (settings.KNOWLEDGE_FUSION_KEYWORD_WEIGHT, settings.KNOWLEDGE_FUSION_VECTOR_WEIGHT)
    keyword_ms, vector_ms, hybrid_ms = [], [], []
    for _ in range(200):
        query = _query(vectors, "clustered", rng).tolist()
        words = keyword_query(rng)
        start = time.perf_counter()
        scored = above_floor(vector_scored(store, query, source_ids, CANDIDATES))
        middle = time.perf_counter()
        keyword = keyword_scored(store, words, source_ids, CANDIDATES)
        end = time.perf_counter()
        fusion.fuse_weighted(
            [(keyword, weights[0]), (scored, weights[1])],
            method=settings.KNOWLEDGE_FUSION,
            k=settings.KNOWLEDGE_RRF_K,
        )
        vector_ms.append((middle - start) * 1000)
        keyword_ms.append((end - middle) * 1000)
        hybrid_ms.append((time.perf_counter() - start) * 1000)
    services.store_delete(store=store)
    return {
        f"{name}_{q}": percentile(samples, level)
        for name, samples in (("keyword", keyword_ms), ("vector", vector_ms), ("hybrid", hybrid_ms))
        for q, level in (("p50", 0.5), ("p95", 0.95))
    }


def run(write_section: Callable[[str, str], None], machine: str) -> str:
    embedder: FastembedEmbedder | None
    try:
        embedder = FastembedEmbedder(settings.EMBEDDING_MODEL)
    except Exception:  # no local model: the keyword rows still run
        embedder = None
    locomo = locomo_collections()
    pydoc = pydoc_collection()
    locomo_table, locomo_grid, locomo_ms = evaluate(locomo, embedder)
    pydoc_table, pydoc_grid, pydoc_ms = evaluate([pydoc], embedder)
    scales = {count: keyword_latency_at_scale(locomo, count) for count in (50_000, 100_000)}
    hybrid = hybrid_latency_at_scale(100_000)
    lines = [
        "## Retrieval quality: BM25 keyword ranking and weighted fusion (B3)",
        "",
        "Command: `python -m benchmarks.run retrieval` (also part of `make bench`). "
        f"Machine: {machine}. Measured {time.strftime('%Y-%m-%d')}, load average "
        f"{os.getloadavg()[2]:.1f} over the last 15 minutes of the run (a shared machine: "
        "the latencies are higher than on an idle one). Embeddings: "
        + (f"{settings.EMBEDDING_MODEL} (the packaged local model)" if embedder else "none")
        + f". BM25 k1 {settings.KNOWLEDGE_BM25_K1}, b {settings.KNOWLEDGE_BM25_B} for both the "
        "product and the reference.",
        "",
        "*Keyword* is the product's ranking: PostgreSQL full-text (english configuration, "
        "OR query through the GIN index) scored by BM25 with the collection's term statistics. "
        "*Reference* is `bm25s` over the same chunk texts in the same run (its English stop "
        "words; with and without PyStemmer's English stemmer). *Vector* is the store's "
        "pgvector search with the relevance floor. Hybrid fuses the two top-50 lists.",
        "",
        f"Sets: **LoCoMo** ({len(locomo_table) and sum(len(c.cases) for c in locomo)} "
        "questions of categories 1-4, one collection per conversation, one chunk per turn, "
        "judged by the evidence turns) and **Python reference**: the 79 language-reference "
        f"topics that CPython ships in `pydoc_data` ({len(pydoc.texts)} chunks of about 800 "
        f"tokens) with {len(pydoc.cases)} questions written by hand for this benchmark "
        "(benchmarks/pydoc_questions.py; graded: 2 the topic about it, 1 a topic that also "
        "answers; judged per topic).",
        "",
    ]
    for title, table in (("LoCoMo", locomo_table), ("Python reference", pydoc_table)):
        lines += [f"**{title}**", "", "| retriever | nDCG@10 | recall@10 |", "|---|---|---|"]
        lines += [f"| {name} | {a:.3f} | {b:.3f} |" for name, (a, b) in table.items()]
        lines.append("")
    if locomo_grid:
        best = max(locomo_grid, key=lambda key: locomo_grid[key])
        lines += [
            "Fusion chosen on LoCoMo, checked on the Python reference (nDCG@10 per method and "
            "keyword weight; the vector weight is 1 minus it):",
            "",
            "| method | " + " | ".join(f"{w:.1f}" for w in KEYWORD_WEIGHTS) + " |",
            "|---|" + "---|" * len(KEYWORD_WEIGHTS),
        ]
        for grid_name, grid in (("LoCoMo", locomo_grid), ("Python ref.", pydoc_grid)):
            for method in METHODS:
                lines.append(
                    f"| {method} ({grid_name}) | "
                    + " | ".join(f"{grid[(method, w)]:.3f}" for w in KEYWORD_WEIGHTS)
                    + " |"
                )
        lines += [
            "",
            f"Best on LoCoMo: {best[0]} with keyword weight {best[1]:.1f}. Settings in force "
            f"for this run: KNOWLEDGE_FUSION={settings.KNOWLEDGE_FUSION}, keyword weight "
            f"{settings.KNOWLEDGE_FUSION_KEYWORD_WEIGHT}, vector weight "
            f"{settings.KNOWLEDGE_FUSION_VECTOR_WEIGHT} (the *hybrid (settings)* rows).",
            "",
        ]
    all_ms = locomo_ms + pydoc_ms
    lines += [
        f"Keyword query time (BM25, in process, candidates scored in SQL): p50 "
        f"{percentile(all_ms, 0.5):.1f} ms / p95 {percentile(all_ms, 0.95):.1f} ms over the "
        "questions above.",
        "",
        "**At scale.** One collection of LoCoMo text (8 random turns per chunk, loaded by COPY "
        "with its statistics), 200 LoCoMo questions. Speaker names are in nearly every chunk, "
        "so an OR query matches most of the collection. Keyword search scores at most "
        f"KNOWLEDGE_BM25_MAX_CANDIDATES={settings.KNOWLEDGE_BM25_MAX_CANDIDATES} chunks, those "
        "holding the question's rarest words (knowledge/core/bm25.py); *every match scored* "
        "is the same query with no budget, and *same top 10* the share of questions whose "
        "first ten hits are identical, in order, both ways:",
        "",
        "| chunks | load | keyword p50 / p95 | every match scored p50 / p95 | same top 10 |",
        "|---|---|---|---|---|",
    ]
    for count, row in scales.items():
        lines.append(
            f"| {count:,} | {row['load_s']:.0f} s | {row['p50']:.1f} / {row['p95']:.1f} ms "
            f"| {row['unbounded_p50']:.1f} / {row['unbounded_p95']:.1f} ms "
            f"| {row['exact']:.0%} |"
        )
    lines += [
        "",
        "Hybrid at 100,000 chunks: the knowledge bench's synthetic store (clustered "
        "384-dimension vectors with the HNSW index, 30-word texts that all hold one common "
        "word, queries of three random words plus that word), 200 queries, query embedding "
        "excluded: keyword "
        f"{hybrid['keyword_p50']:.1f} / {hybrid['keyword_p95']:.1f} ms, vector "
        f"{hybrid['vector_p50']:.1f} / {hybrid['vector_p95']:.1f} ms, both fused "
        f"{hybrid['hybrid_p50']:.1f} / {hybrid['hybrid_p95']:.1f} ms (p50 / p95).",
    ]
    body = "\n".join(lines) + "\n"
    write_section("retrieval", body)
    return body
