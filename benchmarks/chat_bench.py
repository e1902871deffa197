"""Chat turns through the host against the same fake model called directly (`make bench`).

The model is the test suite's fake OpenAI-compatible server at a fixed pace, so what
differs between the two columns is the host: memory block, retrieval from an attached
10k-chunk collection, tool schemas, persistence and live pushes.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import openai
from django.conf import settings
from django.db import connections

from accounts.models import Agent, AIProfile, Membership, Organization, User
from benchmarks.knowledge_bench import _fill_synthetic
from chat import runner
from chat.models import Conversation, Message
from chat.runner import turn_run
from chat.tasks import turn_run_task
from knowledge import services as knowledge
from knowledge.models import Job, Store, StoreShare
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import ensure_agent_scope, ensure_user_scope
from tests.fake_openai import DIMENSION, FakeOpenAI, fake_vector

ANSWER = " ".join(f"word{i}" for i in range(40))
FIRST_TOKEN_DELAY = 0.2  # seconds the fake model "thinks" before its first token
CHUNK_DELAY = 0.005  # seconds between its chunks
RUNS = 40
MANY = 50  # chats at once, against as many direct calls at once (issue 26)


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _script(**extra: object) -> dict[str, object]:
    return {"content": ANSWER, "stall": FIRST_TOKEN_DELAY, "chunk_delay": CHUNK_DELAY, **extra}


@contextmanager
def _model_server() -> Iterator[str]:
    """The fake model in its own process, as a real model server is: in this process it
    would take the interpreter lock from the host while it parses prompts and streams."""
    process = subprocess.Popen(  # noqa: S603 - our own fixed command
        [sys.executable, "-m", "tests.fake_openai", json.dumps(_script())],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=Path(__file__).resolve().parent.parent,
    )
    try:
        assert process.stdout is not None  # noqa: S101
        yield process.stdout.readline().decode().strip()
    finally:
        assert process.stdin is not None  # noqa: S101
        process.stdin.close()
        process.wait(timeout=15)


def _direct(base_url: str, runs: int) -> tuple[list[float], list[float]]:
    client = openai.OpenAI(base_url=base_url, api_key="bench", max_retries=0)
    firsts, totals = [], []
    for _ in range(runs):
        start = time.perf_counter()
        first = None
        stream = client.chat.completions.create(
            model="fake-chat", messages=[{"role": "user", "content": "hello"}], stream=True
        )
        for chunk in stream:
            if first is None and chunk.choices and chunk.choices[0].delta.content:
                first = time.perf_counter() - start
        totals.append((time.perf_counter() - start) * 1000)
        firsts.append((first or 0.0) * 1000)
    return firsts, totals


def _ask(conversation: Conversation, text: str) -> Message:
    """The person's message and an answer placeholder, as message_send stores them."""
    Message.objects.create(conversation=conversation, role=Message.Role.USER, content=text)
    return Message.objects.create(
        conversation=conversation,
        role=Message.Role.ASSISTANT,
        state=Message.State.STREAMING,
        model=conversation.ai_profile.model if conversation.ai_profile else "",
    )


def _agent_with_full_indexes(user: User) -> Agent:
    """The person's agent, and the person's and the agent's indexes at their caps."""
    from benchmarks.run import full_index

    agent = Agent.objects.create(
        owner=user, name="Helper", slug="helper", memory_allowed=True, may_propose=True
    )
    for scope, label in ((ensure_user_scope(user), "user"), (ensure_agent_scope(agent), "agent")):
        file_write(
            user=user, scope=scope, path="index.md", content=full_index(label), base_sha256=""
        )
    return agent


def _setup(base_url: str) -> tuple[User, Conversation]:
    user = User.objects.create_user(f"chat-bench-{uuid.uuid4().hex[:8]}")
    organization = Organization.objects.create(
        name="Bench org", slug=f"chat-{uuid.uuid4().hex[:8]}", rules="Answer in English.\n" * 20
    )
    Membership.objects.create(organization=organization, user=user)
    agent = _agent_with_full_indexes(user)
    chat_profile = AIProfile.objects.create(
        owner=user, name="fake chat", base_url=base_url, model="fake-chat", is_default=True
    )
    embed_profile = AIProfile.objects.create(
        owner=user,
        name="fake embed",
        base_url=base_url,
        model="fake-embed",
        role=AIProfile.Role.EMBEDDING,
    )
    store = Store.objects.create(
        owner=user,
        name="10k chunks",
        provider=Store.Provider.OPENAI,
        model_name="fake-embed",
        dimension=DIMENSION,
        ai_profile=embed_profile,
    )
    rng = np.random.default_rng(7)
    base = np.array([fake_vector(f"alpacas llamas andes topic {i}") for i in range(50)])
    vectors = np.repeat(base, 200, axis=0) + rng.normal(0, 0.05, (10_000, DIMENSION))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    _fill_synthetic(store, vectors, rng)
    conversation = Conversation.objects.create(owner=user, ai_profile=chat_profile, agent=agent)
    conversation.stores.add(store)
    return user, conversation


