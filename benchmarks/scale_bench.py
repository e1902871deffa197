"""A scale run (issue 26): 10,000 people, a million notes, a million chunks.

`make bench-scale` (or `python -m benchmarks.scale_bench`) fills its own embedded database
under .data/scale with bulk COPY, rows the product's own models and code read: people with
their personal memory scope (what a new account gets), each with an index and topic files
of fenced entries built from LoCoMo turns (read from ../shared/data at run time), a
change set with each file's history row and two pending proposals; one knowledge collection
of a million chunks and further small ones, their search columns and BM25 statistics filled
by the chunk table's own generated columns and triggers. Vectors are random unit vectors
(numpy), not embeddings of the texts.

A second database in the same server, with ten people, is the reference: each product
figure at scale is timed alternately with the same call against it, medians of three
rounds. Generation is resumable: a phase that finished is skipped on the next run (its
time is kept in the bench_scale_state table).

Short run: `python -m benchmarks.scale_bench --people 200 --chunks 20000 --collections 3
--no-doc` with another DATA_DIR.
"""

from __future__ import annotations

import argparse
import functools
import os
from pathlib import Path

if __name__ == "__main__":  # standalone: its own embedded database
    from benchmarks.standalone import setup_django

    setup_django("scale")

import hashlib
import json
import random
import re
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from unittest import mock

import numpy as np
from django.conf import settings
from django.contrib.auth.hashers import make_password
from django.core.management import call_command
from django.db import connection, connections, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import User
from benchmarks.ingest_bench import locomo_folder, product_index
from benchmarks.knowledge_bench import _locomo, _turns
from host.core.fulltext import or_query
from knowledge.models import Document, Source, Store
from knowledge.retrieval import keyword_scored, rank, vector_scored
from knowledge.services import stores
from memory_addon.core import entries
from memory_addon.services.context import turn_context_build
from memory_addon.services.tools import tool_call_execute
from memory_addon.turns import Turn

SMALL_DB = "memory_small"  # the reference database, in the same server
SMALL_PEOPLE = 10
# Ids in the reference database start far above the large one's, so nothing a process
# keeps by id (Redis keys, compiled reads) is shared between the two.
SMALL_ID_START = 900_000_000
PEOPLE_BATCH = 500  # people per transaction while generating
CHUNK_BATCH = 50_000  # chunks per COPY statement (and transaction)
CHUNKS_PER_DOCUMENT = 100
SOURCES = 10  # of the large collection
DIM = 384  # the default local models' dimension
TOPICS = ["family", "work", "travel", "food", "pets", "health", "hobbies", "books", "music"]
PLANTED = "- hobby: takes violin lessons on Thursdays"  # every 100th person has it
NOTE_QUERY = "violin lessons"
ROUNDS = 3
CREATED = "2026-11-20"


# --- Texts ------------------------------------------------------------------------------


def locomo_texts() -> tuple[list[str], list[str]]:
    """(turn texts, questions) of the ten LoCoMo conversations."""
    turns: list[str] = []
    questions: list[str] = []
    for conversation in _locomo():
        turns += [text for _, text, _ in _turns(conversation)]
        questions += [qa["question"] for qa in conversation["qa"] if qa.get("question")]
    return turns, questions


def note_text(turn: str) -> str:
    """A turn as one short note line: one line, no comment markers, under 200 characters."""
    text = re.sub(r"\s+", " ", turn.replace("<!--", "").replace("-->", "")).strip()
    if len(text) > 200:
        text = text[:200].rsplit(" ", 1)[0]
    return "- " + text


