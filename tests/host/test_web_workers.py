"""The web server runs one worker process per core (WEB_WORKERS), in serve and compose."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request

import psutil
import pytest

from config.management.commands.serve import Command
from host.web import uvicorn_command, web_workers
from tests.conftest import ROOT, free_port, suite_database_url, web_workers_of


def test_the_default_is_one_worker_per_usable_core(monkeypatch):
    monkeypatch.delenv("WEB_WORKERS", raising=False)
    assert web_workers() == len(os.sched_getaffinity(0))
    monkeypatch.setenv("WEB_WORKERS", "3")
    assert web_workers() == 3
    command = uvicorn_command(["--port", "1"])
    assert command[command.index("--workers") + 1] == "3"
    command = uvicorn_command(["--workers", "5"])
    assert command.count("--workers") == 1 and command[-1] == "5"
    monkeypatch.setenv("WEB_WORKERS", "many")
    with pytest.raises(SystemExit, match="whole number"):
        web_workers()


def test_serve_starts_the_web_server_with_the_workers(monkeypatch):
    monkeypatch.setenv("WEB_WORKERS", "4")
    options = {"host": "127.0.0.1", "port": 8000, "no_worker": True, "web_workers": None}
    ((name, command, _),) = Command()._commands(options, {})
    assert name == "web" and command[command.index("--workers") + 1] == "4"
    options["web_workers"] = 2  # --web-workers wins over the variable
    ((_, command, _),) = Command()._commands(options, {})
    assert command[command.index("--workers") + 1] == "2"


@pytest.mark.django_db(transaction=True)
def test_two_web_workers_answer_requests(tmp_path):
    port = free_port()
    env = {**os.environ, "WEB_WORKERS": "2", "DATA_DIR": str(tmp_path)}
    env |= {"DATABASE_URL": suite_database_url(), "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "host.web", "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r:
                    assert r.status == 200
                    break
            except OSError:
                assert process.poll() is None, "the web server exited"
                assert time.monotonic() < deadline, "the web server did not answer in time"
                time.sleep(0.2)
        # Both forked from the one process that loaded the app, not importing it each.
        workers = web_workers_of(process.pid)
        assert len(workers) == 2
        (loader,) = {worker.parent().pid for worker in workers}
        assert "config.web_preload" in " ".join(psutil.Process(loader).cmdline())
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_compose_starts_the_web_server_through_the_per_core_launcher():
    from tests.config.test_compose import _config

    command = _config()["services"]["web"]["command"]
    assert command[:3] == ["python", "-m", "host.web"]
    assert "--workers" not in command  # WEB_WORKERS or the container's cores decide
