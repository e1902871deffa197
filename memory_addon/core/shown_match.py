"""Find text as a read showed it in the text as stored (M4).

Reads show notes normalised (Unicode forms folded, invisible characters removed,
look-alike wrapper tags rewritten), so text a model copies from a read can differ
from the stored text it came from. `shown_spans` finds the copy in the shown text
and maps it back to the span of the stored text it was shown from, so an edit
changes exactly that span and the rest of the file keeps every character.

Pure: the normaliser is passed in.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable
from difflib import SequenceMatcher
from typing import NamedTuple

Show = Callable[[str], str]

# How far a piece may reach before a block is given up as one piece that only
# matches as a whole (keeps the cost linear in the file's size).
WINDOW = 256


class _Piece(NamedTuple):
    stored_start: int
    stored_end: int
    shown_start: int
    shown_end: int
    same: bool  # equal text, so positions inside map one to one


def _offsets(lines: list[str]) -> list[int]:
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    return offsets


def _chars(stored: str, shown: str, at: int, shown_at: int, show: Show) -> list[_Piece]:
    """Align a changed block piece by piece: each piece is the shortest stored text
    that shows as the next shown text, plus what follows and shows as nothing more
    (a zero-width space, the rest of a run of hidden characters)."""
    pieces: list[_Piece] = []
    start = shown_start = 0
    while start < len(stored):
        reach = min(len(stored), start + WINDOW)
        end = next(
            (
                k
                for k in range(start + 1, reach + 1)
                if shown.startswith(show(stored[start:k]), shown_start)
            ),
            None,
        )
        if end is None:
            pieces.append(
                _Piece(
                    at + start,
                    at + len(stored),
                    shown_at + shown_start,
                    shown_at + len(shown),
                    False,
                )
            )
            return pieces
        part = show(stored[start:end])
        while end < reach and show(stored[start : end + 1]) == part:
            end += 1
        same = stored[start:end] == part
        pieces.append(
            _Piece(
                at + start,
                at + end,
                shown_at + shown_start,
                shown_at + shown_start + len(part),
                same,
            )
        )
        start, shown_start = end, shown_start + len(part)
    if shown_start < len(shown):  # shown text left over: it belongs to the last piece
        last = pieces.pop() if pieces else _Piece(at, at, shown_at, shown_at, False)
        pieces.append(last._replace(shown_end=shown_at + len(shown), same=False))
    return pieces


def _pieces(stored: str, shown: str, show: Show) -> list[_Piece]:
    """Align stored and shown text: lines first (most are unchanged), then the
    characters of the lines that changed."""
    stored_lines, shown_lines = stored.splitlines(True), shown.splitlines(True)
    a, b = _offsets(stored_lines), _offsets(shown_lines)
    pieces: list[_Piece] = []
    matcher = SequenceMatcher(None, stored_lines, shown_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            pieces.append(_Piece(a[i1], a[i2], b[j1], b[j2], True))
        elif i2 - i1 == j2 - j1:  # the same lines, each normalised: align line by line
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                pieces += _chars(stored_lines[i], shown_lines[j], a[i], b[j], show)
        else:
            pieces += _chars(stored[a[i1] : a[i2]], shown[b[j1] : b[j2]], a[i1], b[j1], show)
    return [piece for piece in pieces if piece.shown_end > piece.shown_start]


def shown_spans(stored: str, wanted: str, show: Show) -> list[tuple[int, int]]:
    """The spans of `stored` that a read shows as `wanted`, taken as pasted or
    normalised by `show` (which need not give its own output back unchanged).

    A span is kept only if the stored text inside it shows as exactly that text, so a
    doubtful alignment finds nothing rather than the wrong text.
    """
    shown = show(stored)
    targets = [t for t in dict.fromkeys((wanted, show(wanted))) if t]
    if not targets or not shown:
        return []
    pieces = _pieces(stored, shown, show)
    starts = [piece.shown_start for piece in pieces]

    def stored_start(position: int) -> int | None:
        piece = pieces[bisect_right(starts, position) - 1]
        if piece.same:
            return piece.stored_start + position - piece.shown_start
        return piece.stored_start if position == piece.shown_start else None

    def stored_end(position: int) -> int | None:
        piece = pieces[bisect_left(starts, position) - 1]
        if piece.same:
            return piece.stored_start + position - piece.shown_start
        return piece.stored_end if position == piece.shown_end else None

    spans: set[tuple[int, int]] = set()
    for target in targets:
        found = shown.find(target)
        while found != -1:
            start, end = stored_start(found), stored_end(found + len(target))
            if start is not None and end is not None and show(stored[start:end]) == target:
                spans.add(_trimmed(stored, start, end, target, show))
            found = shown.find(target, found + 1)
    return sorted(spans)


def _trimmed(stored: str, start: int, end: int, target: str, show: Show) -> tuple[int, int]:
    """The span without characters at its edges that show as nothing (a zero-width
    space an alignment took along), so they stay where they are."""
    while end - start > 1 and not show(stored[end - 1]) and show(stored[start : end - 1]) == target:
        end -= 1
    while end - start > 1 and not show(stored[start]) and show(stored[start + 1 : end]) == target:
        start += 1
    return start, end
