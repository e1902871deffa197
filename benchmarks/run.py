"""`make bench`: measure the hot paths and write docs/benchmarks.md.

Runs against its own embedded PostgreSQL and Redis under .data/bench.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("DATA_DIR", str(ROOT / ".data" / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault(
    "EMBEDDING_MODEL_PATH", str(Path(os.environ["DATA_DIR"]) / "models" / "all-MiniLM-L6-v2")
)
sys.path.insert(0, str(ROOT))

import django  # noqa: E402

from host import embedded  # noqa: E402

embedded.start()
django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from accounts.models import Agent, Membership, Organization, User  # noqa: E402
from accounts.services import messaging_binding_create  # noqa: E402
from addons.services import addon_setting_put  # noqa: E402
from benchmarks.results import write_section  # noqa: E402
from memory_addon.core import entries  # noqa: E402
from memory_addon.services.changes import file_write  # noqa: E402
from memory_addon.services.context import turn_context_build  # noqa: E402
from memory_addon.services.proposals import memory_change_request, proposal_confirm  # noqa: E402
from memory_addon.services.scopes import ensure_agent_scope, ensure_channel_scope, ensure_user_scope  # noqa: E402
from memory_addon.turns import Turn  # noqa: E402


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def timed(fn: Callable[[], object], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def full_index(label: str) -> str:
    """An index at its caps: person lines plus fenced machine entries, under 40 lines / 2 KiB."""
    parts = [f"- {label} pref {i}: short fact {i} -> {label}{i}.md" for i in range(12)]
    content = "\n".join(parts)
    i = 0
    while True:
        block = entries.render_entry(
            f"- {label} note {i}: learned {i} -> n{i}.md",
            entry_id=f"{i:04x}",
            origin="assistant",
            created=f"2026-0{1 + i % 9}-01",
            source="chat",
        )
        candidate = f"{content}\n\n{block}"
        if len(candidate.encode()) > 2000 or entries.count_lines(candidate) > 40:
            return content + "\n"
        content, i = candidate, i + 1


def bench_turn_context() -> dict[str, float]:
    user = User.objects.create_user(f"bench-{uuid.uuid4().hex[:8]}")
    organization = Organization.objects.create(
        name="Bench org", slug=f"bench-{uuid.uuid4().hex[:8]}", rules="Answer in English.\n" * 20
    )
    Membership.objects.create(organization=organization, user=user)
    agent = Agent.objects.create(owner=user, name="Helper", slug="helper", memory_allowed=True)
    binding, _ = messaging_binding_create(owner=user, bridge="telegram", external_id="bench")
    for label, scope in (
        ("agent", ensure_agent_scope(agent)),
        ("chat", ensure_channel_scope(binding)),
        ("user", ensure_user_scope(user)),
    ):
        file_write(
            user=user, scope=scope, path="index.md", content=full_index(label), base_sha256=""
        )
    turn = Turn(user=user, agent=agent, binding=binding)
    context = turn_context_build(turn)
    with CaptureQueriesContext(connection) as captured:
        turn_context_build(turn)
    statements = [query["sql"] for query in captured.captured_queries]

    def bare_sql() -> None:
        """The same statements, as Django sent them, through a plain cursor: no ORM."""
        with connection.cursor() as cursor:
            for sql in statements:
                cursor.execute(sql)
                if cursor.description:
                    cursor.fetchall()

    timed(lambda: turn_context_build(turn), 20)  # warm-up
    timed(bare_sql, 20)
    samples: list[float] = []
    bare: list[float] = []
    for _ in range(10):  # alternated, so load changes hit both alike
        samples += timed(lambda: turn_context_build(turn), 50)
        bare += timed(bare_sql, 50)
    return {
        "p50": percentile(samples, 0.5),
        "p95": percentile(samples, 0.95),
        "mean": statistics.mean(samples),
        "items": float(len(context.sent)),
        "omitted": float(context.omitted),
        "tokens": float(context.tokens),
        "queries": float(len(statements)),
        "bare_p50": percentile(bare, 0.5),
        "bare_p95": percentile(bare, 0.95),
    }


def bench_proposals(count: int = 200) -> dict[str, float]:
    users = [User.objects.create_user(f"bench-p-{uuid.uuid4().hex[:10]}") for _ in range(count)]
    operation = {"action": "add", "text": "- tea: likes green tea -> tea.md"}
    start = time.perf_counter()
    proposals = [
        memory_change_request(turn=Turn(user=u), operation=operation).proposal for u in users
    ]
    propose_seconds = time.perf_counter() - start
    start = time.perf_counter()
    for user, proposal in zip(users, proposals, strict=True):
        if proposal is None:
            raise RuntimeError("ask mode must create a proposal")
        proposal_confirm(user=user, proposal=proposal)
    confirm_seconds = time.perf_counter() - start
    auto_users = [
        User.objects.create_user(f"bench-a-{uuid.uuid4().hex[:10]}") for _ in range(count)
    ]
    for user in auto_users:
        addon_setting_put(user=user, addon="memory", key="save-mode", value="auto")
    start = time.perf_counter()
    for user in auto_users:
        memory_change_request(turn=Turn(user=user), operation=operation)
    auto_seconds = time.perf_counter() - start
    return {
        "propose_per_s": count / propose_seconds,
        "confirm_per_s": count / confirm_seconds,
        "auto_per_s": count / auto_seconds,
    }


def main() -> None:
    call_command("migrate", interactive=False, verbosity=0)
    try:
        from host.local_model import assemble_minilm

        assemble_minilm(Path(os.environ["EMBEDDING_MODEL_PATH"]))
    except FileNotFoundError as error:
        print(f"Local model not available ({error}); vector rows are skipped.")
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    # Imported where it runs: the BM25 reference (bm25s) comes with the bench extra only,
    # and the other sections run without it.
    if sys.argv[1:] == ["retrieval"]:  # one section: `python -m benchmarks.run retrieval`
        from benchmarks.retrieval_bench import run as retrieval_run

        print(retrieval_run(write_section, machine))
        return
    if sys.argv[1:] == ["conflicts"]:  # one section: `python -m benchmarks.run conflicts`
        from benchmarks.conflict_bench import run as conflict_run

        print(conflict_run(write_section, machine))
        return
    if sys.argv[1:] == ["embedding-models"]:  # `python -m benchmarks.run embedding-models`
        from benchmarks.embedding_models_bench import run as embedding_models_run

        print(embedding_models_run(write_section, machine))
        return
    from benchmarks.memory_scale_bench import run as memory_scale_run

    if sys.argv[1:] == ["memory-scale"]:  # `python -m benchmarks.run memory-scale`
        print(memory_scale_run(write_section, machine))
        return
    from benchmarks.fair_chat_bench import run as fair_chat_run

    if sys.argv[1:] == ["fair-chat"]:  # one section: `python -m benchmarks.run fair-chat`
        print(fair_chat_run(write_section, machine))
        return
    if sys.argv[1:] == ["chat"]:  # one section: `python -m benchmarks.run chat`
        from benchmarks.chat_bench import run as chat_run

        print(chat_run(write_section, machine))
        return
    context = bench_turn_context()
    proposals = bench_proposals()
    memory_only = sys.argv[1:] == ["memory"]  # `python -m benchmarks.run memory`
    body = f"""## Memory: turn context and proposals

