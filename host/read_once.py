"""Reads made once per unit of work: one save asks for the same person's data many times.

An automatic save checks its text for the person's stored secrets before its transaction
and again in every file it writes; the outbox then looks up the same person's event
endpoints. Inside `reads_once()` each such read runs once and its result is reused until
the block ends. Outside one, every read goes to the database as before, so a caller that
changes what is read (a new API key, a new endpoint) never sees a stale value: the blocks
are opened only around a single change (memory_change_request, change_set_apply) that
writes none of it.

Per thread and per task (a context variable), so concurrent saves never share results.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import cast

_reads: ContextVar[dict[Hashable, object] | None] = ContextVar("host_reads_once", default=None)


@contextmanager
def reads_once() -> Iterator[None]:
    """Reuse reads until the block ends; a block inside another one shares the outer's."""
    if _reads.get() is not None:
        yield
        return
    token = _reads.set({})
    try:
        yield
    finally:
        _reads.reset(token)


def read_once[T](key: Hashable, read: Callable[[], T]) -> T:
    """`read()` the first time `key` is asked for in the current block; with no block, always."""
    reads = _reads.get()
    if reads is None:
        return read()
    if key not in reads:
        reads[key] = read()
    return cast("T", reads[key])
