"""How the database pool (psycopg_pool, through Django's DATABASES OPTIONS) checks a
connection before handing it out."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg_pool import ConnectionPool


def check_pooled_connection(conn: psycopg.Connection[Any]) -> None:
    """psycopg_pool's own check; on a dead connection, also sweep the idle ones.

    After PostgreSQL restarts every idle connection is dead, and the pool tries the
    next one only after a doubling pause (1 s, 2 s, 4 s …): the first requests would
    wait past the pool timeout. One sweep replaces them all.
    """
    try:
        ConnectionPool.check_connection(conn)
    except psycopg.Error:
        # The pool marks the connections it hands out with itself.
        pool = getattr(conn, "_pool", None)
        if isinstance(pool, ConnectionPool):
            pool.check()
        raise
