"""Reading other tools' exports into items (M23), without Django."""

from __future__ import annotations

import pytest

from memory_addon.core.imports import ImportRefused, parse_import


def test_markdown_gives_one_item_per_bullet_and_paragraph_and_skips_what_is_not_a_note():
    text = (
        "# AGENTS.md\n"
        "**Conventions**\n"
        "- Use ruff.\n"
        "- Keep modules small,\n"
        "  under 800 lines.\n"
        "\n"
        "```sh\nmake test\n```\n"
        "<!-- a comment\nover two lines -->\n"
        "| a | b |\n"
        "---\n"
        "Tests run against PostgreSQL.\n"
        "Never against SQLite.\n"
    )
    items = parse_import("agents_md", text)
    assert [(i.text, i.line) for i in items] == [
        ("Use ruff.", 3),
        ("Keep modules small, under 800 lines.", 4),
        ("Tests run against PostgreSQL. Never against SQLite.", 14),
    ]
    assert [i.item for i in items] == [1, 2, 3]


def test_a_paragraph_longer_than_a_note_is_cut_at_sentence_ends():
    sentence = "This sentence is about forty-five characters. "
    items = parse_import("claude", sentence * 10)
    assert len(items) == 2 and all(len(i.text) <= 300 for i in items)
    assert all(i.text.endswith("characters.") for i in items)


def test_chatgpt_text_drops_bullets_and_numbers_and_skips_blank_lines():
    items = parse_import("chatgpt", "1. Likes tea\n\n• Lives in Lyon\r\n- Has a cat\n")
    assert [(i.text, i.line) for i in items] == [
        ("Likes tea", 1),
        ("Lives in Lyon", 3),
        ("Has a cat", 4),
    ]


def test_mem0_wrapped_in_results_keeps_ids_and_dates():
    (item,) = parse_import(
        "mem0", '{"results": [{"id": 7, "memory": "Likes tea", "updated_at": "2025-01-02"}]}'
    )
    assert (item.text, item.original_id, item.original_date) == ("Likes tea", "7", "2025-01-02")


@pytest.mark.parametrize(
    ("kind", "text", "where"),
    [
        ("mem0", '[{"memory": 3}]', "item 1"),
        ("mem0", '["just text"]', "item 1"),
        ("chatgpt", "[1]", "item 1"),
        ("mem0", "{}", "line 1"),
        ("claude", "ok\n\n" + "x" * 301, "line 3"),
    ],
)
def test_what_cannot_be_read_is_refused_naming_where(kind, text, where):
    with pytest.raises(ImportRefused) as refused:
        parse_import(kind, text)
    assert refused.value.where == where
