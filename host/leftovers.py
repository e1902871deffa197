"""What a deleted row leaves on other servers goes after the delete, whatever deleted it.

A collection's uploaded files on the shared storage, its Qdrant collection and a
person's exports outlive their rows unless something removes them, and a delete has
many paths (a page, the API, a conversation's own collection going, an account deleted
in the admin, which cascades). Each app connects a `post_delete` handler that calls
`leftover_forget`: it writes a Leftover row in the delete's own transaction, so the
removal is owed exactly when the delete committed, and queues the sweep after the
commit. The sweep removes each thing without holding a database connection, then its
row; a removal that fails keeps its row and is tried again later (the periodic sweep),
so a storage or Qdrant server that is down loses nothing and never fails the delete.

Apps register a remover per kind, as they register storage counters (host/storage.py),
so the host imports no app.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from pathlib import PurePosixPath
from typing import Any

from django.core.files.storage import storages
from django.db import transaction
from django.utils import timezone

from host import filestore
from host.models import Leftover
from host.outbound import release_db_connection
from host.queue import queue_once_on_commit

logger = logging.getLogger(__name__)

SWEEP_TASK = "host.leftovers_clear"
SWEEP_KEY = "leftovers"
STORAGE_TREE = "storage-tree"
# A sweep claims its rows for this long: a second sweep meanwhile takes other rows.
CLAIM_SECONDS = 600
RETRY_FIRST_SECONDS = 60
RETRY_MAX_SECONDS = 6 * 3600
SWEEP_BATCH = 100

_removers: dict[str, Callable[[dict[str, Any]], None]] = {}


def register_leftover_remover(kind: str, remover: Callable[[dict[str, Any]], None]) -> None:
    """`remover(target)` removes the thing or raises; removing what is gone is no error."""
    _removers[kind] = remover


def leftover_forget(kind: str, target: dict[str, Any], *, using: str = "default") -> None:
    """Owe the removal of `target` once the surrounding delete commits."""
    Leftover.objects.using(using).create(kind=kind, target=target)
    queue_once_on_commit(SWEEP_TASK, SWEEP_KEY)


def storage_tree_forget(storage_alias: str, prefix: str, *, using: str = "default") -> None:
    """Owe the removal of the file `prefix` names, or of every file below it, in one of
    the STORAGES."""
    leftover_forget(STORAGE_TREE, {"storage": storage_alias, "prefix": prefix}, using=using)


def _storage_tree_remove(target: dict[str, Any]) -> None:
    prefix = PurePosixPath(str(target["prefix"]))
    if not prefix.parts or prefix.is_absolute() or ".." in prefix.parts:
        raise ValueError(f"refusing to remove the storage prefix {str(prefix)!r}")
    storage = storages[str(target["storage"])]
    name_starts = str(target.get("name_starts") or "")
    if name_starts:
        try:
            names = storage.listdir(str(prefix))[1]
        except FileNotFoundError:
            return
        for name in names:
            if name.startswith(name_starts):
                storage.delete(str(prefix / name))
        return
    local = filestore.local_folder(storage)
    if local is not None:
        filestore.local_remove(local / prefix)
    else:
        filestore.tree_delete(storage, str(prefix))
        storage.delete(str(prefix))  # a single file's name; nothing when it is a folder


register_leftover_remover(STORAGE_TREE, _storage_tree_remove)


def user_exports_forget(sender: type, instance: Any, **kwargs: object) -> None:
    """A person's kept exports go with their account, however it is deleted."""
    using = str(kwargs.get("using") or "default")
    storage_tree_forget(filestore.EXPORTS, filestore.exports_folder(instance.pk), using=using)


def export_forget(user_id: int, kind: str, *, using: str = "default") -> None:
    """The person's kept export of `kind` (see filestore.export_response) goes once the
    surrounding delete commits: a deleted conversation's transcript, say."""
    # The files directly in the person's folder whose names start so.
    target = {
        "storage": filestore.EXPORTS,
        "prefix": filestore.exports_folder(user_id),
        "name_starts": f"{kind}-",
    }
    leftover_forget(STORAGE_TREE, target, using=using)


def _claim(limit: int) -> list[Leftover]:
    now = timezone.now()
    with transaction.atomic():
        rows = list(
            Leftover.objects.select_for_update(skip_locked=True)
            .filter(next_try_at__lte=now)
            .order_by("pk")[:limit]
        )
        Leftover.objects.filter(pk__in=[row.pk for row in rows]).update(
            next_try_at=now + timedelta(seconds=CLAIM_SECONDS)
        )
    return rows


def leftovers_clear(limit: int = SWEEP_BATCH) -> int:
    """Remove what is owed and due; returns how many were removed."""
    removed = 0
    for row in _claim(limit):
        remover = _removers.get(row.kind)
        release_db_connection()  # the removal waits on another server
        try:
            if remover is None:
                raise LookupError(f"no remover is registered for {row.kind!r}")
            remover(row.target)
        except Exception as error:
            delay = min(RETRY_FIRST_SECONDS * 2**row.attempts, RETRY_MAX_SECONDS)
            logger.warning(
                "Could not remove the leftover %s (try %d): %s", row, row.attempts + 1, error
            )
            Leftover.objects.filter(pk=row.pk).update(
                attempts=row.attempts + 1,
                last_error=f"{type(error).__name__}: {error}"[:500],
                next_try_at=timezone.now() + timedelta(seconds=delay),
            )
            continue
        Leftover.objects.filter(pk=row.pk).delete()
        removed += 1
    return removed
