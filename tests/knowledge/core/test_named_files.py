"""The bounded search for files by name: links, bounds shared across folders, `.git` lookup."""

from __future__ import annotations

import os

from knowledge.core import named_files, scanning


def _search(**bounds) -> named_files.Search:
    return named_files.Search(
        wanted=lambda relative: relative.endswith("AGENTS.md"),
        enters=lambda relative: True,
        max_depth=bounds.get("max_depth", 5),
        max_entries=bounds.get("max_entries", 1000),
        deadline=1.0,
        now=lambda: 0.0,
    )


def _walk(search: named_files.Search, folder) -> None:
    fd = scanning.open_folder(folder)
    try:
        search.walk(fd, str(folder))
    finally:
        os.close(fd)


def test_the_entry_bound_counts_over_every_folder_searched(tmp_path):
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        for n in range(3):
            (tmp_path / name / f"{n}.txt").write_text("x")
        (tmp_path / name / "AGENTS.md").write_text("x")
    search = _search(max_entries=6)
    _walk(search, tmp_path / "one")
    assert [f.relative for f in search.found] == [str(tmp_path / "one" / "AGENTS.md")]
    _walk(search, tmp_path / "two")
    assert search.stopped == "entries" and len(search.found) == 1


def test_a_linked_folder_is_not_entered_and_a_linked_file_is_named_with_the_reason(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "AGENTS.md").write_text("x")
    root = tmp_path / "root"
    root.mkdir()
    (root / "in").symlink_to(outside, target_is_directory=True)
    (root / "AGENTS.md").symlink_to(outside / "AGENTS.md")
    search = _search()
    _walk(search, root)
    assert search.found == []
    assert [(s.relative, s.reason) for s in search.skipped] == [
        (str(root / "AGENTS.md"), "symbolic link (not followed)")
    ]


def test_entry_on_the_way_finds_a_git_folder_above_the_file_but_not_beside_the_way(tmp_path):
    (tmp_path / "repo" / "src").mkdir(parents=True)
    (tmp_path / "other" / ".git").mkdir(parents=True)
    fd = scanning.open_folder(tmp_path)
    try:
        assert not named_files.entry_on_the_way(fd, "repo/src/AGENTS.md", ".git")
        (tmp_path / "repo" / ".git").write_text("gitdir: /x\n")
        assert named_files.entry_on_the_way(fd, "repo/src/AGENTS.md", ".git")
    finally:
        os.close(fd)
