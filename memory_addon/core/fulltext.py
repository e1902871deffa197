"""PostgreSQL full-text queries with OR semantics, shared by memory notes and collections."""

from __future__ import annotations

import re

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
MAX_WORDS = 64


def or_query(text: str) -> str:
    """A to_tsquery string matching any word of `text` ('' when it has none).

    An AND query such as plainto_tsquery returns nothing for most natural questions.
    Each word is quoted, so no user text can change the query's syntax.
    """
    words = list(dict.fromkeys(word.lower() for word in _WORD.findall(text)))[:MAX_WORDS]
    return " | ".join(f"'{word}'" for word in words)
