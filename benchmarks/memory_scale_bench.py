"""Notes search and the Memory tab as a person's notes grow, and automatic saves under
concurrent clients.

Run by `make bench` (the "memory-scale" section) or alone with
`python -m benchmarks.run memory-scale`. Each figure is set against a reference measured
in the same run, alternated, medians of three rounds.
"""

from __future__ import annotations

import os
import re
import statistics
import threading
import time
import uuid
from collections.abc import Callable

from django.db import connection, connections

from accounts.models import User
from addons.services import addon_setting_put
from memory_addon.core import entries
from memory_addon.models import MemoryFile, MemoryScope
from memory_addon.services.note_search import KEYWORD_SQL, _keyword
from memory_addon.services.proposals import memory_change_request
from memory_addon.services.scopes import ensure_user_scope
from memory_addon.turns import Turn

FILES = 50  # under the 100-file cap of a scope
QUERY = "violin lessons"
# What the keyword search ran before the stored vector: every file parsed per query.
PARSED_PER_QUERY_SQL = KEYWORD_SQL.replace("search_vector", "to_tsvector('simple', content)")


def _scope_with_notes(notes: int) -> MemoryScope:
    user = User.objects.create_user(f"bench-scale-{uuid.uuid4().hex[:10]}")
    scope = ensure_user_scope(user)
    per_file = max(1, notes // FILES)
    files = []
    for f in range(min(FILES, notes)):
        blocks = [
            entries.render_entry(
                f"- note {f}.{n}: met a friend for coffee on day {n} of month {f}",
                entry_id=f"{f:03x}{n:04x}",
                origin="assistant",
                created="2026-11-01",
                source="chat",
            )
            for n in range(per_file)
        ]
        files.append(MemoryFile(scope=scope, path=f"topic-{f}.md", content="\n".join(blocks)))
    files[0].content += "\n- hobby: takes violin lessons on Thursdays\n"
    for file in files:
        file.set_content(file.content)
    MemoryFile.objects.bulk_create(files)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memory_addon_memoryfile")
    return scope


def _median_ms(fn: Callable[[], object], runs: int = 30) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def _parsed_per_query(scope_id: int) -> Callable[[], object]:
    from host.core.fulltext import or_query

    ts_query = or_query(QUERY)

    def run() -> object:
        with connection.cursor() as cursor:
            cursor.execute(PARSED_PER_QUERY_SQL, [ts_query, [scope_id], ts_query, 20])
            return cursor.fetchall()

    return run


def bench_search_growth() -> dict[str, float]:
    small, large = _scope_with_notes(10), _scope_with_notes(5000)
    rounds: dict[str, list[float]] = {"stored 10": [], "stored 5000": [], "parsed 5000": []}
    for _ in range(3):
        rounds["stored 10"].append(_median_ms(lambda: _keyword([small.pk], QUERY, 20)))
        rounds["stored 5000"].append(_median_ms(lambda: _keyword([large.pk], QUERY, 20)))
        rounds["parsed 5000"].append(_median_ms(_parsed_per_query(large.pk)))
    if not _keyword([large.pk], QUERY, 20):
        raise RuntimeError("the violin note must be found")
    return {name: statistics.median(values) for name, values in rounds.items()}


def _read_and_scan_every_file(scope: MemoryScope) -> Callable[[], object]:
    """What the Memory tab did per view before: every file read whole and scanned."""
    from host.core.secret_guard import find_secret

    def run() -> object:
        return [find_secret(f.content) for f in MemoryFile.objects.filter(scope=scope)]

    return run


def bench_memory_tab() -> dict[str, float]:
    """The Memory tab's data (scope_page: the index's rows, what is sent, secret banners) at
    10 and at 5,000 notes, against reading and scanning every file as it used to."""
    from memory_addon.pages import scope_page
    from memory_addon.services.policy import policy_for

    small, large = _scope_with_notes(10), _scope_with_notes(5000)
    owners = {scope.pk: User.objects.get(memory_scopes=scope) for scope in (small, large)}
    policies = {pk: policy_for(owner) for pk, owner in owners.items()}

    def tab(scope: MemoryScope) -> Callable[[], object]:
        return lambda: scope_page(owners[scope.pk], scope, policies[scope.pk])

    for scope in (small, large):
        tab(scope)()  # a first view scans each file once
    rounds: dict[str, list[float]] = {"tab 10": [], "tab 5000": [], "scan 5000": []}
    for _ in range(3):
        rounds["tab 10"].append(_median_ms(tab(small)))
        rounds["tab 5000"].append(_median_ms(tab(large)))
        rounds["scan 5000"].append(_median_ms(_read_and_scan_every_file(large)))
    return {name: statistics.median(values) for name, values in rounds.items()}


def _concurrently(clients: int, seconds: float, work: Callable[[int], None]) -> float:
    """Operations per second of `clients` threads, each with its own connection."""
    done = [0] * clients
    stop_at = time.monotonic() + seconds

    def client(index: int) -> None:
        try:
            while time.monotonic() < stop_at:
                work(index)
                done[index] += 1
        finally:
            connections.close_all()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(done) / seconds


def bench_auto_saves(clients: int = 10, seconds: float = 5.0) -> dict[str, float]:
    users = [
        User.objects.create_user(f"bench-auto-{uuid.uuid4().hex[:10]}") for _ in range(clients)
    ]
    for user in users:
        addon_setting_put(user=user, addon="memory", key="save-mode", value="auto")
    entry_ids = []
    for user in users:
        memory_change_request(
            turn=Turn(user=user), operation={"action": "add", "text": "- tea: likes tea"}
        )
        index = MemoryFile.objects.get(scope=ensure_user_scope(user), path="index.md")
        found = re.search(r"memory:entry id=(\w+)", index.content)
        if found is None:
            raise RuntimeError("the first automatic save made no entry")
        entry_ids.append(found.group(1))
    counter = [0] * clients

    def auto_save(index: int) -> None:
        # A new fact for the same entry each time, so the index stays under its caps.
        counter[index] += 1
        # Each save is its own reply of a chat (the per-reply cap counts per message).
        outcome = memory_change_request(
            turn=Turn(
                user=users[index],
                conversation_ref="bench",
                message_ref=f"{index}-{counter[index]}",
                reply_ref_trusted=True,
            ),
            operation={
                "action": "replace",
                "entry_id": entry_ids[index],
                "text": f"- tea: had cup number {counter[index]}",
            },
        )
        if outcome.change_set is None:
            raise RuntimeError(f"an automatic save was not applied: {outcome.message}")

    def bare_insert(index: int) -> None:
        from django.db import transaction

        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO bench_bare_saves (owner, line) VALUES (%s, %s)",
                [index, f"- fact {index}"],
            )

    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE IF NOT EXISTS bench_bare_saves (id bigserial PRIMARY KEY,"
            " owner int, line text, at timestamptz DEFAULT now())"
        )
    rounds: dict[str, list[float]] = {"auto": [], "bare": []}
    for _ in range(3):
        rounds["auto"].append(_concurrently(clients, seconds, auto_save))
        rounds["bare"].append(_concurrently(clients, seconds, bare_insert))
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE bench_bare_saves")
    return {name: statistics.median(values) for name, values in rounds.items()}


