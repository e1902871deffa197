from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from host.core.budget import Candidate, pack


def test_a_large_item_is_skipped_and_a_smaller_later_one_still_goes():
    items = [Candidate("a", 50, 50), Candidate("big", 900, 900), Candidate("c", 40, 40)]
    packed = pack(items, max_tokens=100)
    assert [c.value for c in packed.sent] == ["a", "c"]
    assert packed.omitted == 1


def test_mandatory_items_are_always_sent_and_use_up_room():
    items = [Candidate("rules", 80, 0, mandatory=True), Candidate("a", 30, 30)]
    packed = pack(items, max_tokens=100)
    assert [c.value for c in packed.sent] == ["rules"]
    assert packed.omitted == 1


def test_byte_cap_applies_too():
    packed = pack([Candidate("a", 1, 60), Candidate("b", 1, 60)], max_tokens=100, max_bytes=100)
    assert [c.value for c in packed.sent] == ["a"]


sizes = st.lists(st.tuples(st.integers(0, 400), st.integers(0, 1000)), max_size=40)


@given(sizes, st.integers(0, 2000), st.integers(0, 5000))
def test_packing_never_exceeds_the_budget_and_never_cuts_an_item(items, budget, max_bytes):
    candidates = [Candidate(i, tokens, size) for i, (tokens, size) in enumerate(items)]
    packed = pack(candidates, max_tokens=budget, max_bytes=max_bytes)
    assert packed.tokens <= budget
    assert packed.size <= max_bytes
    assert sorted(c.value for c in packed.sent + packed.left_out) == list(range(len(items)))
    sent_values = [c.value for c in packed.sent]
    assert sent_values == sorted(sent_values)  # order is kept
    for skipped in packed.left_out:
        # Anything left out would not have fit at the moment it was considered.
        assert skipped.tokens > 0 or skipped.size > 0
