"""Diffs a person can read: notes instead of lines, fences hidden, changed words marked.

The unified diff (memory_addon.core.diffs) shows a file as the machine stores it, entry
fences and all. Here both texts are split into notes (a person's paragraph or the text
inside a machine entry, as the model is sent it), the notes are matched up, and a note
that changed carries its word-level changes. Pure functions, no Django.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Literal

from memory_addon.core.entries import parse_items

RowKind = Literal["same", "added", "removed", "changed"]
SegmentKind = Literal["same", "added", "removed"]
TOKEN = re.compile(r"\s+|\w+|[^\w\s]")
# Below this similarity two notes at the same place are a removal and an addition, not
# one changed note: word marks over an unrelated sentence help nobody.
PAIR_RATIO = 0.4


@dataclass(frozen=True)
class Segment:
    kind: SegmentKind
    text: str


@dataclass(frozen=True)
class NoteRow:
    kind: RowKind
    before: str = ""
    after: str = ""
    words: tuple[Segment, ...] = ()

    @property
    def text(self) -> str:
        return self.before if self.kind == "removed" else self.after


def notes_of(text: str) -> list[str]:
    """The notes of a memory file as a person reads them: no fences, no blank lines."""
    return [item.text.strip() for item in parse_items(text) if item.text.strip()]


def word_changes(before: str, after: str) -> tuple[Segment, ...]:
    """The words of `after`, with what was removed from `before` and added, in order."""
    old, new = TOKEN.findall(before), TOKEN.findall(after)
    segments: list[Segment] = []

    def push(kind: SegmentKind, tokens: list[str]) -> None:
        if not tokens:
            return
        text = "".join(tokens)
        if segments and segments[-1].kind == kind:
            segments[-1] = Segment(kind, segments[-1].text + text)
        else:
            segments.append(Segment(kind, text))

    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            push("same", new[j1:j2])
        else:
            push("removed", old[i1:i2])
            push("added", new[j1:j2])
    return tuple(segments)


def _similar(before: str, after: str) -> bool:
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    return matcher.ratio() >= PAIR_RATIO


def readable_diff(before: str, after: str) -> list[NoteRow]:
    """Note-by-note changes from `before` to `after`; unchanged notes are kept as context."""
    old, new = notes_of(before), notes_of(after)
    rows: list[NoteRow] = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            rows.extend(NoteRow("same", note, note) for note in new[j1:j2])
            continue
        removed, added = old[i1:i2], new[j1:j2]
        pairs = 0
        for a, b in zip(removed, added, strict=False):
            if not _similar(a, b):
                break
            rows.append(NoteRow("changed", a, b, word_changes(a, b)))
            pairs += 1
        rows.extend(NoteRow("removed", before=note) for note in removed[pairs:])
        rows.extend(NoteRow("added", after=note) for note in added[pairs:])
    return rows


def has_changes(rows: list[NoteRow]) -> bool:
    return any(row.kind != "same" for row in rows)
