"""Fair chat: one person's flood of answers does not delay another person's first token.

Person A asks for answers from four threads as fast as the host takes them (each send is
the service the chat page and the API call); person B meanwhile sends one message at a
time and waits for its answer. B's time from send to first token is compared with the
same sends on an idle host. The model is the suite's fake server in its own process
(200 ms to the first token); the answers are written by a real chat worker (the threads
pool `manage.py serve` starts). This section alone: `.venv/bin/python -m benchmarks.run
fair-chat`.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.db import connection
from django.utils import timezone

from accounts.models import AIProfile, User
from benchmarks.chat_bench import _worker, percentile
from chat.models import Conversation, Message
from chat.services import AnswersBusy, ChatRefused, conversation_create, message_send

SENDS = 20
FLOOD_THREADS = 4
FLOOD_CONVERSATIONS = 40
# A's answers are long (about 2 s each), so A always has its answers in flight.
REPLY = {"content": " ".join(f"w{i}" for i in range(200)), "stall": 0.2, "chunk_delay": 0.01}


@contextmanager
def _model() -> Iterator[str]:
    process = subprocess.Popen(  # noqa: S603 - our own fixed command
        [sys.executable, "-m", "tests.fake_openai", json.dumps(REPLY)],
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


def _person(base_url: str, label: str) -> User:
    user = User.objects.create_user(f"fair-{label}-{uuid.uuid4().hex[:8]}")
    AIProfile.objects.create(
        owner=user, name="fake", base_url=base_url, model="fake-chat", is_default=True
    )
    return user


def _first_tokens(user: User, count: int) -> list[float]:
    """B's sends, one after another: seconds from the send to the stored first token."""
    conversation = conversation_create(user=user)
    seconds = []
    for n in range(count):
        sent = timezone.now()
        answer = message_send(user=user, conversation=conversation, text=f"Question {n}")
        deadline = time.monotonic() + 120
        while True:
            answer.refresh_from_db(fields=["state", "first_token_at"])
            if answer.state != Message.State.STREAMING:
                break
            if time.monotonic() > deadline:
                raise RuntimeError("B's answer did not finish")
            time.sleep(0.02)  # a benchmark waits by polling; tests never do
        if answer.state != Message.State.COMPLETE or answer.first_token_at is None:
            raise RuntimeError(f"B's answer ended {answer.state}")
        seconds.append((answer.first_token_at - sent).total_seconds())
    return seconds


def _flood(user: User, stop: threading.Event, counts: dict[str, int]) -> list[threading.Thread]:
    conversations = [conversation_create(user=user) for _ in range(FLOOD_CONVERSATIONS)]
    lock = threading.Lock()

    def send_all(mine: list[Conversation]) -> None:
        try:
            while not stop.is_set():
                for conversation in mine:
                    try:
                        message_send(user=user, conversation=conversation, text="Again")
                        outcome = "accepted"
                    except AnswersBusy:
                        outcome = "refused"
                    except ChatRefused:  # that conversation still has its answer going
                        outcome = "busy"
                    with lock:
                        counts[outcome] += 1
        finally:
            connection.close()

    threads = [
        threading.Thread(target=send_all, args=(conversations[n::FLOOD_THREADS],), daemon=True)
        for n in range(FLOOD_THREADS)
    ]
    for thread in threads:
        thread.start()
    return threads


def run(write_section: Callable[[str, str], None], machine: str) -> str:
    from config.celery import app
    from host.tasks import ping

    env = {
        **os.environ,
        "DATABASE_URL": settings.DATABASE_URL,
        "REDIS_URL": settings.REDIS_URL,
        "DATA_DIR": str(settings.DATA_DIR),
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }
    app.control.purge()
    concurrency = settings.CHAT_WORKER_CONCURRENCY
    worker = _worker(
        env, "-Q", settings.CHAT_QUEUE, "--pool", "threads", "--concurrency", str(concurrency)
    )
    try:
        ping.apply_async(queue=settings.CHAT_QUEUE).get(timeout=120)
        with _model() as base_url:
            flooder, other = _person(base_url, "a"), _person(base_url, "b")
            _first_tokens(other, 3)  # warm-up
            idle = _first_tokens(other, SENDS)
            stop = threading.Event()
            counts = {"accepted": 0, "refused": 0, "busy": 0}
            threads = _flood(flooder, stop, counts)
            try:
                flooded = _first_tokens(other, SENDS)
            finally:
                stop.set()
                for thread in threads:
                    thread.join(timeout=60)
            in_flight_at_end = Message.objects.filter(
                conversation__owner=flooder, state=Message.State.STREAMING
            ).count()
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    delay_p50 = statistics.median(flooded) - statistics.median(idle)
    delay_p95 = percentile(flooded, 0.95) - percentile(idle, 0.95)
    body = f"""## Fair chat: first token during another person's flood

Command: `make bench` (`benchmarks/fair_chat_bench.py`; this section alone:
`.venv/bin/python -m benchmarks.run fair-chat`).
Machine: {machine}. Measured {time.strftime("%Y-%m-%d")}. A real chat worker (threads pool,
{concurrency} threads, as `manage.py serve` starts it) and the suite's fake model in its
own process (200 ms to the first token). Person A asks for answers from {FLOOD_THREADS}
threads over {FLOOD_CONVERSATIONS} conversations without pause (the send service the chat
page and the API use); person B sends {SENDS} messages one after another and waits for
each answer. B's time from send to first token:

| | B alone | B during A's flood |
|---|---|---|
| p50 | {statistics.median(idle) * 1000:.0f} ms | {statistics.median(flooded) * 1000:.0f} ms |
| p95 | {percentile(idle, 0.95) * 1000:.0f} ms | {percentile(flooded, 0.95) * 1000:.0f} ms |
| max | {max(idle) * 1000:.0f} ms | {max(flooded) * 1000:.0f} ms |

Delay the flood added: p50 {delay_p50 * 1000:.0f} ms, p95 {delay_p95 * 1000:.0f} ms (target:
at most 1 s). A's sends during B's {SENDS}: {counts["accepted"]} accepted,
{counts["refused"]} refused with the wait message (at most
{settings.CHAT_MAX_ANSWERS_IN_FLIGHT} answers in flight per person),
{counts["busy"]} refused because that conversation's answer was still being written;
A's answers still in flight at the end: {in_flight_at_end}.
"""
    write_section("fair-chat", body)
    return body
