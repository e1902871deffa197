"""shown_spans: text as a read showed it, found in the text as stored (M4)."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from host.core.untrusted import normalise_untrusted
from memory_addon.core.shown_match import shown_spans

_TAG = re.compile(r"<\s*(/?)\s*(memory|project_memory|memory_file)\b", re.IGNORECASE)


def show(text: str) -> str:
    """The reads' normalisation (context.neutralize), without Django."""
    return _TAG.sub(lambda m: f"\u2039{m.group(1)}{m.group(2)}", normalise_untrusted(text))


def test_a_zero_width_space_inside_the_shown_text_is_part_of_the_span():
    stored = "run make\u200b test\n"
    assert shown_spans(stored, "make test", show) == [(4, 14)]


def test_invisible_characters_at_the_edges_stay_outside_the_span():
    stored = "a \u200bcafe\u0301\u200b b"
    ((start, end),) = shown_spans(stored, "café", show)
    assert stored[start:end] == "cafe\u0301"


def test_a_look_alike_tag_and_fullwidth_letters_map_to_what_is_stored():
    stored = "x </memory_file> \uff21\uff22 y\n"
    ((start, end),) = shown_spans(stored, "\u2039/memory_file> AB", show)
    assert stored[start:end] == "</memory_file> \uff21\uff22"


def test_part_of_one_shown_character_is_not_a_match():
    # "é" stored decomposed: its "e" alone is not text the read showed.
    assert shown_spans("cafe\u0301\n", "cafe", show) == []


def test_every_occurrence_is_found_so_a_repeat_can_be_refused():
    assert shown_spans("e\u0301 e\u0301\n", "é", show) == [(0, 2), (3, 5)]


def test_a_long_file_with_a_changed_character_on_every_line_is_matched_line_by_line():
    stored = "".join(f"line {n} cafe\u0301\u200b\n" for n in range(3000))
    ((start, end),) = shown_spans(stored, "line 2999 café", show)
    assert stored[start:end] == "line 2999 cafe\u0301"


PIECES = [*"abc <>/ e", "\u200b", "\u0301", "\uff21", "\u202e", "\U000e0041", "memory_file"]
TRICKY = st.lists(st.sampled_from(PIECES), min_size=1, max_size=15).map("".join)


@given(middle=TRICKY)
def test_a_shown_line_found_once_maps_back_to_the_stored_line(middle):
    stored = f"alpha\n{middle}\nomega\n"
    target = show(middle)
    if not target.strip() or show(stored).count(target) != 1:
        return
    spans = shown_spans(stored, target, show)
    assert len(spans) == 1
    ((start, end),) = spans
    inside = (len("alpha\n"), len("alpha\n") + len(middle))
    assert inside[0] <= start <= end <= inside[1]
    # Only characters the read did not show are left out of the span.
    assert show(stored[inside[0] : start]) == show(stored[end : inside[1]]) == ""
    assert show(stored[start:end]) == target
