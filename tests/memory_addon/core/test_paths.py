from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_addon.core.paths import BANK_TYPES, PathRefused, normalize_path


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("home.md", "home.md"), ("./notes//home.md", "notes/home.md"), (" a/b.md ", "a/b.md")],
)
def test_paths_are_normalized(raw, expected):
    assert normalize_path(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "/etc/passwd.md",
        "../up.md",
        "a/../../b.md",
        "C:/x.md",
        "~/x.md",
        "a\\b.md",
        ".hidden.md",
        "notes/.git/x.md",
        "con.md",
        "LPT1.md",
        "home.txt",
        "",
        "a\x00b.md",
        "a\u202eb.md",
        "x" * 300 + ".md",
    ],
)
def test_bad_paths_are_refused(raw):
    with pytest.raises(PathRefused):
        normalize_path(raw)


@given(st.text(max_size=80))
def test_normalized_paths_are_stable_relative_markdown_paths(raw):
    try:
        path = normalize_path(raw)
    except PathRefused:
        return
    assert normalize_path(path) == path
    assert path.endswith(".md")
    assert not path.startswith("/")
    assert ".." not in path.split("/")
    assert all(part and not part.startswith(".") for part in path.split("/"))


@pytest.mark.parametrize("raw", ["plan.xml", "notes/todo.txt", "MEMORY.md"])
def test_a_bank_path_may_also_be_plain_text_or_xml(raw):
    assert normalize_path(raw, types=BANK_TYPES) == raw
    if not raw.endswith(".md"):
        with pytest.raises(PathRefused, match=r"Only Markdown files ending in \.md"):
            normalize_path(raw)


@pytest.mark.parametrize("raw", ["photo.png", "notes.txt.exe", "\u041cEMORY.xml"])
def test_a_bank_path_of_another_type_or_mixed_scripts_is_refused(raw):
    with pytest.raises(PathRefused):
        normalize_path(raw, types=BANK_TYPES)


@pytest.mark.parametrize(
    "raw",
    ["\u041cEMORY.md", "notes/p\u0430ssword.md", "\u0391lpha/notes.md", "caf\u03b5.md"],
)
def test_a_name_mixing_look_alike_scripts_is_refused(raw):
    """A Cyrillic capital Em in front of "EMORY.md" would pass for the bank's MEMORY.md."""
    with pytest.raises(PathRefused, match="can look alike"):
        normalize_path(raw)


@pytest.mark.parametrize(
    "raw",
    [
        "\u0417\u0430\u043c\u0435\u0442\u043a\u0438.md",
        "\u03b8\u03ad\u03bc\u03b1/a.md",
        "Übersicht.md",
        "日本/メモ.md",
    ],
)
def test_a_name_in_one_script_stays_allowed(raw):
    assert normalize_path(raw) == raw
