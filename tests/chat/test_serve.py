"""`make run` (manage.py serve) starts a chat worker on its own queue with a thread pool."""

from __future__ import annotations

import time

import psutil
from celery import Celery

from config.settings import celery_url
from tests.config.test_serve_command import _processes_using, _start, _stop
from tests.conftest import free_port


def _running_with(text: str) -> list[str]:
    found = []
    for proc in psutil.process_iter(attrs=["cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if text in cmdline and proc.status() != psutil.STATUS_ZOMBIE:
            found.append(cmdline)
    return found


def _children_once_all_started(pid: int, timeout: float = 120.0) -> dict[int, str]:
    """serve's processes by command line, once its beat (the last child started) runs."""
    deadline = time.monotonic() + timeout
    while True:
        children = psutil.Process(pid).children(recursive=True)
        commands = {child.pid: " ".join(child.cmdline()) for child in children}
        if any(" beat" in c for c in commands.values()) or time.monotonic() > deadline:
            return commands
        time.sleep(0.1)  # polling the process table, under a deadline


def test_serve_runs_a_thread_pool_worker_that_answers_on_the_chat_queue(tmp_path):
    data_dir = tmp_path / "data"
    process, _ = _start(data_dir, free_port())
    socket_path = ""
    try:
        # The chat and delivery workers start once the web server answers.
        commands = _children_once_all_started(process.pid)
        chat_workers = [pid for pid, c in commands.items() if "worker -Q chat --pool threads" in c]
        assert len(chat_workers) == 1, commands
        # Answers back and outgoing events have a worker of their own.
        delivery_workers = [
            pid for pid, c in commands.items() if "worker -Q deliveries --pool threads" in c
        ]
        assert len(delivery_workers) == 1, commands
        # The default worker keeps the default queue only.
        others = [
            c
            for pid, c in commands.items()
            if " worker " in f"{c} " and pid not in chat_workers + delivery_workers
        ]
        assert others and all(" -Q " not in c for c in others)
        # The Redis serve started, as serve hands it to its children (not the suite's own).
        redis_url = psutil.Process(chat_workers[0]).environ()["REDIS_URL"]
        socket_path = redis_url.removeprefix("unix://")
        broker = celery_url(redis_url)
        # Not the current app: later shared tasks of this test session must keep theirs.
        app = Celery("probe", broker=broker, backend=broker, set_as_current=False)
        try:
            result = app.send_task("memory_addon.ping", queue="chat")
            assert result.get(timeout=60) == "pong"
        finally:
            # Every probe connection is closed, or the embedded Redis would not stop with serve.
            app.backend.result_consumer.stop()
            app.backend.client.connection_pool.disconnect()
            app.pool.force_close_all()
            app.close()
    finally:
        _stop(process)
    assert _processes_using(data_dir) == []
    assert socket_path and _running_with(socket_path) == []  # serve's Redis stopped too
