"""Helpers for add-on tests: packages as zips, the example add-on, an entry point."""

from __future__ import annotations

import io
import json
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.factories import UserFactory

EXAMPLE = ROOT / "examples" / "tone_of_voice"
EXAMPLE_PACKAGE = EXAMPLE / "tone_of_voice"


def zip_of(files: dict[str, bytes | str], **info: Any) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def folder_files(folder: Path) -> dict[str, bytes | str]:
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.suffix != ".py" and "__pycache__" not in path.parts
    }


def example_zip() -> bytes:
    """The example add-on zipped the way docs/addons.md says."""
    return zip_of(folder_files(EXAMPLE_PACKAGE))


def manifest(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EXAMPLE_PACKAGE / "manifest.json").read_text())
    data.update(changes)
    return data


@pytest.fixture
def admin(db: None):
    return UserFactory(is_superuser=True, is_staff=True)


@pytest.fixture
def person(db: None):
    return UserFactory()


@pytest.fixture
def example_distribution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The example installed as a Python distribution would be: its package importable and a
    dist-info folder declaring the entry point (what `pip install` writes)."""
    info = tmp_path / "memory_host_tone_of_voice-1.0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: memory-host-tone-of-voice\nVersion: 1.0.0\n"
    )
    (info / "entry_points.txt").write_text("[memory_host.addons]\ntone-of-voice = tone_of_voice\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(EXAMPLE))
    yield "tone-of-voice"
    sys.modules.pop("tone_of_voice", None)
