"""The line delta between two versions of a context block (B9)."""

from __future__ import annotations

from host.core.line_delta import line_delta


def test_added_and_removed_lines_keep_their_blocks_order():
    delta = line_delta("a\nb\nc", "b\nd\nc\ne")
    assert delta.added == ["d", "e"] and delta.removed == ["a"]


def test_a_repeated_line_counts_as_often_as_it_appears():
    assert line_delta("x\nx", "x").removed == ["x"]
    assert line_delta("x", "x\nx").added == ["x"]


def test_blank_lines_and_a_reordering_are_no_change():
    assert line_delta("a\n\nb", "b\na\n\n\n").empty


def test_past_the_token_bound_or_half_the_new_block_the_delta_is_too_big():
    new = "\n".join(f"line number {i} of a longer block" for i in range(20))
    small = line_delta(new.rsplit("\n", 1)[0], new)
    assert not small.too_big(new, max_tokens=100)
    assert small.too_big(new, max_tokens=5)
    assert line_delta("", new).too_big(new, max_tokens=10_000)  # all of it is new
