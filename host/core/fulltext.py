"""PostgreSQL full-text queries with OR semantics, shared by memory notes and collections."""

from __future__ import annotations

import re

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
MAX_WORDS = 64


def query_words(text: str) -> list[str]:
    """The distinct lower-case words of `text`, at most MAX_WORDS of them."""
    return list(dict.fromkeys(word.lower() for word in _WORD.findall(text)))[:MAX_WORDS]


def or_query(text: str, *, prefix: bool = False, min_length: int = 1) -> str:
    """A to_tsquery string matching any word of `text` ('' when it has none).

    An AND query such as plainto_tsquery returns nothing for most natural questions.
    Each word is quoted, so no user text can change the query's syntax. `prefix`
    matches word beginnings (`'word':*`) for words of at least `min_length` letters.
    """
    words = [word for word in query_words(text) if len(word) >= min_length]
    suffix = ":*" if prefix else ""
    return " | ".join(f"'{word}'{suffix}" for word in words)


def snippet(text: str, query: str, *, width: int = 160) -> str:
    """The part of `text` around the first word of `query` it contains (whole lines)."""
    words = {word.lower() for word in _WORD.findall(query)}
    lines = text.split("\n")
    for number, line in enumerate(lines):
        if words & {word.lower() for word in _WORD.findall(line)}:
            picked = "\n".join(lines[max(0, number - 1) : number + 2]).strip()
            return picked if len(picked) <= 2 * width else picked[: 2 * width] + " …"
    return text[:width].strip()
