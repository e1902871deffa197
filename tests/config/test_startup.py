"""Start-up (issue 11, item 5): importing the settings starts nothing and writes nothing.

Each test runs manage.py or Python in a child process with a fresh DATA_DIR and without
DATABASE_URL / REDIS_URL, as on a new checkout.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
# Servers that never answer: importing the app must not need them.
NOWHERE = {
    "DATABASE_URL": "postgresql://nobody@127.0.0.1:9/none",
    "REDIS_URL": "redis://127.0.0.1:9/0",
}


def _run(args: list[str], data_dir: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE", "SECRET_KEY"}
    }
    env |= {"DATA_DIR": str(data_dir), **extra}
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    "args",
    [
        ["manage.py", "help"],
        ["manage.py"],
        ["manage.py", "migrate", "--help"],
        ["manage.py", "serve", "-h"],
        ["manage.py", "--version"],
    ],
    ids=["help", "no-command", "migrate-help", "serve-help", "version"],
)
def test_help_starts_no_database_and_creates_no_data_folder(tmp_path, args):
    data_dir = tmp_path / "data"
    result = _run(args, data_dir)
    assert result.returncode == 0, result.stderr
    assert not data_dir.exists(), sorted(p.name for p in data_dir.iterdir())


def test_importing_the_settings_starts_nothing(tmp_path):
    data_dir = tmp_path / "data"
    code = (
        "import os, django; os.environ['DJANGO_SETTINGS_MODULE'] = 'config.settings'\n"
        "django.setup()\n"
        "from django.conf import settings; from host import embedded\n"
        "print(settings.DATABASES['default']['HOST'], settings.EMBEDDED_DATABASE,\n"
        "      embedded.started('postgres'), embedded.started('redis'))\n"
    )
    result = _run(["-c", code], data_dir)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["embedded-database-not-started", "False", "False", "False"]
    assert not data_dir.exists()


def test_a_command_that_needs_the_database_starts_it_in_the_data_folder(tmp_path):
    data_dir = tmp_path / "data"
    result = _run(["manage.py", "showmigrations", "memory_addon"], data_dir)
    assert result.returncode == 0, result.stderr
    assert "[ ] 0001_initial" in result.stdout
    assert (data_dir / "postgres" / "PG_VERSION").exists()
    assert (data_dir / "secret_key").exists()


@pytest.mark.parametrize(
    ("variable", "value", "args", "message"),
    [
        ("MEMORY_INDEX_MAX_LINES", "abc", ["manage.py", "help"], "is not a whole number"),
        ("PORT", "eighty", ["manage.py", "serve", "--help"], "is not a whole number"),
        ("DEBUG", "maybe", ["manage.py", "help"], "is not a yes/no value"),
        ("WEB_WORKERS", "abc", ["-m", "host.web"], "must be a whole number"),
    ],
)
def test_a_malformed_environment_value_stops_the_start_naming_it(
    tmp_path, variable, value, args, message
):
    result = _run(args, tmp_path / "data", **{variable: value})
    assert result.returncode != 0
    assert variable in result.stderr and message in result.stderr and repr(value) in result.stderr
    assert "Traceback" not in result.stderr


def test_every_process_registers_every_apps_jobs(tmp_path):
    """Services queue jobs by name; a web process must know each job with its options."""
    code = (
        "import os, django; os.environ['DJANGO_SETTINGS_MODULE'] = 'config.settings'\n"
        "django.setup()\n"
        "from config.celery import app\n"
        "print(' '.join(sorted(app.tasks)))\n"
    )
    result = _run(["-c", code], tmp_path / "data")
    assert result.returncode == 0, result.stderr
    registered = set(result.stdout.split())
    assert {
        "memory_addon.ping",
        "memory_addon.note_embeddings_refresh",
        "knowledge.scan_source",
        "knowledge.index_source",
        "chat.turn_run",
        "bridges.inbound_process",
        "bridges.callback_send",
        "bridges.endpoint_deliver",
        "learning.rule_detect",
        "learning.cleanup_run",
    } <= registered


def test_a_web_worker_loads_no_mcp_sdk_model_client_or_local_model_stack_until_used(tmp_path):
    """Each is tens of MB in every process that imports it (docs/benchmarks.md,
    "Footprint"): the MCP SDK loads on the first MCP call, openai on the first model
    call, qdrant_client (which imports fastembed, onnxruntime and tokenizers) when a
    Qdrant collection is used."""
    code = (
        "import os, sys, django; os.environ['DJANGO_SETTINGS_MODULE'] = 'config.settings'\n"
        "import config.asgi\n"
        "heavy = ['mcp', 'openai', 'qdrant_client', 'fastembed', 'onnxruntime', 'tokenizers']\n"
        "print(' '.join(name for name in heavy if name in sys.modules))\n"
    )
    result = _run(["-c", code], tmp_path / "data", **NOWHERE)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == []


def test_the_web_fork_server_loads_the_app_and_leaves_no_connection_or_thread(tmp_path):
    """Every web worker is forked from this state (config/web_preload.py): an open
    database connection or a running thread would be shared with, or lost in, each."""
    code = (
        "import os, sys, threading; os.environ['DJANGO_SETTINGS_MODULE'] = 'config.settings'\n"
        "import config.web_preload\n"
        "from django.db import connections\n"
        "open_connections = [c.alias for c in connections.all() if c.connection is not None]\n"
        "print('config.api' in sys.modules, threading.active_count(), open_connections)\n"
    )
    result = _run(["-c", code], tmp_path / "data", **NOWHERE)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "1", "[]"]
