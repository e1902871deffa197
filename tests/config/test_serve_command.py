"""`manage.py serve` as `make run` starts it: fresh data folder, two runs, clean stops."""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import psutil

from tests.conftest import ROOT, free_port

READY_LINE = "Uvicorn running on"  # printed once the socket is bound


def _start(data_dir: Path, port: int) -> tuple[subprocess.Popen[str], list[str]]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}
    }
    env |= {"DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(port), "--worker-concurrency", "1"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    assert process.stdout is not None
    for line in process.stdout:
        lines.append(line)
        if READY_LINE in line:
            _wait_until_listening(port)
            return process, lines
    raise AssertionError("serve exited before it was ready:\n" + "".join(lines))


def _wait_until_listening(port: int, seconds: float = 30.0) -> None:
    """uvicorn logs "running" from inside its bind, a moment before the socket listens."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)  # polling a condition with a deadline, not a fixed wait


def _ready(base: str, seconds: float = 180.0) -> dict[str, object]:
    """/readyz once it says ready: the web server may answer before the worker does (503),
    and on a busy machine either can take a while (a deadline, not a wait)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(f"{base}/readyz", timeout=30) as response:
                return dict(json.loads(response.read()))
        except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
            if time.monotonic() > deadline:
                raise AssertionError(f"serve was not ready within {seconds:.0f} s") from error
            time.sleep(0.2)  # polling a starting server, bounded by the deadline


def _stop(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=60) == 0


def _processes_using(data_dir: Path) -> list[str]:
    found = []
    for proc in psutil.process_iter(attrs=["cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if str(data_dir) in cmdline and proc.status() != psutil.STATUS_ZOMBIE:
            found.append(cmdline)
    return found


def _sign_in(base: str, username: str, password: str) -> int:
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = opener.open(f"{base}/accounts/sign-in/").read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    body = urllib.parse.urlencode(
        {"username": username, "password": password, "csrfmiddlewaretoken": token}
    ).encode()
    response = opener.open(f"{base}/accounts/sign-in/", data=body)
    # A successful sign-in redirects into the app; a failed one stays on the form.
    if "/accounts/sign-in/" in response.geturl():
        print(response.read().decode())
        return 1
    return 0


def test_serve_twice_keeps_the_data_and_stops_cleanly(tmp_path):
    data_dir = tmp_path / "data"
    port = free_port()
    base = f"http://127.0.0.1:{port}"

    first, lines = _start(data_dir, port)
    try:
        output = "".join(lines)
        match = re.search(r"as “(\w+)” with the password “([^”]+)”", output)
        assert match, output
        username, password = match.groups()
        credentials = data_dir / "admin-credentials.txt"
        assert password in credentials.read_text()
        assert credentials.stat().st_mode & 0o077 == 0
        health = _ready(base)
        assert health["database"]["ok"] and health["redis"]["ok"] and health["worker"]["ok"]
    finally:
        _stop(first)
    assert _processes_using(data_dir) == []

    second, lines = _start(data_dir, port)
    try:
        assert "Created the first admin" not in "".join(lines)
        assert _sign_in(base, username, password) == 0
    finally:
        _stop(second)
    assert _processes_using(data_dir) == []


def test_a_host_started_without_beat_runs_every_worker_but_no_scheduler():
    from config.management.commands.serve import Command

    options = {
        "web_workers": 1,
        "host": "127.0.0.1",
        "port": 8000,
        "no_worker": False,
        "worker_concurrency": 1,
        "chat_concurrency": 2,
        "no_beat": False,
    }
    everything = [name for name, _, _ in Command()._commands(options, {})]
    assert everything == ["web", "worker", "chat worker", "delivery worker", "beat"]
    without_beat = [name for name, _, _ in Command()._commands({**options, "no_beat": True}, {})]
    assert without_beat == ["web", "worker", "chat worker", "delivery worker"]


def test_a_stop_while_the_first_start_migrates_leaves_no_server_running(tmp_path):
    """SIGTERM as soon as serve says anything (Django is set up; a new folder then takes
    seconds of migrations): serve ends, and its embedded PostgreSQL and Redis with it."""
    from tests.processes import processes_bound_to

    folder = tmp_path / "data"
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}
    }
    env |= {"DATA_DIR": str(folder), "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(free_port())],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    first = process.stdout.readline()
    process.send_signal(signal.SIGTERM)
    rest = process.stdout.read()
    assert process.wait(timeout=60) != 0 or "Stopping" in rest, first + rest
    assert processes_bound_to(folder) == [], first + rest