def person_files(notes: int, rng: random.Random, turns: list[str], planted: bool) -> dict[str, str]:
    """A person's files as the product writes them: an index of fenced entries pointing at
    topic files (under the index caps, with room left for a proposal) and the topic files
    holding the other notes as fenced entries. `notes` counts every entry."""
    topics = TOPICS[: max(1, min(len(TOPICS) - 1, -(-notes // 12)))]
    index_blocks = [
        entries.render_entry(
            f"- {topic}: what I told about {topic} -> {topic}.md",
            entry_id=f"{rng.getrandbits(32):08x}",
            origin="assistant",
            created=CREATED,
            source="chat",
        )
        for topic in topics
    ]
    index = "\n\n".join(index_blocks) + "\n"
    if (
        entries.count_lines(index) > settings.MEMORY_INDEX_MAX_LINES - 3
        or len(index.encode()) > settings.MEMORY_INDEX_MAX_BYTES - 250
    ):
        raise RuntimeError("the generated index is over its caps")
    lines = [note_text(rng.choice(turns)) for _ in range(max(0, notes - len(topics)))]
    if planted and lines:
        lines[0] = PLANTED
    files = {"index.md": index}
    for number, topic in enumerate(topics):
        mine = lines[number :: len(topics)]
        if not mine:
            continue
        blocks = [
            entries.render_entry(
                line,
                entry_id=f"{rng.getrandbits(32):08x}",
                origin="assistant",
                created=CREATED,
                source="chat",
            )
            for line in mine
        ]
        files[f"{topic}.md"] = "\n\n".join(blocks) + "\n"
    return files


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --- Bookkeeping: what was generated, and how long it took ------------------------------


def state_get(name: str) -> dict[str, float] | None:
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE IF NOT EXISTS bench_scale_state (name text PRIMARY KEY, "
            "seconds float8 NOT NULL, rows bigint NOT NULL, done_at timestamptz DEFAULT now())"
        )
        cursor.execute("SELECT seconds, rows FROM bench_scale_state WHERE name = %s", [name])
        row = cursor.fetchone()
    return {"seconds": float(row[0]), "rows": float(row[1])} if row else None


def state_put(name: str, seconds: float, rows: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO bench_scale_state (name, seconds, rows) VALUES (%s, %s, %s) "
            "ON CONFLICT (name) DO UPDATE SET seconds = bench_scale_state.seconds + "
            "EXCLUDED.seconds, rows = EXCLUDED.rows, done_at = now()",
            [name, seconds, rows],
        )


def next_ids(cursor: Any, table: str, count: int) -> int:
    """The first of `count` ids taken from the table's own sequence (one call)."""
    cursor.execute(
        "SELECT setval(pg_get_serial_sequence(%s, 'id'), "
        "nextval(pg_get_serial_sequence(%s, 'id')) + %s - 1)",
        [table, table, count],
    )
    return int(cursor.fetchone()[0]) - count + 1


def copy_rows(cursor: Any, table: str, columns: list[str], rows: list[tuple[Any, ...]]) -> None:
    with cursor.cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


# --- People, scopes, notes --------------------------------------------------------------


def people_generate(
    prefix: str, count: int, notes: int, turns: list[str], *, ten_notes_last: bool = False
) -> float:
    """`count` people named prefix-00000…, resumed from those already there; seconds."""
    done = User.objects.filter(username__regex=rf"^{prefix}-[0-9]+$").count()
    password = make_password(None)  # unusable: the bench signs in with force_login
    start = time.perf_counter()
    now = timezone.now()
    expires = now + timedelta(days=365)  # pending for the whole life of the data set
    for first in range(done, count, PEOPLE_BATCH):
        batch = range(first, min(count, first + PEOPLE_BATCH))
        people = []
        for number in batch:
            rng = random.Random(f"{prefix}-{number}")
            small = ten_notes_last and number == count - 1
            planted = number % 100 == 0 or small
            people.append(person_files(10 if small else notes, rng, turns, planted=planted))
        with transaction.atomic(), connection.cursor() as cursor:
            n = len(people)
            user_id = next_ids(cursor, "accounts_user", n)
            scope_id = next_ids(cursor, "memory_addon_memoryscope", n)
            change_id = next_ids(cursor, "memory_addon_changeset", n)
            files_count = sum(len(files) for files in people)
            file_id = next_ids(cursor, "memory_addon_memoryfile", files_count)
            version_id = next_ids(cursor, "memory_addon_filechange", files_count)
            proposal_id = next_ids(cursor, "memory_addon_proposal", 2 * n)
            users, scopes, changes, files, versions, proposals = [], [], [], [], [], []
            for offset, (number, person) in enumerate(zip(batch, people, strict=True)):
                uid, sid, cid = user_id + offset, scope_id + offset, change_id + offset
                users.append(
                    (
                        uid,
                        password,
                        False,
                        f"{prefix}-{number:05d}",
                        "",
                        "",
                        "",
                        False,
                        True,
                        now,
                        "",
                    )
                )
                scopes.append((sid, "user", uid, "", "", "", True, now))
                changes.append((cid, sid, uid, "assistant", "chat", "Saved notes", "", "", now))
                for path, content in person.items():
                    digest = sha(content)
                    size = len(content.encode("utf-8"))
                    files.append((file_id, sid, path, content, digest, size, digest, now, now))
                    versions.append((version_id, cid, sid, path, None, content, "", digest, now))
                    file_id, version_id = file_id + 1, version_id + 1
                rng = random.Random(f"{prefix}-{number}-proposals")
                bases = {"index.md": sha(person["index.md"])}
                for _ in range(2):
                    op = {
                        "action": "add",
                        "scope": "user",
                        "created": CREATED,
                        "text": note_text(rng.choice(turns)),
                        "entry_id": f"{rng.getrandbits(32):08x}",
                    }
                    proposals.append(
                        (
                            proposal_id,
                            uid,
                            sid,
                            "pending",
                            json.dumps(op),
                            json.dumps(bases),
                            "",
                            "",
                            "chat",
                            "",
                            "",
                            now,
                            expires,
                        )
                    )
                    proposal_id += 1
            copy_rows(
                cursor,
                "accounts_user",
                [
                    "id",
                    "password",
                    "is_superuser",
                    "username",
                    "first_name",
                    "last_name",
                    "email",
                    "is_staff",
                    "is_active",
                    "date_joined",
                    "estimate_complexity",
                ],
                users,
            )
            copy_rows(
                cursor,
                "memory_addon_memoryscope",
                [
                    "id",
                    "kind",
                    "owner_id",
                    "chat_key",
                    "project_key",
                    "project_name",
                    "enabled",
                    "created_at",
                ],
                scopes,
            )
            copy_rows(
                cursor,
                "memory_addon_memoryfile",
                [
                    "id",
                    "scope_id",
                    "path",
                    "content",
                    "sha256",
                    "size",
                    "machine_sha256",
                    "created_at",
                    "updated_at",
                ],
                files,
            )
            copy_rows(
                cursor,
                "memory_addon_changeset",
                [
                    "id",
                    "scope_id",
                    "user_id",
                    "origin",
                    "source",
                    "summary",
                    "conversation_ref",
                    "message_ref",
                    "created_at",
                ],
                changes,
            )
            copy_rows(
                cursor,
                "memory_addon_filechange",
                [
                    "id",
                    "change_set_id",
                    "scope_id",
                    "path",
                    "before",
                    "after",
                    "before_sha256",
                    "after_sha256",
                    "created_at",
                ],
                versions,
            )
            copy_rows(
                cursor,
                "memory_addon_proposal",
                [
                    "id",
                    "user_id",
                    "scope_id",
                    "state",
                    "operations",
                    "base_hashes",
                    "reason",
                    "why_waiting",
                    "source",
                    "conversation_ref",
                    "message_ref",
                    "created_at",
                    "expires_at",
                ],
                proposals,
            )
        print(f"  {prefix}: {batch.stop:,} people", flush=True)
    return time.perf_counter() - start


# --- Knowledge: one large collection and many small ones --------------------------------


def unit_vectors(seed: int, count: int) -> np.ndarray:
    """Random unit vectors of the collection's dimension; the same seed gives the same ones."""
    vectors = np.random.default_rng(seed).normal(size=(count, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def chunk_text(rng: random.Random, turns: list[str]) -> str:
    """Eight random LoCoMo turns, as the retrieval bench's at-scale collection."""
    return " ".join(rng.choice(turns) for _ in range(8))


def _vector_cursor() -> Any:
    """A psycopg cursor of the Django connection (same transaction) that knows the vector
    type, for a binary COPY of numpy vectors."""
    from pgvector.psycopg import register_vector

    connection.ensure_connection()
    raw = connection.connection
    register_vector(raw)
    return raw.cursor()


@contextmanager
def one_core() -> Iterator[None]:
    """Index builds in this session use no parallel workers: the machine is shared."""
    with connection.cursor() as cursor:
        cursor.execute("SET max_parallel_maintenance_workers = 0")
        cursor.execute("SET maintenance_work_mem = '2GB'")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET max_parallel_maintenance_workers")
            cursor.execute("RESET maintenance_work_mem")


def collection_fill(
    store: Store,
    count: int,
    *,
    vectors: int,
    sources: int,
    seed: int,
    turns: list[str],
    log: bool = False,
) -> None:
    """`count` chunks in `sources` sources by COPY, resumed after the chunks already there;
    the first `vectors` chunks (by ordinal) carry a random unit vector. Ordinals are the
    chunk's position in the whole collection."""
    existing = list(store.sources.order_by("pk"))
    if not existing:
        Source.objects.bulk_create(
            Source(
                store=store,
                kind=Source.Kind.FOLDER,
                path=f"/bench/scale/{store.pk}/{s}",
                status=Source.Status.OK,
            )
            for s in range(sources)
        )
        existing = list(store.sources.order_by("pk"))
    per_source = -(-count // sources)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM knowledge_chunk WHERE store_id = %s", [store.pk])
        done = int(cursor.fetchone()[0])
    for first in range(done - done % CHUNK_BATCH, count, CHUNK_BATCH):
        last = min(count, first + CHUNK_BATCH)
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "SELECT 1 FROM knowledge_chunk WHERE store_id = %s AND ordinal = %s",
                [store.pk, first],
            )
            if cursor.fetchone():
                continue  # this batch is in (batches are one transaction each)
            # One document per CHUNKS_PER_DOCUMENT chunks, in the chunk's source.
            numbers = range(first // CHUNKS_PER_DOCUMENT, -(-last // CHUNKS_PER_DOCUMENT))
            documents = Document.objects.bulk_create(
                Document(
                    source=existing[(n * CHUNKS_PER_DOCUMENT) // per_source],
                    path=f"doc-{n:06d}.txt",
                    sha256=sha(f"{store.pk}-{n}"),
                    format="text",
                    size=0,
                )
                for n in numbers
            )
            by_number = dict(zip(numbers, documents, strict=True))
            batch_vectors = unit_vectors(seed * 1_000_003 + first, last - first)
            rng = random.Random(f"{seed}-{first}")
            with (
                _vector_cursor() as raw,
                raw.copy(
                    "COPY knowledge_chunk (document_id, store_id, source_id, ordinal, text, "
                    "token_count, embedding) FROM STDIN WITH (FORMAT BINARY)"
                ) as copy,
            ):
                copy.set_types(["int8", "int8", "int8", "int4", "text", "int4", "vector"])
                for i in range(first, last):
                    document = by_number[i // CHUNKS_PER_DOCUMENT]
                    text = chunk_text(rng, turns)
                    vector = batch_vectors[i - first] if i < vectors else None
                    row = (document.pk, store.pk, document.source_id, i, text)
                    copy.write_row((*row, len(text.split()), vector))
        if log:
            print(f"  {store.name}: {last:,} chunks", flush=True)
    with connection.cursor() as cursor:  # the counts retrieval reads, from the rows
        cursor.execute(
            "SELECT source_id, count(*), count(DISTINCT document_id) FROM knowledge_chunk "
            "WHERE store_id = %s GROUP BY 1",
            [store.pk],
        )
        for source_id, chunks, documents_count in cursor.fetchall():
            Source.objects.filter(pk=source_id).update(
                chunk_count=chunks, file_count=documents_count
            )


def store_get(owner: User, name: str) -> Store:
    store, _ = Store.objects.get_or_create(
        owner=owner,
        name=name,
        defaults={"provider": "fastembed", "model_name": "random-unit-vectors", "dimension": DIM},
    )
    return store


@dataclass
class Sizes:
    people: int
    notes: int
    chunks: int
    vector_chunks: int
    collections: int
    collection_chunks: int


def generate(sizes: Sizes, turns: list[str]) -> dict[str, dict[str, float]]:
    """Every phase not done yet; returns each phase's seconds and rows (from the state)."""
    phases: dict[str, dict[str, float]] = {}
    people_key = f"people {sizes.people} x {sizes.notes}"
    if state_get(people_key) is None:
        seconds = people_generate("scale", sizes.people, sizes.notes, turns)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        state_put(people_key, seconds, sizes.people)
    phases["people"] = state_get(people_key) or {}
    owner = User.objects.get(username="scale-00000")
    large_key = f"collection {sizes.chunks}"
    large = store_get(owner, f"scale-{sizes.chunks}")
    if state_get(large_key) is None:
        start = time.perf_counter()
        collection_fill(
            large,
            sizes.chunks,
            vectors=sizes.vector_chunks,
            sources=SOURCES,
            seed=1,
            turns=turns,
            log=True,
        )
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE knowledge_chunk")
        state_put(large_key, time.perf_counter() - start, sizes.chunks)
    phases["large"] = state_get(large_key) or {}
    hnsw_key = f"hnsw {sizes.vector_chunks} of {sizes.chunks}"
    if state_get(hnsw_key) is None and sizes.vector_chunks:
        start = time.perf_counter()
        with one_core():
            stores._create_vector_index(large)  # the product's own index, built after load
        state_put(hnsw_key, time.perf_counter() - start, sizes.vector_chunks)
    phases["hnsw"] = state_get(hnsw_key) or {}
    small_key = f"collections {sizes.collections} x {sizes.collection_chunks}"
    if state_get(small_key) is None:
        start = time.perf_counter()
        with one_core():
            for n in range(sizes.collections):
                store = store_get(owner, f"small-{n:03d}")
                collection_fill(
                    store,
                    sizes.collection_chunks,
                    vectors=sizes.collection_chunks,
                    sources=1,
                    seed=100 + n,
                    turns=turns,
                )
                stores._create_vector_index(store)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE knowledge_chunk")
        state_put(small_key, time.perf_counter() - start, sizes.collections)
    phases["small"] = state_get(small_key) or {}
    return phases


# --- The reference database: ten people ----------------------------------------------------


@contextmanager
def database(alias: str) -> Iterator[None]:
    """Run the product's code (which uses the default connection) against `alias`."""
    if alias == "default":
        yield
        return
    large = connections["default"]
    connections["default"] = connections[alias]
    try:
        yield
    finally:
        connections["default"] = large


def small_database(notes: int, turns: list[str]) -> float:
    """The ten-person database, made and migrated once; the seconds that took."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [SMALL_DB])
        exists = cursor.fetchone() is not None
        if not exists:
            cursor.execute(f'CREATE DATABASE "{SMALL_DB}"')
    connections.settings["small"] = {**connections.settings["default"], "NAME": SMALL_DB}
    settings.DATABASES["small"] = connections.settings["small"]
    start = time.perf_counter()
    with database("small"):
        if not exists:
            with connection.cursor() as cursor:
                cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
        call_command("migrate", interactive=False, verbosity=0)
        if not exists:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT schemaname || '.' || sequencename FROM pg_sequences "
                    "WHERE schemaname = 'public'"
                )
                for (name,) in cursor.fetchall():
                    cursor.execute("SELECT setval(%s, %s)", [name, SMALL_ID_START])
        people_generate("small", SMALL_PEOPLE, notes, turns, ten_notes_last=True)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        if state_get("small database") is None:
            state_put("small database", time.perf_counter() - start, SMALL_PEOPLE)
        return (state_get("small database") or {}).get("seconds", 0.0)


# --- Timing -------------------------------------------------------------------------------


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def median_ms(fn: Callable[[], object], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def alternated(rounds: Mapping[str, Callable[[], dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Each case's figures, ROUNDS rounds with the cases taking turns; medians per figure."""
    seen: dict[str, list[dict[str, float]]] = {name: [] for name in rounds}
    for _ in range(ROUNDS):
        for name, one_round in rounds.items():
            seen[name].append(one_round())
    return {
        name: {key: statistics.median(r[key] for r in results) for key in results[0]}
        for name, results in seen.items()
    }


def loads() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.1f} / {five:.1f} / {fifteen:.1f}"


# --- Memory: turn context, list_memory, the Memory page and the Inbox ----------------------


@dataclass
class Person:
    alias: str
    user: User
    client: Client


def person(alias: str, username: str) -> Person:
    with database(alias):
        user = User.objects.get(username=username)
        client = Client()
        client.force_login(user)
    return Person(alias, user, client)


def queries_of(who: Person, fn: Callable[[], object]) -> int:
    with database(who.alias):
        with CaptureQueriesContext(connection) as captured:
            fn()
        # Read while `connection` still names this database (the list is read lazily).
        return len(captured.captured_queries)


def memory_rounds(who: Person) -> dict[str, Callable[[], object]]:
    turn = Turn(user=who.user)

    def context() -> object:
        return turn_context_build(turn)

    def list_memory() -> object:
        result = tool_call_execute(turn=turn, name="list_memory", arguments={"query": NOTE_QUERY})
        if not result.ok or "violin" not in result.output:
            raise RuntimeError(f"list_memory did not find the planted note: {result.output[:200]}")
        return result

    def page(path: str) -> Callable[[], object]:
        def get() -> object:
            response = who.client.get(path)
            if response.status_code != 200:
                raise RuntimeError(f"{path}: HTTP {response.status_code}")
            return response

        return get

    return {
        "context": context,
        "list_memory": list_memory,
        "memory page": page("/memory/"),
        "inbox page": page("/inbox/"),
    }


RUNS = {"context": 50, "list_memory": 30, "memory page": 15, "inbox page": 15}


def bench_memory(people: dict[str, Person]) -> dict[str, dict[str, float]]:
    """Per measured call: each person's median ms (medians of 3 alternated rounds) and the
    call's query count."""
    calls = {name: memory_rounds(who) for name, who in people.items()}
    out: dict[str, dict[str, float]] = {}
    for call in RUNS:
        for name, who in people.items():
            with database(who.alias):
                for _ in range(3):
                    calls[name][call]()  # warm: first views scan and parse once
        queries = {name: queries_of(people[name], calls[name][call]) for name in people}

        def one_round(name: str, call: str = call) -> Callable[[], dict[str, float]]:
            def run() -> dict[str, float]:
                with database(people[name].alias):
                    return {"ms": median_ms(calls[name][call], RUNS[call])}

            return run

        figures = alternated({name: one_round(name) for name in people})
        out[call] = {name: figures[name]["ms"] for name in people}
        out[call].update({f"{name} queries": float(queries[name]) for name in people})
        print(call, out[call], flush=True)
    return out


# --- Knowledge: retrieval on the large collection and a small one ------------------------


@dataclass
class Collection:
    store: Store
    source_ids: list[int]
    counts: tuple[int, int]
    vectors: np.ndarray  # the stored unit vectors, by ordinal (those that have one)
    ids: np.ndarray  # chunk id by ordinal


def collection_load(store: Store, vectors: int, seed: int) -> Collection:
    """The collection's sources and the vectors it holds (regenerated from their seeds)."""
    rows = list(store.sources.values_list("pk", "chunk_count"))
    total = sum(count for _, count in rows)
    parts = [
        unit_vectors(seed * 1_000_003 + first, min(total, first + CHUNK_BATCH) - first)
        for first in range(0, vectors, CHUNK_BATCH)
    ]
    held = np.concatenate(parts)[:vectors] if parts else np.zeros((0, DIM), np.float32)
    ids = np.zeros(vectors, dtype=np.int64)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT ordinal, id FROM knowledge_chunk WHERE store_id = %s AND ordinal < %s",
            [store.pk, vectors],
        )
        for ordinal, chunk_id in cursor.fetchall():
            ids[ordinal] = chunk_id
    return Collection(store, [pk for pk, _ in rows], (total, total), held, ids)


def near_queries(collection: Collection, count: int, rng: np.random.Generator) -> np.ndarray:
    """Queries near stored vectors (cosine about 0.7 to one of them), so each has a real
    nearest neighbour that passes the relevance floor, as a question near its answer."""
    picks = rng.integers(0, len(collection.vectors), size=count)
    noise = rng.normal(size=(count, DIM)).astype(np.float32) / np.sqrt(DIM)
    queries: np.ndarray = collection.vectors[picks] + noise
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    return queries


def exact_top(collection: Collection, query: np.ndarray, k: int = 10) -> set[int]:
    scores = collection.vectors @ query
    return {int(collection.ids[j]) for j in np.argpartition(-scores, k)[:k]}


def _plain(collection: Collection, query: np.ndarray) -> list[int]:
    """Bare pgvector on the same index, the session's ef_search set alike."""
    raw = connection.cursor().cursor
    literal = "[" + ",".join(f"{x:.7g}" for x in query) + "]"
    raw.execute(
        f"SELECT id FROM knowledge_chunk WHERE store_id = %s "
        f"ORDER BY embedding::vector({DIM}) <=> %s::vector({DIM}) LIMIT 10",
        [collection.store.pk, literal],
    )
    return [row[0] for row in raw.fetchall()]


class _FixedEmbedder:
    """Stands in for the query embedding: rank() gets the prepared vector, so the figures
    are the product's retrieval without the model's time."""

    model_name = "random-unit-vectors"
    dimension = DIM

    def __init__(self) -> None:
        self.vector: list[float] = []

    def embed_query(self, text: str) -> list[float]:
        return self.vector


def clock[T](fn: Callable[..., T], *args: Any, **kwargs: Any) -> tuple[float, T]:
    """(milliseconds, result) of one call."""
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return (time.perf_counter() - start) * 1000, result


def spread(samples: list[float]) -> dict[str, float]:
    return {"p50": percentile(samples, 0.5), "p95": percentile(samples, 0.95)}


def bench_retrieval(
    collections: dict[str, Collection], questions: list[str], count: int
) -> dict[str, dict[str, float]]:
    rng = np.random.default_rng(7)
    picked = random.Random(7).sample(questions, min(count, len(questions)))
    queries = {name: near_queries(c, count, rng) for name, c in collections.items()}
    truth = {name: [exact_top(c, q) for q in queries[name]] for name, c in collections.items()}
    # The stored vector each query was made near: its exact nearest neighbour.
    exact_first = {
        name: [int(c.ids[int(np.argmax(c.vectors @ q))]) for q in queries[name]]
        for name, c in collections.items()
    }
    ef = int(max(settings.KNOWLEDGE_HNSW_EF_SEARCH, 2 * 10))  # what vector_scored sets
    embedder = _FixedEmbedder()

    def keyword_round(name: str) -> dict[str, float]:
        c = collections[name]
        return spread([clock(keyword_scored, c.store, q, c.source_ids, 50)[0] for q in picked])

    def vector_round(name: str) -> dict[str, float]:
        c = collections[name]
        with connection.cursor() as cursor:
            cursor.execute(f"SET hnsw.ef_search = {ef}")  # the plain query's, alike
        product: list[float] = []
        plain: list[float] = []
        recall: list[float] = []
        plain_recall: list[float] = []
        nearest: list[float] = []
        for n, (query, exact) in enumerate(zip(queries[name], truth[name], strict=True)):
            # Who goes first takes turns: the second query of a pair finds the index
            # pages the first one read already in memory.
            for side in ("product", "plain") if n % 2 else ("plain", "product"):
                if side == "product":
                    ms, found = clock(
                        vector_scored,
                        c.store,
                        query.tolist(),
                        c.source_ids,
                        10,
                        chunk_counts=c.counts,
                    )
                    product.append(ms)
                    ids = [i for i, _ in found]
                    recall.append(len(exact & set(ids)) / 10)
                    nearest.append(float(bool(ids) and ids[0] == exact_first[name][n]))
                else:
                    ms, bare = clock(_plain, c, query)
                    plain.append(ms)
                    plain_recall.append(len(exact & set(bare)) / 10)
        own, other = spread(product), spread(plain)
        return {
            **own,
            "plain p50": other["p50"],
            "plain p95": other["p95"],
            "recall": float(np.mean(recall)),
            "plain recall": float(np.mean(plain_recall)),
            "nearest": float(np.mean(nearest)),
        }

    def hybrid_round(name: str) -> dict[str, float]:
        c = collections[name]
        ms = []
        with mock.patch("knowledge.retrieval.store_embedder", return_value=embedder):
            for question, query in zip(picked, queries[name], strict=True):
                embedder.vector = query.tolist()
                ms.append(clock(rank, c.store, question)[0])
        return spread(ms)

    for name, c in collections.items():  # warm the index pages and the plans
        for query, question in zip(queries[name][:20], picked[:20], strict=True):
            vector_scored(c.store, query.tolist(), c.source_ids, 10, chunk_counts=c.counts)
            keyword_scored(c.store, question, c.source_ids, 50)
    out: dict[str, dict[str, float]] = {}
    kinds: dict[str, Callable[[str], dict[str, float]]] = {
        "keyword": keyword_round,
        "vector": vector_round,
        "hybrid": hybrid_round,
    }
    for kind, one in kinds.items():
        rounds = {name: functools.partial(one, name) for name in collections}
        for name, figures in alternated(rounds).items():
            out[f"{kind} {name}"] = figures
            print(kind, name, figures, flush=True)
    # Reference for keyword search: plain ts_rank over every match (no BM25, no budget),
    # on a few questions only: on a million chunks it scores most of the collection.
    large = next(iter(collections.values()))

    def plain_keyword(query: str) -> None:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT id FROM knowledge_chunk, to_tsquery('english', %s) q "
                "WHERE store_id = %s AND search @@ q ORDER BY ts_rank(search, q) DESC LIMIT 10",
                [query, large.store.pk],
            )
            cursor.fetchall()

    out["keyword plain ts_rank"] = spread(
        [clock(plain_keyword, or_query(question))[0] for question in picked[:20]]
    )
    return out


# --- Indexing: a new keyword-only collection at scale and in the small database ----------


def bench_indexing(folder: Path) -> dict[str, dict[str, float]]:
    indexers = {}
    for alias in ("default", "small"):
        with database(alias):
            indexers[alias], _ = User.objects.get_or_create(
                username="scale-indexer", defaults={"is_superuser": True}
            )
            product_index(indexers[alias], folder, "none")  # warm-up
    rounds: dict[str, Callable[[], dict[str, float]]] = {}
    for alias in indexers:

        def one(alias: str = alias) -> dict[str, float]:
            with database(alias):
                result = product_index(indexers[alias], folder, "none")
            return {
                "seconds": result["total_s"],
                "chunks": result["chunks"],
                "per_s": result["chunks"] / result["total_s"],
            }

        rounds[alias] = one
    return alternated(rounds)


# --- The run ------------------------------------------------------------------------------


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scale_bench", description=__doc__)
    parser.add_argument("--people", type=int, default=10_000)
    parser.add_argument("--notes-per-person", type=int, default=100)
    parser.add_argument("--chunks", type=int, default=1_000_000, help="in the large collection")
    parser.add_argument(
        "--vector-chunks",
        type=int,
        default=250_000,
        help="chunks of the large collection with a vector and so in its HNSW index "
        "(a million did not fit: docs/benchmarks.md)",
    )
    parser.add_argument("--collections", type=int, default=100, help="small collections")
    parser.add_argument("--collection-chunks", type=int, default=1_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--no-doc", action="store_true", help="do not write docs/benchmarks.md")
    return parser.parse_args()


def main() -> None:
    args = arguments()
    sizes = Sizes(
        people=args.people,
        notes=args.notes_per_person,
        chunks=args.chunks,
        vector_chunks=min(args.vector_chunks, args.chunks),
        collections=args.collections,
        collection_chunks=args.collection_chunks,
    )
    call_command("migrate", interactive=False, verbosity=0)
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]  # Django's test client
    turns, questions = locomo_texts()
    load_start = loads()
    print("load average at the start (1 / 5 / 15 min):", load_start, flush=True)
    phases = generate(sizes, turns)
    small_seconds = small_database(sizes.notes, turns)
    print("generated:", phases, flush=True)
    measured = f"scale-{(sizes.people // 2) // 100 * 100:05d}"
    people = {
        "scale": person("default", measured),
        "small": person("small", "small-00000"),
        "small, 10 notes": person("small", f"small-{SMALL_PEOPLE - 1:05d}"),
    }
    load_memory = loads()
    memory = bench_memory(people)
    load_knowledge = loads()
    owner = User.objects.get(username="scale-00000")
    collections = {
        "large": collection_load(
            Store.objects.get(owner=owner, name=f"scale-{sizes.chunks}"), sizes.vector_chunks, 1
        ),
        "small": collection_load(
            Store.objects.get(owner=owner, name="small-000"), sizes.collection_chunks, 100
        ),
    }
    retrieval = bench_retrieval(collections, questions, args.queries)
    load_indexing = loads()
    with tempfile.TemporaryDirectory() as base:
        indexing = bench_indexing(locomo_folder(Path(base)))
    load_end = loads()
    print(indexing, flush=True)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_database_size(current_database())")
        size_gb = int(cursor.fetchone()[0]) / 1e9
    body = report(
        sizes=sizes,
        phases=phases,
        small_seconds=small_seconds,
        memory=memory,
        retrieval=retrieval,
        indexing=indexing,
        loads_seen=[
            ("start", load_start),
            ("memory", load_memory),
            ("retrieval", load_knowledge),
            ("indexing", load_indexing),
            ("end", load_end),
        ],
        size_gb=size_gb,
        queries=args.queries,
    )
    print(body)
    if not args.no_doc:
        from benchmarks.results import write_section

        write_section("scale", body)


def spelled(count: int) -> str:
    """10,000; 1 million; 2.5 million."""
    return f"{count / 1e6:g} million" if count >= 1_000_000 else f"{count:,}"


def _goal(met: bool) -> str:
    return "**met**" if met else "**not met**"


def report(
    *,
    sizes: Sizes,
    phases: dict[str, dict[str, float]],
    small_seconds: float,
    memory: dict[str, dict[str, float]],
    retrieval: dict[str, dict[str, float]],
    indexing: dict[str, dict[str, float]],
    loads_seen: list[tuple[str, str]],
    size_gb: float,
    queries: int,
) -> str:
    import platform

    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    lines = [
        f"## Scale run: {spelled(sizes.people)} people, {spelled(sizes.people * sizes.notes)} "
        f"notes, {spelled(sizes.chunks)} chunks",
        "",
        "Command: `make bench-scale` (runs `python -m benchmarks.scale_bench`; its own embedded "
        f"PostgreSQL and Redis under `.data/scale`). Machine: {machine}, shared with another "
        f"engineer's test suite. Measured {time.strftime('%Y-%m-%d')}. Database size "
        f"{size_gb:.1f} GB.",
        "",
        "Load average (1 / 5 / 15 min) at each stage: "
        + "; ".join(f"{stage} {value}" for stage, value in loads_seen)
        + ".",
        "",
        "**Generated** by COPY (resumable; a phase already there is skipped and its first "
        "time is kept):",
        "",
        "| what | rows | time |",
        "|---|---|---|",
        f"| people with their scope, {sizes.notes} notes each (index + topic files of fenced "
        f"entries from LoCoMo turns), a change set with each file's history row, 2 pending "
        f"proposals | {phases['people'].get('rows', 0):,.0f} people | "
        f"{phases['people'].get('seconds', 0):.0f} s |",
        f"| the large collection: chunks of 8 LoCoMo turns in {SOURCES} sources, search "
        f"columns and BM25 statistics by the table's generated columns and triggers | "
        f"{phases['large'].get('rows', 0):,.0f} chunks | {phases['large'].get('seconds', 0):.0f} s |",
        f"| its HNSW index (the product's, m {settings.KNOWLEDGE_HNSW_M}, ef_construction "
        f"{settings.KNOWLEDGE_HNSW_EF_CONSTRUCTION}, no parallel workers) over the chunks with "
        f"a vector | {phases['hnsw'].get('rows', 0):,.0f} vectors | "
        f"{phases['hnsw'].get('seconds', 0):.0f} s |",
        f"| small collections of {sizes.collection_chunks:,} chunks with vectors and their "
        f"HNSW index | {phases['small'].get('rows', 0):,.0f} | "
        f"{phases['small'].get('seconds', 0):.0f} s |",
        f"| the reference database: {SMALL_PEOPLE} people, the last with 10 notes "
        f"| {SMALL_PEOPLE} people | {small_seconds:.0f} s |",
        "",
        f"Vectors are random unit vectors ({DIM} dimensions, numpy), not embeddings of the "
        f"texts. {sizes.vector_chunks:,} of the large collection's {sizes.chunks:,} chunks "
        "carry one (the rest have none, as chunks a model has not embedded yet).",
        "",
    ]
    m = memory
    context_ratio = m["context"]["scale"] / m["context"]["small"]
    search_ratio = m["list_memory"]["scale"] / m["list_memory"]["small, 10 notes"]
    page_ratio = m["memory page"]["scale"] / m["memory page"]["small"]
    inbox_ratio = m["inbox page"]["scale"] / m["inbox page"]["small"]
    lines += [
        f"**Memory**, one person among the {sizes.people:,} ({sizes.notes} notes) against the "
        f"same call in the {SMALL_PEOPLE}-person database (a person with the same "
        f"{sizes.notes} notes, and one with 10), medians of {ROUNDS} alternated rounds "
        "(ms; queries per call in brackets):",
        "",
        f"| call | at scale | {SMALL_PEOPLE} people, same notes | {SMALL_PEOPLE} people, "
        "10 notes | scale ÷ small | goal |",
        "|---|---|---|---|---|---|",
    ]
    goals = {
        "context": (context_ratio, "flat in other people's rows (≤ 1.5x)", 1.5),
        "list_memory": (search_ratio, "≤ 1.5x the person with 10 notes", 1.5),
        "memory page": (page_ratio, "≤ 1.5x the small case", 1.5),
        "inbox page": (inbox_ratio, "≤ 1.5x the small case", 1.5),
    }
    names = {
        "context": "turn context (`turn_context_build`)",
        "list_memory": f"`list_memory` keyword search ({NOTE_QUERY!r})",
        "memory page": "Memory page (`GET /memory/`, test client)",
        "inbox page": "Inbox page (`GET /inbox/`, 2 proposals)",
    }
    for call, (ratio, goal, limit) in goals.items():
        row = m[call]
        lines.append(
            f"| {names[call]} | {row['scale']:.2f} ({row['scale queries']:.0f}) "
            f"| {row['small']:.2f} ({row['small queries']:.0f}) "
            f"| {row['small, 10 notes']:.2f} ({row['small, 10 notes queries']:.0f}) "
            f"| {ratio:.2f}x | {goal}: {_goal(ratio <= limit)} |"
        )
    r = retrieval
    lines += [
        "",
        f"**Retrieval**, the large collection ({sizes.chunks:,} chunks; vectors: "
        f"{sizes.vector_chunks:,}) and one small one ({sizes.collection_chunks:,}), "
        f"{queries} LoCoMo questions as keyword queries, vector queries near stored "
        "vectors (cosine about 0.7 to one), ms p50 / p95, medians of 3 alternated rounds. "
        "*Keyword* is `keyword_scored` (BM25 with the collection's statistics, at most "
        f"{settings.KNOWLEDGE_BM25_MAX_CANDIDATES} candidates, top 50); *vector* is "
        f"`vector_scored` through the HNSW index (ef_search {settings.KNOWLEDGE_HNSW_EF_SEARCH} "
        "as configured, top 10) against plain pgvector `ORDER BY embedding <=> q LIMIT 10` "
        "with the same ef_search (each query timed both ways, who goes first taking turns), "
        "recall@10 against exact search in numpy, *nearest found* the share of queries whose "
        "first hit is the stored vector the query was made near; *hybrid* is `rank` "
        "(sources read, vector top 50 with the relevance floor, keyword top 50, weighted "
        "fusion), the query embedding replaced by the prepared vector:",
        "",
        "| collection | keyword | vector (product) | vector (plain pgvector) "
        "| recall@10 product / plain | nearest found | hybrid (`rank`) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, label in (("large", f"{sizes.chunks:,} chunks"), ("small", "small")):
        k, v, h = r[f"keyword {name}"], r[f"vector {name}"], r[f"hybrid {name}"]
        lines.append(
            f"| {label} | {k['p50']:.1f} / {k['p95']:.1f} | {v['p50']:.1f} / {v['p95']:.1f} "
            f"| {v['plain p50']:.1f} / {v['plain p95']:.1f} "
            f"| {v['recall']:.3f} / {v['plain recall']:.3f} | {v['nearest']:.0%} "
            f"| {h['p50']:.1f} / {h['p95']:.1f} |"
        )
    plain = r["keyword plain ts_rank"]
    hybrid_p95 = r["hybrid large"]["p95"]
    vector_ratio = r["vector large"]["p95"] / r["vector large"]["plain p95"]
    lines += [
        "",
        f"Reference for keyword search on the large collection: plain `ts_rank` over every "
        f"match, 20 questions once: {plain['p50']:.0f} / {plain['p95']:.0f} ms.",
        f"Hybrid p95 ≤ 25 ms on the large collection: {_goal(hybrid_p95 <= 25)} "
        f"({hybrid_p95:.1f} ms). Vector product p95 ÷ plain p95: {vector_ratio:.2f}.",
        "",
    ]
    i = indexing
    share = i["default"]["per_s"] / i["small"]["per_s"]
    lines += [
        "**Indexing**: a new keyword-only collection of the LoCoMo sessions (272 text files, "
        "the ingest section's corpus) scanned and indexed by the product's job bodies "
        "(`scan_run`, `scan_confirm`, `index_run`), then deleted, at scale and in the "
        f"{SMALL_PEOPLE}-person database (no chunks), medians of {ROUNDS} alternated runs:",
        "",
        "| database | chunks | scan + index | chunks/s |",
        "|---|---|---|---|",
        f"| at scale | {i['default']['chunks']:.0f} | {i['default']['seconds']:.2f} s "
        f"| {i['default']['per_s']:.0f} |",
        f"| {SMALL_PEOPLE} people | {i['small']['chunks']:.0f} | {i['small']['seconds']:.2f} s "
        f"| {i['small']['per_s']:.0f} |",
        f"| at scale ÷ small | | | {share:.0%} |",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