@contextmanager
def _learning_timed(durations: list[float]) -> Iterator[None]:
    """Times the rule check that runs after an answer is stored and shown (M13)."""
    original = runner._announce_complete

    def timed(message: Message) -> None:
        start = time.perf_counter()
        try:
            original(message)
        finally:
            durations.append((time.perf_counter() - start) * 1000)

    runner._announce_complete = timed
    try:
        yield
    finally:
        runner._announce_complete = original


def _through_app(
    conversation: Conversation, runs: int, learning: list[float] | None = None
) -> tuple[list[float], list[float]]:
    """Time to first token and time until the answer is stored and shown; the rule
    check after it (M13) goes to `learning`, as the person no longer waits for it."""
    firsts, totals = [], []
    learning = [] if learning is None else learning
    for i in range(runs):
        answer = _ask(conversation, f"Tell me about alpacas and llamas ({i})")
        before = len(learning)
        with _learning_timed(learning):
            start = time.perf_counter()
            turn_run(message_id=answer.pk)  # what a chat worker thread runs
            elapsed = (time.perf_counter() - start) * 1000
        totals.append(elapsed - sum(learning[before:]))
        answer.refresh_from_db()
        if answer.state != Message.State.COMPLETE:
            raise RuntimeError(f"a bench turn ended {answer.state}: {answer.error}")
        assert answer.first_token_at and answer.started_at  # noqa: S101
        firsts.append((answer.first_token_at - answer.started_at).total_seconds() * 1000)
    return firsts, totals


def _worker(env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(  # noqa: S603 - our own fixed command
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            *args,
            "--loglevel",
            "WARNING",
            "--without-gossip",
            "--without-mingle",
            "--hostname",
            f"bench-{uuid.uuid4().hex[:6]}@%h",
        ],
        env=env,
    )


def _index_job_running(folder: Path) -> Job:
    """A real index job with the local model on the default queue: CPU-bound for minutes."""
    owner = User.objects.create_superuser(f"bench-admin-{uuid.uuid4().hex[:6]}")
    folder.mkdir(parents=True, exist_ok=True)
    words = [
        "alpaca",
        "llama",
        "vicuna",
        "guanaco",
        "andes",
        "wool",
        "herd",
        "valley",
        "river",
        "mountain",
    ]
    rng = np.random.default_rng(3)
    for n in range(300):
        (folder / f"doc{n}.txt").write_text(" ".join(rng.choice(words, 900)))
    store = knowledge.store_create(owner=owner, name="busy", provider=Store.Provider.FASTEMBED)
    _source, scan = knowledge.source_add_folder(store=store, path=str(folder))
    deadline = time.monotonic() + 300
    while Job.objects.get(pk=scan.pk).state != Job.State.REVIEW:  # the default worker scans
        if time.monotonic() > deadline:
            raise RuntimeError("the scan of the busy collection did not finish")
        time.sleep(0.2)  # a benchmark waits by polling; tests never do
    scan.refresh_from_db()
    return knowledge.scan_confirm(scan_job=scan)


