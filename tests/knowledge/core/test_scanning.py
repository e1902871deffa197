from __future__ import annotations

from knowledge.core.scanning import ScanSpec, scan


def _table(result):
    return {row.path: (row.format, row.status, row.reason) for row in result.rows}


def test_the_sample_folder_scans_into_exactly_the_expected_review_table(sample_folder):
    result = scan(ScanSpec(root=sample_folder))
    assert _table(result) == {
        ".private/": ("", "skipped", "hidden"),
        "blob.txt": ("text", "skipped", "binary content (NUL bytes)"),
        "escape.txt": ("text", "skipped", "symbolic link (not followed)"),
        "guide/setup.md": ("markdown", "new", ""),
        "latin1.txt": ("text", "skipped", "not valid UTF-8 (byte 3)"),
        "locked.pdf": ("PDF", "skipped", "PDF is encrypted (password-protected)"),
        "manual.pdf": ("PDF", "new", ""),
        "node_modules/": ("", "skipped", "dependency, build or tool folder"),
        "notes.txt": ("text", "new", ""),
        "photo.png": ("", "skipped", "format not supported"),
        "scan.pdf": ("PDF", "skipped", "PDF has no extractable text (image-only or scanned)"),
        "tool.py": ("code", "new", ""),
    }
    assert result.summary()["formats"] == {"PDF": 1, "code": 1, "markdown": 1, "text": 1}


def test_known_hashes_mark_unchanged_changed_and_deleted(sample_folder):
    first = scan(ScanSpec(root=sample_folder))
    hashes = {row.path: row.sha256 for row in first.rows if row.sha256}
    hashes["gone.md"] = "0" * 64
    (sample_folder / "notes.txt").write_text("Alpacas hum.\n")
    second = _table(scan(ScanSpec(root=sample_folder, known_hashes=hashes)))
    assert second["notes.txt"][1] == "changed"
    assert second["tool.py"][1] == "unchanged"
    assert second["gone.md"][1] == "deleted"


def test_a_symlinked_root_is_an_error(sample_folder, tmp_path):
    link = tmp_path / "link"
    link.symlink_to(sample_folder)
    result = scan(ScanSpec(root=link))
    assert "symbolic link" in result.fatal and result.rows == []


def test_a_missing_root_reports_every_known_file_deleted(tmp_path):
    result = scan(ScanSpec(root=tmp_path / "gone", known_hashes={"a.md": "x"}))
    assert result.missing_root and [(r.path, r.status) for r in result.rows] == [
        ("a.md", "deleted")
    ]


def test_include_globs_only_narrow_the_allowlist(sample_folder):
    table = _table(scan(ScanSpec(root=sample_folder, include=("*.md", "*.png"))))
    assert table["guide/setup.md"][1] == "new"
    assert table["notes.txt"] == ("text", "skipped", "not matched by the include patterns")
    assert table["photo.png"] == ("", "skipped", "format not supported")


def test_exclude_globs_and_gitignore(sample_folder):
    (sample_folder / ".gitignore").write_text("tool.py\n")
    table = _table(scan(ScanSpec(root=sample_folder, exclude=("guide/",))))
    assert table["tool.py"] == ("code", "skipped", "ignored by .gitignore")
    assert table["guide/setup.md"] == ("markdown", "skipped", "excluded by a pattern")


def test_files_over_the_size_limit_are_skipped(sample_folder):
    (sample_folder / "big.txt").write_text("x" * (2 * 1024 * 1024))
    table = _table(scan(ScanSpec(root=sample_folder, max_file_bytes=1024 * 1024)))
    assert table["big.txt"] == ("text", "skipped", "larger than the limit of 1 MiB")


def test_a_scan_stops_at_5000_files(tmp_path, monkeypatch):
    from knowledge.core import scanning

    monkeypatch.setattr(scanning, "MAX_FILES", 3)
    for i in range(5):
        (tmp_path / f"f{i}.txt").write_text("x")
    result = scan(ScanSpec(root=tmp_path))
    assert "stopped after 3 files" in result.limit_reached
    assert len([r for r in result.rows if r.status == "new"]) == 3


def test_a_folder_swapped_for_a_symlink_during_the_walk_is_not_followed(
    sample_folder, tmp_path_factory
):
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.md").write_text("the admin password")
    swapped = []

    def swap_once() -> bool:
        # Runs after the root was listed (so "guide" is known as a folder) and before
        # the walk enters it: the worst moment for a swap.
        if not swapped:
            (sample_folder / "guide").rename(sample_folder.parent / "guide-moved")
            (sample_folder / "guide").symlink_to(outside, target_is_directory=True)
            swapped.append(True)
        return False

    table = _table(scan(ScanSpec(root=sample_folder), should_stop=swap_once))
    assert "guide/secret.md" not in table
    assert table["guide/"] == ("", "skipped", "symbolic link (not followed)")


def test_a_root_whose_parent_is_a_symlink_is_an_error(sample_folder, tmp_path):
    (tmp_path / "via").symlink_to(tmp_path, target_is_directory=True)
    result = scan(ScanSpec(root=tmp_path / "via" / sample_folder.name))
    assert "symbolic link" in result.fatal and result.rows == []
