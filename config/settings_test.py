"""Settings for the test suite: its own embedded PostgreSQL and Redis, never the dev ones."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("DATA_DIR", str(Path(__file__).resolve().parent.parent / ".data" / "test"))
# The offline MiniLM folder that tests/conftest.py assembles from packaged files.
os.environ.setdefault(
    "EMBEDDING_MODEL_PATH", str(Path(os.environ["DATA_DIR"]) / "models" / "all-MiniLM-L6-v2")
)

# The sample bridge and callback receivers of the tests listen on this machine.
os.environ.setdefault("WEBHOOK_ALLOW_LOOPBACK", "true")

# The test run is an entry point: it starts (or attaches to) its own embedded servers.
from host import embedded

embedded.start()

from config.settings import *  # noqa: E402, F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# A refresh queued by any test that writes memory ran in the session's worker while the
# next test's teardown emptied the tables, and one of them deadlocked. Tests of the
# refresh switch it on.
MEMORY_NOTE_EMBEDDINGS_ON_WRITE = False