def _concurrent_chats(fake: FakeOpenAI, user: User, count: int = 20) -> dict[str, float]:
    """`count` chats at once against a model that takes 5 s, while an index job runs."""
    profile = AIProfile.objects.create(
        owner=user, name="fake chat (scripted)", base_url=fake.base_url, model="fake-chat"
    )
    workdir = Path(tempfile.mkdtemp(prefix="chat-bench-"))
    env = {
        **os.environ,
        "DATABASE_URL": settings.DATABASE_URL,
        "REDIS_URL": settings.REDIS_URL,
        "DATA_DIR": str(settings.DATA_DIR),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "KNOWLEDGE_ALLOWED_ROOTS": str(workdir),
        # As serve gives a chat worker: each turn may hold three connections at once.
        "DATABASE_POOL_MAX": str(3 * max(count, settings.CHAT_WORKER_CONCURRENCY) + 2),
    }
    settings.KNOWLEDGE_ALLOWED_ROOTS = [str(workdir)]
    from config.celery import app

    app.control.purge()
    chat_worker = _worker(
        env,
        "-Q",
        settings.CHAT_QUEUE,
        "--pool",
        "threads",
        "--concurrency",
        str(max(count, settings.CHAT_WORKER_CONCURRENCY)),
    )
    default_worker = _worker(env, "--pool", "solo")
    try:
        from host.tasks import ping

        ping.apply_async(queue=settings.CHAT_QUEUE).get(timeout=120)
        ping.delay().get(timeout=120)
        job = _index_job_running(workdir / "docs")
        deadline = time.monotonic() + 120
        while Job.objects.get(pk=job.pk).state != Job.State.RUNNING:
            if time.monotonic() > deadline:
                raise RuntimeError("the index job did not start")
            time.sleep(0.2)  # a benchmark waits by polling; tests never do
        fake.first_content_at.clear()
        answers = []
        for n in range(count):
            conversation = Conversation.objects.create(owner=user, ai_profile=profile)
            fake.chat_replies.append({"content": ANSWER, "stall": 5.0, "chunk_delay": 0.01})
            answer = _ask(conversation, f"concurrent {n}")
            turn_run_task.apply_async(args=(answer.pk,), queue=settings.CHAT_QUEUE)
            answers.append(answer)
        ids = [a.pk for a in answers]
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if not Message.objects.filter(pk__in=ids, state=Message.State.STREAMING).exists():
                break
            time.sleep(0.2)
        index_state = Job.objects.get(pk=job.pk).state
        lags = []
        for n, answer in enumerate(answers):
            answer.refresh_from_db()
            model_at = fake.first_content_at.get(f"concurrent {n}")
            if answer.state == Message.State.COMPLETE and answer.first_token_at and model_at:
                lags.append(answer.first_token_at.timestamp() - model_at)
        return {
            "chats": count,
            "answered": len(lags),
            "lag_max": max(lags) * 1000 if lags else float("nan"),
            "lag_p50": statistics.median(lags) * 1000 if lags else float("nan"),
            "index_running": index_state == Job.State.RUNNING,
        }
    finally:
        for process in (chat_worker, default_worker):
            process.terminate()
        for process in (chat_worker, default_worker):
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:  # the solo worker is mid-index on purpose
                process.kill()
                process.wait(timeout=15)
        connections.close_all()


