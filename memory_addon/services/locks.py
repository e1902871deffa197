"""The per-person memory lock, shared by every memory write path."""

from __future__ import annotations

from django.db import connection

# Namespace of the per-person advisory lock (first key of pg_advisory_xact_lock).
_MEMORY_LOCK_NAMESPACE = 0x4D454D  # "MEM"


def memory_lock(user_id: int) -> None:
    """Serialise every memory write of one person for the rest of the transaction.

    Writes take row locks on scopes, files and proposals in different orders (a
    confirm locks the proposal first, a save the scope first); parallel tool calls
    of one model then deadlocked. Taking this one lock first, on every write path,
    makes them queue instead. It also makes per-person counts (notes per reply,
    bytes in all) exact under concurrency. Re-entrant within a transaction.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_MEMORY_LOCK_NAMESPACE, user_id])
