"""Secrets the host keeps for a person (SPEC M11, the fifth kind).

An AI profile's API key, a messaging binding's signing secret, an event endpoint's
secret: each app that stores such a value registers a provider here (in its
`AppConfig.ready()`), so the guard can refuse them in notes and the model client can
mask them in what it sends, without the host importing any app.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from host.read_once import read_once

_providers: list[Callable[[int], Iterable[str]]] = []


def register_stored_secrets(provider: Callable[[int], Iterable[str]]) -> None:
    if provider not in _providers:
        _providers.append(provider)


def stored_secrets(user_id: int) -> tuple[str, ...]:
    """The person's stored secrets, decrypted, longest first; read for each check, or once
    inside `reads_once()` (one save checks its text before and while it writes)."""
    return read_once(("stored_secrets", user_id), lambda: _read(user_id))


def _read(user_id: int) -> tuple[str, ...]:
    values = {value for provider in _providers for value in provider(user_id) if value}
    return tuple(sorted(values, key=len, reverse=True))
