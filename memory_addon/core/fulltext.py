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


def snippet(text: str, query: str, *, width: int = 160) -> str:
    """The part of `text` around the first word of `query` it contains (whole lines)."""
    words = {word.lower() for word in _WORD.findall(query)}
    lines = text.split("\n")
    for number, line in enumerate(lines):
        if words & {word.lower() for word in _WORD.findall(line)}:
            picked = "\n".join(lines[max(0, number - 1) : number + 2]).strip()
            return picked if len(picked) <= 2 * width else picked[: 2 * width] + " …"
    return text[:width].strip()