def run(write_section: Callable[[str, str], None], machine: str) -> str:
    load_before = os.getloadavg()[0]
    search = bench_search_growth()
    tab = bench_memory_tab()
    saves = bench_auto_saves()
    load = f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after"
    body = f"""## Memory at scale: notes search and the Memory tab as notes grow, automatic saves

Command: `python -m benchmarks.run memory-scale` (also part of `make bench`). Machine:
{machine}, {load}.
Measured {time.strftime("%Y-%m-%d")}. Medians of three alternated rounds.

`list_memory`'s keyword search over one person's notes ({FILES} topic files, the query
matches one note), before and after the stored, GIN-indexed search vector (memory_addon
migration 0010). "Parsed per query" is the old statement, run in the same round:

| notes | stored vector | parsed per query |
|---|---|---|
| 10 | {search["stored 10"]:.2f} ms | |
| 5,000 | {search["stored 5000"]:.2f} ms | {search["parsed 5000"]:.2f} ms |
| 5,000 ÷ 10 | {search["stored 5000"] / search["stored 10"]:.2f}x (goal ≤ 1.5x) | |

The Memory tab's data (`scope_page`: the index's rows, what is sent, the secret banners)
for the same two people, after a first view; "every file read and scanned" is what each
view did before a file's secret finding was kept by its content hash:

| notes | Memory tab | every file read and scanned |
|---|---|---|
| 10 | {tab["tab 10"]:.2f} ms | |
| 5,000 | {tab["tab 5000"]:.2f} ms | {tab["scan 5000"]:.2f} ms |
| 5,000 ÷ 10 | {tab["tab 5000"] / tab["tab 10"]:.2f}x (goal ≤ 1.5x) | |

Automatic saves (auto mode, a new text for one note per call through
`memory_change_request`: policy, secret scan, lock, change set with history, live push),
10 client threads with their own connections, no page open (the push renders nothing),
against bare one-row INSERT transactions from 10 threads:

| path | per second |
|---|---|
| automatic saves | {saves["auto"]:.0f} |
| bare INSERT transactions | {saves["bare"]:.0f} |
| saves ÷ bare | {saves["auto"] / saves["bare"]:.2f} (goal: ≥ 200 saves/s) |
"""
    write_section("memory-scale", body)
    return body
