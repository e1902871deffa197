"""Safe scanning of a source into review rows (K2, K3, K4). Never follows symbolic links."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pathspec

from knowledge.core.extract import Page, Unreadable, pdf_pages, text_from_bytes
from knowledge.core.formats import PDF, format_of

JUNK_FOLDERS = frozenset(
    [
        ".git",
        ".hg",
        ".svn",
        ".gradle",
        ".idea",
        ".vscode",
        ".venv",
        "venv",
        "node_modules",
        "vendor",
        "build",
        "target",
        "dist",
        "out",
        "coverage",
        "__pycache__",
    ]
)
MAX_FILES = 5000
MAX_ACCEPTED_BYTES = 500 * 1024 * 1024
MAX_EXTRACTED_CHARS = 100 * 1024 * 1024

# Linux limits: one name is at most 255 bytes; our column holds 1024 characters.
MAX_NAME_BYTES = 255
MAX_FOLDER_PATH_CHARS = 1024

NEW, CHANGED, UNCHANGED, SKIPPED, DELETED = "new", "changed", "unchanged", "skipped", "deleted"


@dataclass(frozen=True)
class ScanSpec:
    root: Path
    files: tuple[str, ...] = ()  # relative paths: only these (an upload source)
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    use_gitignore: bool = True
    max_file_bytes: int = 50 * 1024 * 1024
    known_hashes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Row:
    path: str
    format: str
    size: int
    status: str
    reason: str = ""
    sha256: str = ""


@dataclass
class ScanResult:
    rows: list[Row] = field(default_factory=list)
    fatal: str = ""
    missing_root: bool = False
    limit_reached: str = ""
    extracted_chars: int = 0

    def summary(self) -> dict[str, object]:
        counts = dict.fromkeys((NEW, CHANGED, UNCHANGED, SKIPPED, DELETED), 0)
        formats: dict[str, int] = {}
        for row in self.rows:
            counts[row.status] += 1
            if row.status in (NEW, CHANGED, UNCHANGED):
                formats[row.format] = formats.get(row.format, 0) + 1
        return {"counts": counts, "formats": dict(sorted(formats.items()))}


class Cancelled(Exception):
    pass


def folder_path_problem(raw: str) -> str:
    """Why a typed folder path can never be valid (empty when it may be), before any disk access."""
    if "\x00" in raw:
        return "The folder path contains a NUL character; type the path without it."
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in raw):
        return "The folder path contains a control character (such as a line break); remove it."
    if len(raw) > MAX_FOLDER_PATH_CHARS:
        return f"The folder path is longer than {MAX_FOLDER_PATH_CHARS} characters."
    for part in raw.split("/"):
        if len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
            return (
                f"One folder name in the path is longer than {MAX_NAME_BYTES} bytes, "
                f"which no folder can be: {part[:40]}…"
            )
    return ""


def _walk(root: Path) -> Iterator[tuple[str, os.stat_result | None, str]]:
    """(relative path, stat or None, skip reason) for each entry, without following links."""
    stack = [""]
    while stack:
        relative_dir = stack.pop()
        try:
            entries = sorted(os.scandir(root / relative_dir), key=lambda e: e.name)
        except OSError as error:
            yield relative_dir or ".", None, f"folder cannot be read ({error.strerror})"
            continue
        subfolders: list[str] = []
        for entry in entries:
            relative = f"{relative_dir}/{entry.name}" if relative_dir else entry.name
            if entry.is_symlink():
                yield relative, None, "symbolic link (not followed)"
                continue
            if entry.name.startswith("."):
                yield (
                    relative + ("/" if entry.is_dir(follow_symlinks=False) else ""),
                    None,
                    "hidden",
                )
                continue
            if entry.is_dir(follow_symlinks=False):
                if entry.name in JUNK_FOLDERS:
                    yield relative + "/", None, "dependency, build or tool folder"
                else:
                    subfolders.append(relative)
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError as error:
                yield relative, None, f"cannot be read ({error.strerror})"
                continue
            if not stat.S_ISREG(info.st_mode):
                yield relative, None, "not a regular file"
                continue
            yield relative, info, ""
        # Depth-first in name order: pop() takes the last pushed, so push reversed.
        stack.extend(reversed(subfolders))


def _spec(patterns: tuple[str, ...]) -> pathspec.PathSpec[Any] | None:
    lines = [p for p in patterns if p.strip()]
    return pathspec.PathSpec.from_lines("gitignore", lines) if lines else None


def _gitignore(root: Path) -> pathspec.PathSpec[Any] | None:
    ignore = root / ".gitignore"
    if ignore.is_file() and not ignore.is_symlink():
        try:
            return pathspec.PathSpec.from_lines("gitignore", ignore.read_text().splitlines())
        except (OSError, UnicodeDecodeError):
            return None
    return None


def read_document(path: Path, fmt: str, *, max_chars: int) -> list[Page]:
    """The pages of one accepted file (text files are one page without a number)."""
    if fmt == PDF:
        return list(pdf_pages(path, max_chars=max_chars))
    with path.open("rb") as handle:
        data = handle.read()
    return [Page(None, text_from_bytes(data))]


def scan(spec: ScanSpec, *, should_stop: Callable[[], bool] = lambda: False) -> ScanResult:
    result = ScanResult()
    root = spec.root
    if root.is_symlink():
        result.fatal = "The source path is a symbolic link; links are never followed."
        return result
    if not root.exists():
        result.missing_root = True
        result.rows = [Row(p, format_of(p) or "", 0, DELETED) for p in sorted(spec.known_hashes)]
        return result
    if not root.is_dir():
        result.fatal = "The source path is not a folder."
        return result
    include, exclude = _spec(spec.include), _spec(spec.exclude)
    ignored = _gitignore(root) if spec.use_gitignore else None
    wanted = set(spec.files)
    seen: set[str] = set()
    visited = accepted_bytes = 0
    for relative, info, skip_reason in _walk(root):
        if should_stop():
            raise Cancelled
        if wanted and relative.rstrip("/") not in wanted:
            continue
        fmt = format_of(relative) or ""
        if skip_reason:
            result.rows.append(Row(relative, fmt, 0, SKIPPED, skip_reason))
            continue
        assert info is not None  # noqa: S101 - _walk gives stat for every file it does not skip
        visited += 1
        if visited > MAX_FILES:
            result.limit_reached = f"The scan stopped after {MAX_FILES} files."
            break
        size = info.st_size
        reason = ""
        if ignored and ignored.match_file(relative):
            reason = "ignored by .gitignore"
        elif exclude and exclude.match_file(relative):
            reason = "excluded by a pattern"
        elif not fmt:
            reason = "format not supported"
        elif include and not include.match_file(relative):
            reason = "not matched by the include patterns"
        elif size > spec.max_file_bytes:
            reason = f"larger than the limit of {spec.max_file_bytes // (1024 * 1024)} MiB"
        elif accepted_bytes + size > MAX_ACCEPTED_BYTES:
            reason = "the scan reached 500 MiB of accepted files"
        if reason:
            result.rows.append(Row(relative, fmt, size, SKIPPED, reason))
            continue
        path = root / relative
        try:
            digest = file_hash(path)
            if spec.known_hashes.get(relative) == digest:
                status = UNCHANGED
            else:
                pages = read_document(
                    path, fmt, max_chars=MAX_EXTRACTED_CHARS - result.extracted_chars
                )
                chars = sum(len(page.text) for page in pages)
                if result.extracted_chars + chars > MAX_EXTRACTED_CHARS:
                    raise Unreadable("the scan reached 100 MiB of extracted text")
                result.extracted_chars += chars
                status = CHANGED if relative in spec.known_hashes else NEW
        except Unreadable as error:
            result.rows.append(Row(relative, fmt, size, SKIPPED, str(error)))
            continue
        except OSError as error:
            result.rows.append(
                Row(relative, fmt, size, SKIPPED, f"cannot be read ({error.strerror})")
            )
            continue
        accepted_bytes += size
        seen.add(relative)
        result.rows.append(Row(relative, fmt, size, status, "", digest))
    for gone in sorted(set(spec.known_hashes) - seen):
        if not result.limit_reached and (not wanted or gone in wanted):
            result.rows.append(
                Row(gone, format_of(gone) or "", 0, DELETED, "no longer in the source")
            )
    return result


def file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1024 * 1024), b""):
            digest.update(block)
    return digest.hexdigest()
