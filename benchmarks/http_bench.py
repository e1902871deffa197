"""HTTP throughput of the turn-context API: requests/s and latency at 1, 10 and 50 clients.

The web server is started as in production (`python -m host.web`, uvicorn) on
127.0.0.1, once with one worker and once with one worker per core, against the same
embedded PostgreSQL and Redis as `make bench`. Each client is an asyncio task with its
own keep-alive connection sending `POST /api/memory/turn-context` with a personal API
token, back to back, for a fixed time. The clients run on the same 2 cores as the
server, so the figures include their cost.

Run: `python -m benchmarks.http_bench` (writes the `http` section of docs/benchmarks.md);
`make bench` runs it too.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

if __name__ == "__main__":  # standalone: the same embedded database as `make bench`
    _root = Path(__file__).resolve().parent.parent
    os.environ.setdefault("DATA_DIR", str(_root / ".data" / "bench"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(_root))
    import django

    from host import embedded

    embedded.start()
    django.setup()

import httpx
from django.conf import settings
from django.db import close_old_connections

from accounts.models import User
from accounts.services import api_token_create
from benchmarks.http_load import level
from host.web import web_workers
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import ensure_user_scope

ROOT = Path(__file__).resolve().parent.parent
CLIENTS = (1, 10, 50)
SECONDS = 8.0  # per level, after a warm-up


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(workers: int, port: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "WEB_WORKERS": str(workers),
        "DATABASE_URL": settings.DATABASE_URL,
        "REDIS_URL": settings.REDIS_URL,
        "DATA_DIR": str(settings.DATA_DIR),
        "LOG_LEVEL": "WARNING",
    }
    command = [sys.executable, "-m", "host.web", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--no-access-log", "--log-level", "warning"]
    process = subprocess.Popen(command, cwd=ROOT, env=env)  # noqa: S603
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return process
        except httpx.HTTPError:
            pass
        if process.poll() is not None:
            raise RuntimeError("the web server exited")
        time.sleep(0.2)
    process.terminate()
    raise RuntimeError("the web server did not answer within 120 s")


def bench_http() -> dict[int, dict[int, dict[str, float]]]:
    user = User.objects.create_user(f"bench-http-{uuid.uuid4().hex[:8]}")
    index = "".join(f"- pref {i}: short fact {i} -> f{i}.md\n" for i in range(12))
    file_write(
        user=user, scope=ensure_user_scope(user), path="index.md", content=index, base_sha256=""
    )
    _, token = api_token_create(user=user, name="bench")
    close_old_connections()
    results: dict[int, dict[int, dict[str, float]]] = {}
    for workers in sorted({1, web_workers()}):
        port = _free_port()
        process = _start(workers, port)
        try:
            base = f"http://127.0.0.1:{port}"
            results[workers] = {
                clients: asyncio.run(level(base, token, clients, SECONDS)) for clients in CLIENTS
            }
            print(workers, results[workers], flush=True)
        finally:
            process.terminate()
            process.wait(timeout=30)
    return results


def run(write_section: Callable[[str, str], None], machine: str) -> str:
    results = bench_http()
    lines = [
        "## HTTP: turn-context API under concurrent clients",
        "",
        "Command: `python -m benchmarks.http_bench` (also part of `make bench`). "
        f"Machine: {machine}, shared with other work; the load generator runs on the same "
        f"cores. Measured {time.strftime('%Y-%m-%d')}.",
        "",
        "`POST /api/memory/turn-context` with a personal API token (a 12-line memory "
        "index, the built-in add-on's skills), uvicorn started by `python -m "
        "host.web` (what `manage.py serve` and compose run); each client keeps one "
        f"connection and sends requests back to back for {SECONDS:.0f} s after a 1 s warm-up.",
        "",
        "| web workers | clients | requests / s | p50 | p95 | errors |",
        "|---|---|---|---|---|---|",
    ]
    for workers, levels in results.items():
        for clients, row in levels.items():
            lines.append(
                f"| {workers} | {clients} | {row['rps']:.0f} | {row['p50']:.1f} ms "
                f"| {row['p95']:.1f} ms | {row['errors']:.0f} |"
            )
    body = "\n".join(lines) + "\n"
    write_section("http", body)
    return body


if __name__ == "__main__":
    import platform

    from django.core.management import call_command

    from benchmarks.results import write_section

    call_command("migrate", interactive=False, verbosity=0)
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    print(run(write_section, machine))
