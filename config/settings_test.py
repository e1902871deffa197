"""Settings for the test suite: its own embedded PostgreSQL and Redis, never the dev ones."""

from __future__ import annotations

import os
from pathlib import Path

# `make test` runs the suite in pytest-xdist workers; each starts its own embedded
# PostgreSQL and Redis (queues, advisory locks and server restarts never cross). The
# controller's servers, inherited through the environment, are dropped in a worker; a
# worker's own children (Celery, serve) keep the worker's.
_XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
_OWN_DATA_DIR = str(
    Path(__file__).resolve().parent.parent
    / ".data"
    / (f"test-{_XDIST_WORKER}" if _XDIST_WORKER else "test")
)
_DEFAULT_SERVERS = "MEMORY_TEST_DEFAULT_SERVERS"
if _XDIST_WORKER and (
    os.environ.get(_DEFAULT_SERVERS) == os.environ.get("DATA_DIR") != _OWN_DATA_DIR
):
    for _name in ("DATA_DIR", "DATABASE_URL", "REDIS_URL", "EMBEDDING_MODEL_PATH"):
        os.environ.pop(_name, None)
if not any(os.environ.get(n) for n in ("DATA_DIR", "DATABASE_URL", "REDIS_URL")):
    os.environ[_DEFAULT_SERVERS] = _OWN_DATA_DIR
os.environ.setdefault("DATA_DIR", _OWN_DATA_DIR)
# The offline MiniLM folder that tests/conftest.py assembles from packaged files.
os.environ.setdefault(
    "EMBEDDING_MODEL_PATH", str(Path(os.environ["DATA_DIR"]) / "models" / "all-MiniLM-L6-v2")
)

# The sample bridge and callback receivers of the tests listen on this machine.
os.environ.setdefault("WEBHOOK_ALLOW_LOOPBACK", "true")

# The test run is an entry point: it starts (or attaches to) its own embedded servers.
from host import embedded  # noqa: E402

embedded.start()

from config.settings import *  # noqa: E402, F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# A refresh queued by any test that writes memory ran in the session's worker while the
# next test's teardown emptied the tables, and one of them deadlocked. Tests of the
# refresh switch it on.
MEMORY_NOTE_EMBEDDINGS_ON_WRITE = False
CHAT_MESSAGE_EMBEDDINGS_ON_WRITE = False
