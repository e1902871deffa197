"""The marker of a keyed write's transaction (host/idempotency.py), kept apart from it so
the outbound layer can check it without importing models."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_inside: ContextVar[bool] = ContextVar("inside_keyed_transaction", default=False)


class CallsOut(BaseException):
    """Raised at a keyed request's first outside call. A BaseException, so that neither
    a view's nor Django's `except Exception` turns it into an answer on the way out."""


@contextmanager
def keyed_transaction() -> Iterator[None]:
    token = _inside.set(True)
    try:
        yield
    finally:
        _inside.reset(token)


def leave_keyed_transaction() -> None:
    """Called before waiting on another server: inside a keyed transaction, end it."""
    if _inside.get():
        raise CallsOut
