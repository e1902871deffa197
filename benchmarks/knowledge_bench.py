"""Knowledge benchmarks: indexing throughput, retrieval latency and recall, LoCoMo quality."""

from __future__ import annotations

import io
import json
import tempfile
import time
import uuid
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.test import override_settings

from accounts.models import User
from host.embeddings import FastembedEmbedder, windows
from knowledge import services
from knowledge.core.chunking import chunk_pages
from knowledge.core.extract import Page
from knowledge.models import Chunk, Document, Job, Source, Store
from knowledge.retrieval import keyword_ranking, rank, vector_ranking

LOCOMO = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "locomo10.zip"
DIM = 384
VOCABULARY = [f"w{i}" for i in range(5000)]
# In every synthetic chunk and every keyword query: the worst case for an OR query,
# where each chunk is a match (as a speaker's name is in a chat log).
COMMON_WORD = "memo"


def keyword_query(rng: np.random.Generator) -> str:
    """Three random vocabulary words and the word every chunk holds."""
    words = [VOCABULARY[int(w)] for w in rng.integers(0, len(VOCABULARY), 3)]
    return " ".join([*words, COMMON_WORD])


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _user() -> User:
    # Folder sources need a grant of the folder, or an administrator (the bench's temp folder).
    return User.objects.create_user(f"bench-k-{uuid.uuid4().hex[:8]}", is_superuser=True)


def _run_index(store: Store, folder: Path) -> tuple[float, int]:
    with override_settings(KNOWLEDGE_ALLOWED_ROOTS=[str(folder.parent)]):
        source, scan_job = services.source_add_folder(store=store, path=str(folder))
    services.scan_run(scan_job.pk)
    Job.objects.filter(pk=scan_job.pk).update(state=Job.State.SUCCEEDED)
    job = Job.objects.create(store=store, source=source, kind=Job.Kind.INDEX, scan_job=scan_job)
    start = time.perf_counter()
    services.index_run(job.pk)
    elapsed = time.perf_counter() - start
    return elapsed, Chunk.objects.filter(source=source).count()


def bench_indexing(model_ok: bool) -> dict[str, float]:
    """Index the LoCoMo dialogues as text files, one file per session (real English text)."""
    folder = Path(tempfile.mkdtemp(prefix="bench-index-")) / "docs"
    folder.mkdir()
    for number, conversation in enumerate(_locomo()):
        sessions: dict[int, list[str]] = {}
        for _, text, session in _turns(conversation):
            sessions.setdefault(session, []).append(text)
        for session, lines in sessions.items():
            (folder / f"conversation{number}-session{session}.txt").write_text("\n".join(lines))
    user = _user()
    plain = services.store_create(owner=user, name="plain", provider="none")
    seconds, chunks = _run_index(plain, folder)
    files = len(list(folder.iterdir()))
    result = {"chunks": float(chunks), "files": float(files), "plain_per_s": chunks / seconds}
    if model_ok:
        local = services.store_create(owner=user, name="local", provider="fastembed")
        seconds, chunks = _run_index(local, folder)
        result["local_per_s"] = chunks / seconds
    return result


