"""Readable diffs: notes instead of fenced lines, word-level marks on a changed note."""

from __future__ import annotations

import pytest

from memory_addon.core.entries import render_entry
from memory_addon.core.readable_diff import (
    NoteRow,
    Segment,
    has_changes,
    notes_of,
    readable_diff,
    word_changes,
)


def entry(text: str, entry_id: str = "e1") -> str:
    return render_entry(
        text, entry_id=entry_id, origin="assistant", created="2026-01-01", source="chat"
    )


def rows(before: str, after: str) -> list[tuple[str, str]]:
    return [(row.kind, row.text) for row in readable_diff(before, after)]


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        ("", "", []),
        ("- a note\n", "- a note\n", [("same", "- a note")]),
        ("", "- new note\n", [("added", "- new note")]),
        ("- old note\n", "", [("removed", "- old note")]),
        # A machine entry shows its text only: the fences are hidden.
        ("", entry("lang: answers in Italian") + "\n", [("added", "lang: answers in Italian")]),
        (entry("lang: answers in Italian") + "\n", "", [("removed", "lang: answers in Italian")]),
        # A note that changed a little is one changed row, not a removal and an addition.
        (
            "- home: lives in Rome\n",
            "- home: lives in Berlin\n",
            [("changed", "- home: lives in Berlin")],
        ),
        # Unrelated notes at the same place are a removal and an addition.
        (
            "- home: lives in Rome\n",
            "- diet: no peanuts at all, ever\n",
            [("removed", "- home: lives in Rome"), ("added", "- diet: no peanuts at all, ever")],
        ),
        # Unchanged notes stay as context around a change, in file order.
        (
            "- a\n\n- b\n\n- c\n",
            "- a\n\n- c\n",
            [("same", "- a"), ("removed", "- b"), ("same", "- c")],
        ),
        # Only the fence changed (e.g. a new entry id): nothing a person would see changed.
        (
            entry("tone: short", "e1") + "\n",
            entry("tone: short", "e2") + "\n",
            [("same", "tone: short")],
        ),
    ],
)
def test_notes_are_matched_up(before, after, expected):
    assert rows(before, after) == expected


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        ("lives in Rome", "lives in Rome", [("same", "lives in Rome")]),
        (
            "lives in Rome",
            "lives in Berlin",
            [("same", "lives in "), ("removed", "Rome"), ("added", "Berlin")],
        ),
        (
            "likes tea",
            "likes green tea",
            [("same", "likes "), ("added", "green "), ("same", "tea")],
        ),
        ("a, b and c", "a and c", [("same", "a"), ("removed", ", b"), ("same", " and c")]),
        ("", "new", [("added", "new")]),
    ],
)
def test_word_changes(before, after, expected):
    assert [(s.kind, s.text) for s in word_changes(before, after)] == expected


def test_the_words_rebuild_both_texts():
    before, after = "answers in Italian, short", "answers in German, short and polite"
    segments = word_changes(before, after)
    assert "".join(s.text for s in segments if s.kind != "added") == before
    assert "".join(s.text for s in segments if s.kind != "removed") == after


def test_a_changed_row_carries_its_words():
    [row] = readable_diff("- lives in Rome\n", "- lives in Berlin\n")
    assert row == NoteRow(
        "changed",
        "- lives in Rome",
        "- lives in Berlin",
        (Segment("same", "- lives in "), Segment("removed", "Rome"), Segment("added", "Berlin")),
    )


def test_notes_of_drops_fences_and_blank_lines():
    text = "# Memory\n\n" + entry("lang: Italian") + "\n\n\n- home: Rome\n"
    assert notes_of(text) == ["# Memory", "lang: Italian", "- home: Rome"]
    assert not any("memory:entry" in note for note in notes_of(text))


def test_has_changes():
    assert not has_changes(readable_diff("- a\n", "- a\n"))
    assert has_changes(readable_diff("- a\n", "- b\n"))
