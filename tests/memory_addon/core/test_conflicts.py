"""Topic keys and note comparison for conflicts (M23), without Django."""

from __future__ import annotations

import pytest

from memory_addon.core.conflicts import cosine, same_note, topic_key, without_lines


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("- home: lives in Rome -> home.md", "home"),
        ("Editor: Vim", "editor"),
        ("* Preferred  Language: German", "preferred language"),
        ("Note https://example.org: a link", ""),
        ("When I work late at night on things: tea", ""),
        ("No key here", ""),
    ],
)
def test_a_topic_key_is_a_short_label_before_the_first_colon(text, key):
    assert topic_key(text) == key


def test_same_note_ignores_spacing_bullets_and_case():
    assert same_note("- Likes  Tea") == same_note("likes tea")


def test_cosine_of_a_vector_with_itself_is_one_and_of_orthogonal_ones_zero():
    assert cosine([1.0, 2.0], [1.0, 2.0]) == pytest.approx(1.0)
    assert cosine([1.0, 0.0], [0.0, 1.0]) == 0.0


def test_without_lines_takes_the_separating_blank_line_too():
    assert without_lines("a\n\nb\n\nc\n", 3, 3) == "a\n\nc\n"
