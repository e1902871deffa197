from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_addon.core import entries

entry_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="<>\r"),
    min_size=1,
    max_size=entries.MAX_ENTRY_CHARS,
).filter(lambda t: t.strip() and len(t.strip()) <= entries.MAX_ENTRY_CHARS)


@given(entry_text)
def test_rendered_entry_parses_back_as_the_same_machine_entry(text):
    block = entries.render_entry(
        text, entry_id="ab12", origin="assistant", created="2026-11-02", source="chat"
    )
    items = entries.parse_items(f"My own paragraph.\n\n{block}\n")
    assert [item.kind for item in items] == ["person", "machine"]
    machine = items[1]
    assert machine.text == text.strip()
    assert (machine.entry_id, machine.origin, machine.created, machine.source) == (
        "ab12",
        "assistant",
        "2026-11-02",
        "chat",
    )


@given(entry_text, entry_text)
def test_editing_an_entry_makes_it_the_persons_text(text, edit):
    block = entries.render_entry(
        text, entry_id="ab12", origin="assistant", created="2026-11-02", source="chat"
    )
    if edit.strip() == text.strip():
        return
    edited = block.replace(f"\n{text.strip()}\n", f"\n{edit.strip()}\n")
    (item,) = entries.parse_items(edited)
    assert item.kind == "person"
    assert item.entry_id == ""


def test_entry_longer_than_300_characters_is_refused():
    with pytest.raises(entries.EntryRefused, match="at most 300"):
        entries.render_entry(
            "x" * 301, entry_id="a", origin="assistant", created="2026-01-01", source="chat"
        )


def test_entry_cannot_smuggle_a_fence():
    with pytest.raises(entries.EntryRefused, match="comment markers"):
        entries.render_entry(
            "a --> b", entry_id="a", origin="assistant", created="2026-01-01", source="chat"
        )


def test_unclosed_fence_is_the_persons_text():
    items = entries.parse_items(
        "<!-- memory:entry id=a origin=x sha256=y created=z source=chat -->\n- note"
    )
    assert [item.kind for item in items] == ["person"]


def test_send_order_puts_person_paragraphs_first_then_newest_entries():
    old = entries.render_entry(
        "- old", entry_id="o", origin="assistant", created="2026-01-01", source="chat"
    )
    new = entries.render_entry(
        "- new", entry_id="n", origin="assistant", created="2026-06-01", source="chat"
    )
    content = f"{old}\n\nFirst para.\n\n{new}\n\nSecond para."
    ordered = entries.send_order(entries.parse_items(content))
    assert [item.text for item in ordered] == ["First para.", "Second para.", "- new", "- old"]


def test_keeps_person_text_detects_an_altered_paragraph():
    before = "I like tea.\n\nI live in Rome."
    assert entries.keeps_person_text(before, before + "\n\nmore")
    assert not entries.keeps_person_text(before, "I like coffee.\n\nI live in Rome.")
    assert not entries.keeps_person_text(before, "I live in Rome.\n\nI like tea.")


def test_replace_and_remove_touch_only_the_named_entry():
    one = entries.render_entry(
        "- one", entry_id="e1", origin="assistant", created="2026-01-01", source="chat"
    )
    two = entries.render_entry(
        "- two", entry_id="e2", origin="assistant", created="2026-01-01", source="chat"
    )
    content = f"Mine.\n\n{one}\n\n{two}\n"
    removed = entries.replace_entry(content, "e1", None)
    assert [i.text for i in entries.parse_items(removed)] == ["Mine.", "- two"]
    with pytest.raises(entries.EntryRefused):
        entries.replace_entry(content, "missing", None)


def test_index_line_is_parsed():
    line = entries.parse_index_line("- home: lives in Rome -> home.md")
    assert line == entries.IndexLine("home", "lives in Rome", "home.md")
    assert entries.parse_index_line("just text") is None


def test_parsed_items_are_kept_per_text_but_each_caller_gets_its_own_list():
    content = "- tea: likes tea -> tea.md\n\n- cats: has two cats -> cats.md\n"
    first = entries.parse_items(content)
    first.clear()  # a caller that reorders or empties its list harms nobody else
    again = entries.parse_items(content)
    assert [item.text for item in again] == [
        "- tea: likes tea -> tea.md",
        "- cats: has two cats -> cats.md",
    ]
    big = content + "x\n" * entries.PARSE_CACHE_MAX_CHARS
    assert entries.parse_items(big)[0].text == "- tea: likes tea -> tea.md"


def _block(text: str, entry_id: str = "ab12") -> str:
    return entries.render_entry(
        text, entry_id=entry_id, origin="automatic", created="2026-11-02", source="chat"
    )


def test_a_persons_write_keeps_entries_exactly_as_the_machine_left_them():
    content = f"Mine.\n\n{_block('- lives in Rome')}\n"
    marks = entries.entry_marks(content)
    assert entries.claim_changed_entries(content, marks) == content


def test_a_persons_write_unfences_an_entry_whose_text_it_changed():
    before = f"Mine.\n\n{_block('- lives in Rome')}\n"
    refenced = f"Mine.\n\n{_block('- lives in Milan')}\n"  # a fresh hash proves nothing
    claimed = entries.claim_changed_entries(refenced, entries.entry_marks(before))
    assert claimed == "Mine.\n\n- lives in Milan\n"
    assert entries.machine_entries(claimed) == []


def test_a_persons_write_unfences_a_block_whose_hash_no_longer_matches():
    broken = _block("- lives in Rome").replace("lives in Rome", "lives in Milan")
    claimed = entries.claim_changed_entries(f"{broken}\n", set())
    assert claimed == "- lives in Milan\n"


def test_a_pasted_entry_the_machine_never_wrote_is_the_persons_text():
    before = _block("- lives in Rome", "aaaa")
    after = f"{before}\n\n{_block('- likes tea', 'bbbb')}\n"
    claimed = entries.claim_changed_entries(after, entries.entry_marks(before))
    assert [i.entry_id for i in entries.machine_entries(claimed)] == ["aaaa"]
    assert claimed.endswith("\n\n- likes tea\n")
