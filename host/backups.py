"""Database backups with pg_dump / pg_restore (custom format), for `manage.py backup`
and `manage.py restore`.

The binaries come from PG_BIN_DIR, else the embedded pgserver's own (same major
version as its server), else PATH. Connection details come from a database URL or
the Django settings, and the password travels in PGPASSWORD, never on a command line.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection

from host.env import database_from_url

BACKUP_PREFIX = "memory-"
BACKUP_SUFFIX = ".dump"


class BackupFailed(RuntimeError):
    """pg_dump or pg_restore is missing or stopped with an error: the message says which."""


@dataclass(frozen=True)
class Target:
    args: list[str]
    env: dict[str, str]
    name: str


def binary(name: str) -> str:
    folders = []
    if settings.PG_BIN_DIR:
        folders.append(Path(settings.PG_BIN_DIR))
    try:
        from pgserver._commands import POSTGRES_BIN_PATH

        folders.append(Path(POSTGRES_BIN_PATH))
    except ImportError:
        pass
    for folder in folders:
        if (folder / name).is_file():
            return str(folder / name)
    found = shutil.which(name)
    if found is None:
        raise BackupFailed(
            f"{name} was not found: install the PostgreSQL client or set PG_BIN_DIR."
        )
    return found


def target(database_url: str | None) -> Target:
    db: dict[str, Any] = (
        database_from_url(database_url) if database_url else dict(connection.settings_dict)
    )
    args = ["--dbname", str(db["NAME"])]
    if db.get("HOST"):
        args += ["--host", str(db["HOST"])]
    if db.get("PORT"):
        args += ["--port", str(db["PORT"])]
    if db.get("USER"):
        args += ["--username", str(db["USER"])]
    env = {**os.environ}
    if db.get("PASSWORD"):
        env["PGPASSWORD"] = str(db["PASSWORD"])
    sslmode = (db.get("OPTIONS") or {}).get("sslmode")
    if sslmode:
        env["PGSSLMODE"] = str(sslmode)
    return Target(args=args, env=env, name=str(db["NAME"]))


def _run(command: list[str], env: dict[str, str], timeout: float) -> None:
    # The outside program gets its own connection; ours is not held while it runs.
    connection.close()
    try:
        result = subprocess.run(  # noqa: S603
            command, env=env, capture_output=True, text=True, check=False, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        raise BackupFailed(
            f"{Path(command[0]).name} did not finish within {timeout:.0f} s."
        ) from None
    if result.returncode != 0:
        raise BackupFailed(f"{Path(command[0]).name} failed: {result.stderr.strip()[-2000:]}")


def backup_create(*, output: Path, database_url: str | None = None, timeout: float = 3600) -> Path:
    """Dump the whole database (custom format, no owners) to `output`, atomically."""
    db = target(database_url)
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(output.name + ".partial")
    command = [binary("pg_dump"), "--format", "custom", "--no-owner", "--no-privileges"]
    try:
        _run([*command, "--file", str(partial), *db.args], db.env, timeout)
        partial.replace(output)  # a dump that stopped half-way never looks complete
    finally:
        partial.unlink(missing_ok=True)
    return output


def default_backup_path(folder: Path) -> Path:
    stamp = datetime.now(tz=UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return folder / f"{BACKUP_PREFIX}{stamp}{BACKUP_SUFFIX}"


def backups_prune(*, folder: Path, keep: int) -> list[Path]:
    """Delete all but the newest `keep` dumps this command wrote in `folder`."""
    dumps = sorted(folder.glob(f"{BACKUP_PREFIX}*{BACKUP_SUFFIX}"), reverse=True)
    removed = dumps[max(keep, 1) :]
    for path in removed:
        path.unlink(missing_ok=True)
    return removed


def database_is_empty(database_url: str | None) -> bool:
    import psycopg

    db = target(database_url)
    conninfo = database_url or _conninfo(connection.settings_dict)
    with psycopg.connect(conninfo, connect_timeout=10) as conn:
        row = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()
    del db
    return row is None or row[0] == 0


def _conninfo(db: Any) -> str:
    from psycopg.conninfo import make_conninfo

    return make_conninfo(
        dbname=db["NAME"],
        host=db.get("HOST") or None,
        port=db.get("PORT") or None,
        user=db.get("USER") or None,
        password=db.get("PASSWORD") or None,
    )


def backup_restore(
    *, dump: Path, database_url: str | None = None, clean: bool = False, timeout: float = 3600
) -> None:
    """Restore a dump into an empty database (or, with `clean`, replace what is there)."""
    if not dump.is_file():
        raise BackupFailed(f"{dump} is not a file.")
    db = target(database_url)
    if not clean and not database_is_empty(database_url):
        raise BackupFailed(
            f"The database {db.name} already holds tables. Restore into a new, empty "
            "database, or pass --clean to replace everything in it."
        )
    command = [binary("pg_restore"), "--no-owner", "--no-privileges", "--exit-on-error"]
    if clean:
        command += ["--clean", "--if-exists"]
    _run([*command, *db.args, str(dump)], db.env, timeout)
