"""Text PostgreSQL and UTF-8 can hold: no NUL (PostgreSQL refuses it in text and JSON)
and no lone surrogates (UTF-8 cannot encode them; JSON's "\\ud800" makes one)."""

from __future__ import annotations

import re

UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable(text: str) -> str:
    """The text with NUL and lone surrogates replaced by U+FFFD."""
    return UNSTORABLE.sub("\ufffd", text)


def storable_value(value: object) -> object:
    """`storable` applied to every string (keys too) of parsed JSON."""
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, list):
        return [storable_value(item) for item in value]
    if isinstance(value, dict):
        return {storable(str(key)): storable_value(item) for key, item in value.items()}
    return value


def holds_unstorable(value: object) -> bool:
    """True when any string of `value` (parsed JSON or a plain string) holds one."""
    if isinstance(value, str):
        return bool(UNSTORABLE.search(value))
    if isinstance(value, dict):
        return any(holds_unstorable(k) or holds_unstorable(v) for k, v in value.items())
    if isinstance(value, list):
        return any(holds_unstorable(item) for item in value)
    return False
