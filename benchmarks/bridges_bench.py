"""Messaging bridges and outgoing events (`make bench`, or this section alone with
`python -m benchmarks.bridges_bench`).

Webhook ingest: signed Standard Webhooks POSTs over real HTTP to the ASGI app under
uvicorn, each verified, stored and answered 202 (the turn is queued, not run).
Event delivery: outbox events written by real memory changes, sent by the delivery
loop to a local receiver that verifies every signature.
"""

from __future__ import annotations

import statistics
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx

# Django models are imported inside run(): this module also runs on its own
# (python -m benchmarks.bridges_bench), where benchmarks.run sets Django up first.

INGEST = 600
CONCURRENCY = 8
EVENTS = 1000


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _server() -> tuple[object, str]:
    import socket

    import uvicorn

    from config.asgi import application

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    server = uvicorn.Server(
        uvicorn.Config(
            application, host="127.0.0.1", port=port, log_level="warning", lifespan="off"
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)  # start-up of a benchmark server, not a test synchronisation
    return server, f"http://127.0.0.1:{port}"


def _ingest(url: str, secret: str, count: int, workers: int) -> tuple[list[float], float]:
    from bridges.signing import sign_headers

    latencies: list[float] = []
    lock = threading.Lock()

    def one(client: httpx.Client, number: int) -> None:
        body = f'{{"text": "message {number}", "sender": "bench"}}'.encode()
        headers = sign_headers(secret, msg_id=f"msg_{uuid.uuid4().hex}", body=body)
        start = time.perf_counter()
        response = client.post(url, content=body, headers=headers)
        elapsed = (time.perf_counter() - start) * 1000
        if response.status_code != 202:
            raise RuntimeError(f"ingest answered {response.status_code}: {response.text}")
        with lock:
            latencies.append(elapsed)

    started = time.perf_counter()
    with httpx.Client(timeout=30) as client, ThreadPoolExecutor(workers) as pool:
        list(pool.map(lambda n: one(client, n), range(count)))
    return latencies, time.perf_counter() - started


def run(write_section: Callable[[str, str], None], machine: str) -> str:
    from django.conf import settings
    from django.db import connections

    from accounts.models import User
    from bridges.models import EventEndpoint, InboundMessage, OutboxEvent
    from bridges.outbox import endpoint_deliver
    from bridges.services import binding_create, endpoint_create
    from memory_addon.services.changes import file_write
    from memory_addon.services.scopes import ensure_user_scope
    from scripts.sample_bridge import CallbackReceiver

    settings.BRIDGE_RATE_LIMIT_PER_MINUTE = 1_000_000  # measured here, not limited
    user = User.objects.create_user(f"bridges-bench-{uuid.uuid4().hex[:8]}")
    binding, secret = binding_create(owner=user, kind="standard", title="bench")
    server, base = _server()
    url = f"{base}/bridges/in/{binding.public_id}/"
    receiver = CallbackReceiver([]).start()
    try:
        _ingest(url, secret, 30, 2)  # warm-up
        serial, serial_s = _ingest(url, secret, INGEST // 2, 1)
        parallel, parallel_s = _ingest(url, secret, INGEST, CONCURRENCY)
        endpoint, endpoint_secret = endpoint_create(
            owner=user, url=receiver.url, event_types=["memory.changed"]
        )
        receiver.secrets.append(endpoint_secret)
        base_sha = ""
        for number in range(EVENTS):
            change = file_write(
                user=user,
                scope=ensure_user_scope(user),
                path="bench.md",
                content=f"- change {number}\n",
                base_sha256=base_sha,
            )
            base_sha = change.changes.get().after_sha256
        start = time.perf_counter()
        while OutboxEvent.objects.filter(endpoint=endpoint, state="pending").exists():
            endpoint_deliver(endpoint_id=endpoint.pk)
        deliver_s = time.perf_counter() - start
        receiver.wait_for(EVENTS, timeout=60)
        in_order = [e["sequence"] for e in receiver.received] == list(range(1, EVENTS + 1))
    finally:
        receiver.stop()
        server.should_exit = True  # type: ignore[attr-defined]
        InboundMessage.objects.filter(binding=binding).delete()
        EventEndpoint.objects.filter(owner=user).delete()
        connections.close_all()
    body = f"""## Messaging bridges and outgoing events

Command: `make bench` (`benchmarks/bridges_bench.py`; this section alone:
`.venv/bin/python -m benchmarks.bridges_bench`). Machine: {machine}. Measured
{time.strftime("%Y-%m-%d")}. Webhook ingest is real HTTP to the app under uvicorn (one
process): each POST has its Standard Webhooks signature and timestamp checked, is
stored with its unique webhook-id, queues its turn, and is answered 202.

| webhook ingest | value |
|---|---|
| accepted messages/s, 1 client | {len(serial) / serial_s:.0f} |
| accepted messages/s, {CONCURRENCY} clients | {len(parallel) / parallel_s:.0f} |
| 202 latency p50 / p95, 1 client | {statistics.median(serial):.1f} / {percentile(serial, 0.95):.1f} ms |
| 202 latency p50 / p95, {CONCURRENCY} clients | {statistics.median(parallel):.1f} / {percentile(parallel, 0.95):.1f} ms |

Event delivery: {EVENTS} `memory.changed` events from {EVENTS} real change sets, sent
by one delivery loop to a local receiver that verifies each signature (one POST per
event, in sequence order): **{EVENTS / deliver_s:.0f} events/s**, all in order: {in_order}.
"""
    write_section("bridges", body)
    return body


def main() -> None:
    import os
    import platform

    from django.core.management import call_command

    from benchmarks.results import write_section

    call_command("migrate", interactive=False, verbosity=0)
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    print(run(write_section, machine))


if __name__ == "__main__":
    import benchmarks.run  # noqa: F401 - sets the environment and calls django.setup()

    main()