def _direct_at_once(base_url: str, count: int) -> list[float]:
    """`count` streamed calls to the model started together; each one's total in ms."""
    totals = [0.0] * count
    start_together = threading.Barrier(count)

    def one(index: int) -> None:
        client = openai.OpenAI(base_url=base_url, api_key="bench", max_retries=0)
        start_together.wait()
        start = time.perf_counter()
        stream = client.chat.completions.create(
            model="fake-chat", messages=[{"role": "user", "content": "hello"}], stream=True
        )
        for _ in stream:
            pass
        totals[index] = (time.perf_counter() - start) * 1000

    threads = [threading.Thread(target=one, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return totals


def _person_like(conversation: Conversation, n: int) -> Conversation:
    """Another person of the same organization with the same context: rules, their own
    full indexes and agent, the 10k-chunk collection shared with the organization."""
    owner = conversation.owner
    organization = Membership.objects.filter(user=owner).get().organization
    user = User.objects.create_user(f"chat-bench-many-{n}-{uuid.uuid4().hex[:6]}")
    Membership.objects.create(organization=organization, user=user)
    agent = _agent_with_full_indexes(user)
    assert conversation.ai_profile is not None  # noqa: S101
    profile = AIProfile.objects.create(
        owner=user,
        name="fake chat",
        base_url=conversation.ai_profile.base_url,
        model="fake-chat",
        is_default=True,
    )
    chat = Conversation.objects.create(owner=user, ai_profile=profile, agent=agent)
    for store in conversation.stores.all():
        StoreShare.objects.get_or_create(store=store, organization=organization)
        chat.stores.add(store)
    return chat


def _app_at_once(conversation: Conversation, count: int) -> list[float]:
    """`count` people's turns queued together to a chat worker with a thread for each
    (and the database connections serve gives such a worker), each with the full context
    of `conversation`: from the moment it was queued until its answer was stored, in ms.
    One person each: one person's own answers wait beyond CHAT_MAX_ANSWERS_IN_FLIGHT."""
    env = {
        **os.environ,
        "DATABASE_URL": settings.DATABASE_URL,
        "REDIS_URL": settings.REDIS_URL,
        "DATA_DIR": str(settings.DATA_DIR),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_POOL_MAX": str(3 * count + 2),
    }
    from config.celery import app

    app.control.purge()
    worker = _worker(
        env, "-Q", settings.CHAT_QUEUE, "--pool", "threads", "--concurrency", str(count)
    )
    try:
        from host.tasks import ping

        ping.apply_async(queue=settings.CHAT_QUEUE).get(timeout=120)
        answers = [
            _ask(_person_like(conversation, n), f"Tell me about alpacas and llamas ({n})")
            for n in range(count)
        ]
        connections.close_all()  # the worker's threads, not this process, use the database now
        queued = {}
        for answer in answers:
            queued[answer.pk] = time.time()
            turn_run_task.apply_async(args=(answer.pk,), queue=settings.CHAT_QUEUE)
        ids = list(queued)
        deadline = time.monotonic() + 300
        while Message.objects.filter(pk__in=ids, state=Message.State.STREAMING).exists():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{count} chats at once did not finish within 300 s")
            time.sleep(0.2)  # a benchmark waits by polling; tests never do
        totals = []
        for answer in Message.objects.filter(pk__in=ids):
            if answer.state != Message.State.COMPLETE or answer.finished_at is None:
                raise RuntimeError(f"a turn of the {count} at once ended {answer.state}")
            totals.append((answer.finished_at.timestamp() - queued[answer.pk]) * 1000)
        return totals
    finally:
        worker.terminate()
        worker.wait(timeout=30)
        connections.close_all()


def run(write_section: Callable[[str, str], None], machine: str) -> str:
    with _model_server() as base_url:
        user, conversation = _setup(base_url)
        _direct(base_url, 3)
        _through_app(conversation, 3)  # warm-up of both paths
        direct_first, direct_total = _direct(base_url, RUNS)
        learning: list[float] = []
        app_first, app_total = _through_app(conversation, RUNS, learning)
        _direct_at_once(base_url, MANY)  # warm-up: the model server's threads
        direct_many = _direct_at_once(base_url, MANY)
        app_many = _app_at_once(conversation, MANY)
    model_total = statistics.median(direct_total)
    overhead = [total - model_total for total in app_total]
    fake = FakeOpenAI().start()  # in process: this part scripts each reply
    try:
        concurrent = _concurrent_chats(fake, user)
    finally:
        fake.stop()
    ratio_first = statistics.median(app_first) / statistics.median(direct_first)
    ratio_total = statistics.median(app_total) / statistics.median(direct_total)
    body = f"""## Chat: the host's cost per turn

Command: `make bench` (`benchmarks/chat_bench.py`). Machine: {machine}. Measured
{time.strftime("%Y-%m-%d")}. The model is the suite's fake OpenAI-compatible server, run in
its own process as a real model server is, at a fixed pace ({FIRST_TOKEN_DELAY * 1000:.0f} ms to the first token, then 40 chunks
{CHUNK_DELAY * 1000:.0f} ms apart). Through the app, each turn has organization rules and
full agent and personal indexes, the memory tools, and one attached collection of
10,000 chunks (hybrid retrieval with a query embedding from the same fake server); it is
stored and pushed live as in a chat worker. {RUNS} turns each, after warm-up:

| | direct to the model | through the app | ratio |
|---|---|---|---|
| time to first token p50 | {statistics.median(direct_first):.0f} ms | {statistics.median(app_first):.0f} ms | {ratio_first:.2f}x |
| total time p50 | {statistics.median(direct_total):.0f} ms | {statistics.median(app_total):.0f} ms | {ratio_total:.2f}x |

Host overhead per turn (through the app until the answer is stored and shown, minus the
model's own time; it includes context, retrieval, persistence and pushes):
p50 {percentile(overhead, 0.5):.0f} ms, p95 {percentile(overhead, 0.95):.0f} ms
(target: p95 under 50 ms). After that, on the same worker thread, the rule check of M13
looks at the finished answer: p50 {percentile(learning, 0.5):.1f} ms,
p95 {percentile(learning, 0.95):.1f} ms (the person no longer waits for it; it is not in
the total above).

{MANY} chats at once, each turn with the context above, queued together to a chat worker
with a thread for each, against {MANY} calls at once straight to the model (issue 26's goal:
p95 within 2x):

| {MANY} at once | direct to the model | through the app | ratio |
|---|---|---|---|
| total time p50 | {percentile(direct_many, 0.5):.0f} ms | {percentile(app_many, 0.5):.0f} ms | {percentile(app_many, 0.5) / percentile(direct_many, 0.5):.2f}x |
| total time p95 | {percentile(direct_many, 0.95):.0f} ms | {percentile(app_many, 0.95):.0f} ms | {percentile(app_many, 0.95) / percentile(direct_many, 0.95):.2f}x |

{concurrent["chats"]} chats at once against a model that takes 5 s to its first token,
on the chat queue's thread pool, while a local-model index job runs on the default
queue (still running at the end: {"yes" if concurrent["index_running"] else "no"}):
{concurrent["answered"]} answered; each first token reached the stored answer
{concurrent["lag_p50"]:.0f} ms (p50) and at most {concurrent["lag_max"]:.0f} ms after the
model sent it (target: within 1 s).
"""
    write_section("chat", body)
    return body