def synthetic_vectors(count: int, kind: str, rng: np.random.Generator) -> np.ndarray:
    """Clustered vectors (topics plus noise, shaped like text embeddings) or uniform random ones."""
    if kind == "clustered":
        centers = rng.normal(size=(max(50, count // 50), DIM))
        vectors = centers[rng.integers(0, len(centers), count)] + 0.6 * rng.normal(
            size=(count, DIM)
        )
    else:
        vectors = rng.normal(size=(count, DIM))
    vectors = vectors.astype(np.float32)
    normalized: np.ndarray = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return normalized


def _query(vectors: np.ndarray, kind: str, rng: np.random.Generator) -> np.ndarray:
    if kind == "clustered":  # questions land near the documents they are about
        query = vectors[rng.integers(0, len(vectors))] + 0.3 * rng.normal(size=DIM)
    else:
        query = rng.normal(size=DIM)
    query = query.astype(np.float32)
    normalized: np.ndarray = query / np.linalg.norm(query)
    return normalized


def _fill_synthetic(store: Store, vectors: np.ndarray, rng: np.random.Generator) -> None:
    count = len(vectors)
    source = Source.objects.create(
        store=store,
        kind=Source.Kind.FOLDER,
        path=f"/bench/{store.pk}",
        chunk_count=count,
        status=Source.Status.OK,
    )
    document = Document.objects.create(
        source=source, path="synthetic.txt", sha256="x", format="text", size=0
    )
    words = rng.integers(0, len(VOCABULARY), size=(count, 30))
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX IF EXISTS {store.index_name}")
        with cursor.cursor.copy(
            "COPY knowledge_chunk (document_id, store_id, source_id, ordinal, text, token_count, embedding) "
            "FROM STDIN"
        ) as copy:
            for i in range(count):
                text = COMMON_WORD + " " + " ".join(VOCABULARY[w] for w in words[i])
                vector = "[" + ",".join(f"{x:.6f}" for x in vectors[i]) + "]"
                copy.write_row((document.pk, store.pk, source.pk, i, text, 40, vector))
    start = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE INDEX {store.index_name} ON knowledge_chunk USING hnsw "
            f"((embedding::vector({vectors.shape[1]})) vector_cosine_ops) "
            f"WITH (m = {settings.KNOWLEDGE_HNSW_M}, ef_construction = {settings.KNOWLEDGE_HNSW_EF_CONSTRUCTION}) "
            f"WHERE store_id = {store.pk}"
        )
        cursor.execute("ANALYZE knowledge_chunk")
    store.build_seconds = time.perf_counter() - start  # type: ignore[attr-defined]


def bench_scale(count: int, kind: str) -> dict[str, float]:
    rng = np.random.default_rng(count)
    store = Store.objects.create(
        owner=_user(),
        name=f"scale-{count}-{kind}",
        provider="fastembed",
        model_name="synthetic",
        dimension=DIM,
    )
    vectors = synthetic_vectors(count, kind, rng)
    _fill_synthetic(store, vectors, rng)
    ids = list(Chunk.objects.filter(store=store).order_by("ordinal").values_list("pk", flat=True))
    source_ids = list(store.sources.values_list("pk", flat=True))
    latencies_vector, latencies_keyword, recalls = [], [], []
    with override_settings(KNOWLEDGE_EXACT_SEARCH_MAX_CHUNKS=0):
        for _ in range(200):
            query = _query(vectors, kind, rng)
            start = time.perf_counter()
            found = vector_ranking(store, query.tolist(), source_ids, limit=10)
            latencies_vector.append((time.perf_counter() - start) * 1000)
            truth = {ids[j] for j in np.argsort(-(vectors @ query))[:10]}
            recalls.append(len(truth & set(found)) / 10)
            words = keyword_query(rng)
            start = time.perf_counter()
            keyword_ranking(store, words, source_ids, limit=50)
            latencies_keyword.append((time.perf_counter() - start) * 1000)
    build = store.build_seconds  # type: ignore[attr-defined]
    services.store_delete(store=store)
    hybrid = [a + b for a, b in zip(latencies_vector, latencies_keyword, strict=True)]
    return {
        "vector_p50": percentile(latencies_vector, 0.5),
        "vector_p95": percentile(latencies_vector, 0.95),
        "keyword_p50": percentile(latencies_keyword, 0.5),
        "keyword_p95": percentile(latencies_keyword, 0.95),
        "hybrid_p50": percentile(hybrid, 0.5),
        "hybrid_p95": percentile(hybrid, 0.95),
        "recall": float(np.mean(recalls)),
        "build_s": build,
    }


def _locomo() -> list[dict[str, Any]]:
    with zipfile.ZipFile(LOCOMO) as archive:
        return [
            json.load(io.BytesIO(archive.read(name)))
            for name in sorted(archive.namelist())
            if name.endswith(".json")
        ]


def _turns(conversation: dict[str, Any]) -> list[tuple[str, str, int]]:
    turns = []
    session = 1
    while f"session_{session}" in conversation:
        for turn in conversation[f"session_{session}"]:
            turns.append((turn["dia_id"], f"{turn['speaker']}: {turn['text']}", session))
        session += 1
    return turns


def bench_locomo(embedder: FastembedEmbedder | None) -> dict[str, dict[str, float]]:
    """Evidence recall@10 and hit@10 per retriever; one collection per conversation."""
    user = _user()
    modes = ["keyword"] + (["vector", "hybrid"] if embedder else [])
    scores: dict[str, list[tuple[float, float]]] = {mode: [] for mode in modes}
    empty_keyword = 0
    questions = 0
    for number, conversation in enumerate(_locomo()):
        turns = _turns(conversation)
        provider = "fastembed" if embedder else "none"
        store = services.store_create(owner=user, name=f"locomo-{number}", provider=provider)
        source = Source.objects.create(
            store=store,
            kind=Source.Kind.FOLDER,
            path=f"/locomo/{number}",
            chunk_count=len(turns),
            status=Source.Status.OK,
        )
        document = Document.objects.create(
            source=source, path="dialogue", sha256="x", format="text", size=0
        )
        vectors = (
            embedder.embed([text for _, text, _ in turns]) if embedder else [None] * len(turns)
        )
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
            for i, ((_, text, _), vector) in enumerate(zip(turns, vectors, strict=True))
        )
        dia_of = {chunk.pk: turns[i][0] for i, chunk in enumerate(chunks)}
        for qa in conversation["qa"]:
            if qa.get("category") not in (1, 2, 3, 4) or not qa.get("evidence"):
                continue
            questions += 1
            evidence = set(qa["evidence"])
            for mode in modes:
                found = [dia_of[i] for i in rank(store, qa["question"], mode=mode, limit=10).ids]
                if mode == "keyword" and not found:
                    empty_keyword += 1
                hit = len(evidence & set(found))
                scores[mode].append((hit / len(evidence), float(hit > 0)))
        services.store_delete(store=store)
    result = {
        mode: {
            "recall": float(np.mean([r for r, _ in values])),
            "hit": float(np.mean([h for _, h in values])),
        }
        for mode, values in scores.items()
    }
    result["_meta"] = {"questions": float(questions), "empty_keyword": float(empty_keyword)}
    return result


def bench_long_chunks(embedder: FastembedEmbedder) -> dict[str, float]:
    """Whole sessions cut into 800-token chunks: pooled windows against first-window-only.

    Score: hit@3 of the chunk holding an evidence turn, over the questions whose
    evidence lies in one session.
    """
    pooled_hits, truncated_hits, total = 0, 0, 0
    for conversation in _locomo():
        turns = _turns(conversation)
        sessions: dict[int, list[tuple[str, str]]] = {}
        for dia, text, session in turns:
            sessions.setdefault(session, []).append((dia, text))
        chunk_texts: list[str] = []
        chunk_dias: list[set[str]] = []
        for lines in sessions.values():
            for chunk in chunk_pages([Page(None, "\n".join(text for _, text in lines))]):
                chunk_texts.append(chunk.text)
                chunk_dias.append({dia for dia, text in lines if text in chunk.text})
        pooled = np.array(embedder.embed(chunk_texts))
        first = np.array(embedder.embed([windows(text)[0] for text in chunk_texts]))
        for qa in conversation["qa"]:
            if qa.get("category") not in (1, 2, 3, 4) or not qa.get("evidence"):
                continue
            evidence = set(qa["evidence"])
            query = np.array(embedder.embed([qa["question"]])[0])
            total += 1
            for matrix, counter in ((pooled, "p"), (first, "t")):
                top = np.argsort(-(matrix @ query))[:3]
                hit = any(chunk_dias[i] & evidence for i in top)
                if counter == "p":
                    pooled_hits += hit
                else:
                    truncated_hits += hit
    return {
        "pooled": pooled_hits / total,
        "truncated": truncated_hits / total,
        "questions": float(total),
    }


def run(write_section: Callable[[str, str], None], machine: str) -> str:
    embedder: FastembedEmbedder | None
    try:
        embedder = FastembedEmbedder(settings.EMBEDDING_MODEL)
    except Exception:  # no local model: the keyword parts still run
        embedder = None
    indexing = bench_indexing(embedder is not None)
    scales = {
        (count, kind): bench_scale(count, kind)
        for count in (10_000, 100_000)
        for kind in ("clustered", "random")
    }
    locomo = bench_locomo(embedder)
    long_chunks = bench_long_chunks(embedder) if embedder else None
    lines = [
        "## Knowledge: indexing, retrieval and quality",
        "",
        "Command: `make bench` (`python -m benchmarks.run`). Machine: " + machine + ".",
        f"Local model: {settings.EMBEDDING_MODEL} via fastembed"
        + (f" from `{settings.EMBEDDING_MODEL_PATH}`" if settings.EMBEDDING_MODEL_PATH else "")
        + ("" if embedder else " — not available, vector rows are missing")
        + ".",
        "",
        f"Indexing {indexing['chunks']:.0f} chunks (the LoCoMo dialogues as {indexing['files']:.0f} text "
        "files, one per session; scan → extract → chunk → embed → stage → one commit), in process:",
        "",
        "| pipeline | chunks / s |",
        "|---|---|",
        f"| without embedding (keyword-only collection) | {indexing['plain_per_s']:.0f} |",
    ]
    if "local_per_s" in indexing:
        lines.append(
            f"| with the local model (fastembed, 2 threads) | {indexing['local_per_s']:.0f} |"
        )
    lines += [
        "",
        "Retrieval on synthetic 384-dimension vectors and 30-word texts, 200 queries each; "
        f"every text and every keyword query holds the word '{COMMON_WORD}' (each chunk "
        "matches the OR query, the worst case for keyword search); "
        "vector search through the store's HNSW index "
        f"(m {settings.KNOWLEDGE_HNSW_M}, ef_construction {settings.KNOWLEDGE_HNSW_EF_CONSTRUCTION}, "
        f"ef_search {settings.KNOWLEDGE_HNSW_EF_SEARCH}), recall@10 against exact search on the "
        "same vectors; query embedding excluded. *Clustered* vectors are topics plus noise with "
        "queries near a document, the shape of real text embeddings; *random* vectors are "
        "uniform on the sphere, the worst case for any HNSW graph:",
        "",
        "| chunks | vectors | HNSW build | vector p50 / p95 | keyword p50 / p95 | both p50 / p95 | recall@10 |",
        "|---|---|---|---|---|---|---|",
    ]
    for (count, kind), row in scales.items():
        lines.append(
            f"| {count:,} | {kind} | {row['build_s']:.1f} s | {row['vector_p50']:.1f} / {row['vector_p95']:.1f} ms "
            f"| {row['keyword_p50']:.1f} / {row['keyword_p95']:.1f} ms "
            f"| {row['hybrid_p50']:.1f} / {row['hybrid_p95']:.1f} ms | {row['recall']:.3f} |"
        )
    meta = locomo.pop("_meta")
    lines += [
        "",
        f"LoCoMo retrieval quality ({meta['questions']:.0f} questions of categories 1-4, one "
        "collection per conversation, one chunk per turn; keyword search is PostgreSQL "
        "full-text with an OR query ranked by BM25; hybrid fuses the vector and keyword top 50 "
        "with the fusion settings; the retrieval section has nDCG and the BM25 reference). "
        f"Keyword search returned nothing for {meta['empty_keyword']:.0f} questions.",
        "",
        "| retriever | evidence recall@10 | hit@10 |",
        "|---|---|---|",
    ]
    for mode, row in locomo.items():
        lines.append(f"| {mode} | {row['recall']:.3f} | {row['hit']:.3f} |")
    lines += [
        "",
        "Baselines from shared/data/README.md on the same data: MiniLM dense 0.455 / 0.518, "
        "BM25 0.566 / 0.630, PostgreSQL OR full-text 0.582 / 0.650, plainto_tsquery (AND) "
        "0.101 / 0.115, hybrid RRF 0.581 / 0.657.",
    ]
    if long_chunks:
        lines += [
            "",
            "Long chunks: whole LoCoMo sessions cut into 800-token chunks, hit@3 of the chunk "
            f"holding an evidence turn ({long_chunks['questions']:.0f} questions). MiniLM reads "
            "at most 256 word pieces, so embedding a chunk as one text sees only its start:",
            "",
            "| chunk embedding | hit@3 |",
            "|---|---|",
            f"| windows of 160 words, averaged (what the product does) | {long_chunks['pooled']:.3f} |",
            f"| first window only (what truncation gives) | {long_chunks['truncated']:.3f} |",
        ]
    body = "\n".join(lines) + "\n"
    write_section("knowledge", body)
    return body


__all__ = ["run", "transaction"]
