"""Untrusted packages: size caps, traversal, links, zip bombs, duplicates, missing files."""

from __future__ import annotations

import io
import json
import stat
import zipfile
from importlib.resources import files

import pytest

from addons.core.package import (
    MAX_FILE_BYTES,
    MAX_PACKAGE_BYTES,
    PackageRefused,
    package_from_folder,
    package_from_zip,
)
from tests.addons.conftest import EXAMPLE_PACKAGE, example_zip, manifest, zip_of

MANIFEST = json.dumps(manifest())
CONTEXT = {f"context/{tone}.md": f"# {tone}\n" for tone in ("friendly", "formal", "brief")}
PAGE = {"pages/index.html": "<p>hi</p>"}


def good(**extra: bytes | str) -> dict[str, bytes | str]:
    return {"manifest.json": MANIFEST, **CONTEXT, **PAGE, **extra}


def test_the_example_zip_installs_with_its_files():
    package = package_from_zip(example_zip())
    assert package.manifest.id == "tone-of-voice"
    assert "context/formal.md" in package.files and "manifest.json" not in package.files
    assert set(package.files) >= {"pages/index.html", "pages/page.js", "pages/page.css"}


def test_the_example_folder_reads_like_its_zip_without_python_files():
    from_folder = package_from_folder(files("tests").joinpath("..") / EXAMPLE_PACKAGE)
    assert from_folder.files == package_from_zip(example_zip()).files
    assert not any(path.endswith(".py") for path in from_folder.files)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("../evil.md", "'..'"),
        ("context/../../evil.md", "'..'"),
        ("/etc/passwd.md", "absolute"),
        ("C:/x.md", "absolute"),
        ("context\\evil.md", "backslashes"),
        ("context/\u202eevil.md", "control characters"),
        ("a\x01.md", "control characters"),
    ],
)
def test_hostile_names_are_refused(name, reason):
    with pytest.raises(PackageRefused, match=reason):
        package_from_zip(zip_of(good(**{name: "x"})))


def test_a_symlink_entry_is_refused():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in good().items():
            archive.writestr(name, data)
        link = zipfile.ZipInfo("context/link.md")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(link, "/etc/passwd")
    with pytest.raises(PackageRefused, match="links are not allowed"):
        package_from_zip(buffer.getvalue())


def test_a_zip_bomb_is_refused_before_it_is_inflated():
    bomb = zip_of(good(**{"pages/big.txt": b"0" * (50 * 1024 * 1024)}))
    assert len(bomb) < MAX_PACKAGE_BYTES  # small on the wire
    with pytest.raises(PackageRefused, match=r"at most 256 KiB|more than 2048 KiB"):
        package_from_zip(bomb)


def test_an_entry_that_lies_about_its_size_is_cut_off():
    data = zip_of(good(**{"pages/lie.txt": b"A" * 100_000}))
    # Patch the declared size in both headers down to 10 bytes; the stream still inflates 100 KB.
    info = zipfile.ZipFile(io.BytesIO(data)).getinfo("pages/lie.txt")
    raw = bytearray(data)
    fake = (10).to_bytes(4, "little")
    raw[info.header_offset + 22 : info.header_offset + 26] = fake  # local header
    at = raw.find(b"PK\x01\x02")
    while at != -1:  # the central directory record of the same file
        length = int.from_bytes(raw[at + 28 : at + 30], "little")
        if raw[at + 46 : at + 46 + length] == b"pages/lie.txt":
            raw[at + 24 : at + 28] = fake
        at = raw.find(b"PK\x01\x02", at + 4)
    assert zipfile.ZipFile(io.BytesIO(bytes(raw))).getinfo("pages/lie.txt").file_size == 10
    with pytest.raises(PackageRefused, match=r"more than it declares|damaged"):
        package_from_zip(bytes(raw))


@pytest.mark.parametrize(
    ("files", "reason"),
    [
        ({"context/x.md": "x"}, "no manifest.json"),
        (good(**{"tool.py": "import os"}), "file type is not allowed"),
        (good(**{"run.exe": b"MZ"}), "file type is not allowed"),
        (good(**{"Context/Formal.md": "x"}), "two files have this name"),
        ({k: v for k, v in good().items() if k != "context/brief.md"}, "context/brief.md is not"),
        ({k: v for k, v in good().items() if k != "pages/index.html"}, "pages/index.html is not"),
        (good(**{"context/formal.md": b"\xff\xfe"}), "must be UTF-8"),
        (good(**{"context/formal.md": "x" * (17 * 1024)}), "at most 16 KiB"),
        ({**good(), "manifest.json": "{}"}, "api: must be 2"),
        (
            {**good(), "manifest.json": json.dumps({**manifest(), "id": "Bad"})},
            "id: 'Bad' does not fit",
        ),
        ({f"pages/{n}.txt": "x" for n in range(101)}, "more than 100 files"),
        (good(**{"pages/big.png": b"0" * (MAX_FILE_BYTES + 1)}), "at most 256 KiB"),
    ],
    ids=[
        "no manifest",
        "python",
        "executable",
        "case duplicate",
        "missing context variant",
        "missing page",
        "not utf-8",
        "context file too big",
        "wrong api",
        "bad manifest id",
        "too many files",
        "file too big",
    ],
)
def test_bad_packages_are_refused_with_the_reason(files, reason):
    with pytest.raises(PackageRefused, match=reason):
        package_from_zip(zip_of(files))


def test_an_oversized_upload_and_a_non_zip_are_refused():
    with pytest.raises(PackageRefused, match=r"is 1025 KiB; at most 1024 KiB is allowed"):
        package_from_zip(b"0" * (MAX_PACKAGE_BYTES + 1))
    with pytest.raises(PackageRefused, match="not a zip file"):
        package_from_zip(b"hello")