Command: `make bench` (runs `python -m benchmarks.run`; embedded PostgreSQL 16 and Redis
under `.data/bench`). Machine: {machine}. Measured {time.strftime("%Y-%m-%d")}.

Turn context for a user whose organization rules, agent, conversation and personal
indexes are all at their caps (40 lines / 2 KiB each), 500 builds after 20 warm-up builds,
alternated in tens of 50 with the build's own SQL statements run through a bare cursor
(the reference: what the database part alone costs):

| metric | value |
|---|---|
| build time p50 / p95 | {context["p50"]:.2f} / {context["p95"]:.2f} ms |
| queries per build | {context["queries"]:.0f} |
| the same SQL through a bare cursor, p50 / p95 | {context["bare_p50"]:.2f} / {context["bare_p95"]:.2f} ms |
| build ÷ bare SQL (p50) | {context["p50"] / context["bare_p50"]:.1f}x |
| items sent / left out | {context["items"]:.0f} / {context["omitted"]:.0f} |
| estimated tokens in the block | {context["tokens"]:.0f} |

Model-initiated changes, 200 each, one transaction per change, sequential:

| operation | throughput |
|---|---|
| propose (ask mode: dry-run checks, store) | {proposals["propose_per_s"]:.0f} / s |
| confirm (apply as a change set with history) | {proposals["confirm_per_s"]:.0f} / s |
| save at once (auto mode) | {proposals["auto_per_s"]:.0f} / s |
"""
    write_section("memory", body)
    print(body)
    if memory_only:
        return
    print(memory_scale_run(write_section, machine))
    from benchmarks.knowledge_bench import run as knowledge_run

    print(knowledge_run(write_section, machine))
    from benchmarks.ingest_bench import run as ingest_run

    print(ingest_run(write_section, machine))
    from benchmarks.vector_bench import run as vector_run

    print(vector_run(write_section, machine))
    from benchmarks.retrieval_bench import run as retrieval_run

    print(retrieval_run(write_section, machine))
    from benchmarks.embedding_models_bench import run as embedding_models_run

    print(embedding_models_run(write_section, machine))
    from benchmarks.secret_guard_bench import run as secret_guard_run

    print(secret_guard_run(write_section, machine))
    from benchmarks.chat_bench import run as chat_run

    print(chat_run(write_section, machine))
    print(fair_chat_run(write_section, machine))
    from benchmarks.bridges_bench import run as bridges_run

    print(bridges_run(write_section, machine))
    from benchmarks.http_bench import run as http_run

    print(http_run(write_section, machine))
    # Each on its own data folder: a new stack per start, a cluster of two hosts.
    from benchmarks import footprint_bench, scale_out_bench

    footprint_bench.main()
    scale_out_bench.main()


if __name__ == "__main__":
    main()
