"""When a new note says something else about what a saved note is about (M23).

Pure: no Django. A note's subject is its topic key, the label before its first colon
("home: lives in Rome -> home.md", "Editor: Vim"); two notes with the same key and
different text are a conflict. Notes without a key are compared by meaning
(services/proposals/conflicts.py); the vector part of that is `cosine` here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Literal, TypedDict

from memory_addon.core import entries

ConflictKind = Literal["duplicate", "topic", "meaning"]
Decision = Literal["replace", "keep_both"]
DECISIONS: tuple[Decision, ...] = ("replace", "keep_both")


class Conflict(TypedDict):
    kind: ConflictKind
    path: str  # the index, or the topic file the proposal writes
    text: str  # the old note (or the start of the old topic file)
    date: str  # ISO date: the entry's own date, else the file's last change
    entry_id: str  # a machine entry's id; "" for the person's text or a topic file
    raw_sha256: str  # the old item's exact lines (or the topic file's content) when proposed
    similarity: float | None  # for kind "meaning"


# A label is short: "Preferred language", not the first clause of a sentence.
_LABEL = re.compile(r"^\s*(?:[-*+]\s+)?(?P<label>[^:\n]{1,40}?)\s*:\s+\S")
_MAX_LABEL_WORDS = 4


def same_note(text: str) -> str:
    """A note as two copies of it compare: spacing, bullet and case do not count."""
    return " ".join(text.split()).removeprefix("- ").removeprefix("* ").casefold()


def topic_key(text: str) -> str:
    """The subject a note names before its first colon, or "" when it names none."""
    line = entries.parse_index_line(text.strip())
    if line is not None:
        return " ".join(line.topic.split()).casefold()
    match = _LABEL.match(text)
    if not match or "://" in text[: match.end()]:
        return ""
    label = match["label"]
    if len(label.split()) > _MAX_LABEL_WORDS:
        return ""
    return " ".join(label.split()).casefold()


def cosine(left: Sequence[float], right: Sequence[float]) -> float:
    dot = sum(a * b for a, b in zip(left, right, strict=True))
    norms = math.sqrt(sum(a * a for a in left)) * math.sqrt(sum(b * b for b in right))
    return dot / norms if norms else 0.0


def without_lines(content: str, start_line: int, end_line: int) -> str:
    """The file without lines start..end (1-based), and without the blank line that
    separated them, so a replaced note leaves no gap behind."""
    lines = content.split("\n")
    before, after = lines[: start_line - 1], lines[end_line:]
    if before and before[-1].strip() == "" and (not after or after[0].strip() == ""):
        before = before[:-1]
    return "\n".join(before + after)
