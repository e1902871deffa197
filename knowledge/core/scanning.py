"""Safe scanning of a source into review rows (K2, K3, K4). Never follows symbolic links."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NotRequired, TypedDict

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
    # Called with (sha256, pages) for each PDF the scan extracted, so the index job
    # can reuse the text instead of extracting the same file a second time.
    keep_pages: Callable[[str, list[Page]], None] | None = None


@dataclass(frozen=True)
class Row:
    path: str
    format: str
    size: int
    status: str
    reason: str = ""
    sha256: str = ""


class ReviewRow(TypedDict):
    """A Row as a scan job keeps it in its review (the person confirms these)."""

    path: str
    status: str  # new, changed, unchanged, skipped, deleted
    format: NotRequired[str]
    size: NotRequired[int]
    reason: NotRequired[str]
    sha256: NotRequired[str]


class ProblemRow(TypedDict):
    """A file an index job could not index, and why."""

    path: str
    reason: str


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


# Every open below "/" goes through a directory handle we already hold, one name at a
# time, and refuses links: a folder swapped for a link after we checked it cannot
# redirect us (openat-style walking; os.scandir lists through the handle too).
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO planted in the folder must not hang the worker.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY
_READ_BLOCK = 1024 * 1024


class UnsafePath(Exception):
    """A path that goes through a symbolic link (or a name we never walk, such as '..')."""


def open_dir_at(parent_fd: int, name: str, shown: str) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR):
            try:
                info = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
            except OSError:
                raise error from None
            if stat.S_ISLNK(info.st_mode):
                raise UnsafePath(f"{shown} is a symbolic link; links are never followed.") from None
        raise


def open_folder(path: Path) -> int:
    """A handle on an absolute folder, opened from / one name at a time without following links.

    Raises UnsafePath for a link anywhere on the way, FileNotFoundError when a part is
    missing and NotADirectoryError when a part is a file.
    """
    if not path.is_absolute():
        raise UnsafePath(f"{path} is not an absolute path.")
    fd = os.open("/", _DIR_FLAGS)
    walked = Path("/")
    try:
        for part in path.parts[1:]:
            if part in (".", ".."):
                raise UnsafePath(f"{path} contains {part!r}; give the plain path.")
            walked /= part
            parent, fd = fd, -1
            try:
                fd = open_dir_at(parent, part, str(walked))
            finally:
                os.close(parent)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        raise
    return fd


def open_below(root_fd: int, relative: str) -> int:
    """A handle on the regular file at `relative` under an open folder, refusing any link."""
    parts = relative.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise UnsafePath(f"{relative} is not a plain relative path.")
    fd = root_fd
    try:
        for index, part in enumerate(parts[:-1]):
            shown = "/".join(parts[: index + 1]) + "/"
            parent, fd = fd, open_dir_at(fd, part, shown)
            if parent != root_fd:
                os.close(parent)
        try:
            file_fd = os.open(parts[-1], _FILE_FLAGS, dir_fd=fd)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise UnsafePath(
                    f"{relative} is a symbolic link; links are never followed."
                ) from None
            raise
    finally:
        if fd != root_fd:
            os.close(fd)
    if not stat.S_ISREG(os.fstat(file_fd).st_mode):
        os.close(file_fd)
        raise Unreadable("not a regular file")
    return file_fd


def read_fd(fd: int, *, limit: int) -> bytes:
    """All bytes behind an open file, refusing more than `limit` (the file may grow meanwhile)."""
    parts: list[bytes] = []
    total = 0
    while block := os.read(fd, _READ_BLOCK):
        total += len(block)
        if total > limit:
            raise Unreadable(f"larger than the limit of {limit // (1024 * 1024)} MiB")
        parts.append(block)
    return b"".join(parts)


def read_below(root_fd: int, relative: str, *, limit: int) -> bytes:
    fd = open_below(root_fd, relative)
    try:
        return read_fd(fd, limit=limit)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class _Entry:
    relative: str
    info: os.stat_result | None
    skip_reason: str
    dir_fd: int = -1  # the open folder holding the file, valid while the walk waits
    name: str = ""


def _walk(dir_fd: int, relative_dir: str = "") -> Generator[_Entry]:
    """Every entry under an open folder, depth-first in name order, without following links."""
    try:
        with os.scandir(dir_fd) as listing:
            entries = sorted(listing, key=lambda e: e.name)
    except OSError as error:
        yield _Entry(relative_dir or ".", None, f"folder cannot be read ({error.strerror})")
        return
    subfolders: list[tuple[str, str]] = []
    for entry in entries:
        relative = f"{relative_dir}/{entry.name}" if relative_dir else entry.name
        if entry.is_symlink():
            yield _Entry(relative, None, "symbolic link (not followed)")
            continue
        if entry.name.startswith("."):
            folder = entry.is_dir(follow_symlinks=False)
            yield _Entry(relative + ("/" if folder else ""), None, "hidden")
            continue
        if entry.is_dir(follow_symlinks=False):
            if entry.name in JUNK_FOLDERS:
                yield _Entry(relative + "/", None, "dependency, build or tool folder")
            else:
                subfolders.append((entry.name, relative))
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError as error:
            yield _Entry(relative, None, f"cannot be read ({error.strerror})")
            continue
        if not stat.S_ISREG(info.st_mode):
            yield _Entry(relative, None, "not a regular file")
            continue
        yield _Entry(relative, info, "", dir_fd, entry.name)
    for name, relative in subfolders:
        try:
            child = open_dir_at(dir_fd, name, relative + "/")
        except UnsafePath:
            yield _Entry(relative + "/", None, "symbolic link (not followed)")
            continue
        except OSError as error:
            yield _Entry(relative + "/", None, f"folder cannot be read ({error.strerror})")
            continue
        try:
            yield from _walk(child, relative)
        finally:
            os.close(child)


def _spec(patterns: tuple[str, ...]) -> pathspec.PathSpec[Any] | None:
    lines = [p for p in patterns if p.strip()]
    return pathspec.PathSpec.from_lines("gitignore", lines) if lines else None


def _gitignore(root_fd: int) -> pathspec.PathSpec[Any] | None:
    try:
        data = read_below(root_fd, ".gitignore", limit=_READ_BLOCK)
        return pathspec.PathSpec.from_lines("gitignore", data.decode().splitlines())
    except (OSError, UnicodeDecodeError, Unreadable, UnsafePath):
        return None


def document_pages(data: bytes, fmt: str, *, max_chars: int) -> list[Page]:
    """The pages of one accepted file (text files are one page without a number)."""
    if fmt == PDF:
        return list(pdf_pages(data, max_chars=max_chars))
    return [Page(None, text_from_bytes(data))]


def scan(spec: ScanSpec, *, should_stop: Callable[[], bool] = lambda: False) -> ScanResult:
    result = ScanResult()
    try:
        root_fd = open_folder(spec.root)
    except UnsafePath as error:
        result.fatal = f"The source path goes through a symbolic link: {error}"
        return result
    except FileNotFoundError:
        result.missing_root = True
        result.rows = [Row(p, format_of(p) or "", 0, DELETED) for p in sorted(spec.known_hashes)]
        return result
    except NotADirectoryError:
        result.fatal = "The source path is not a folder."
        return result
    except OSError as error:
        result.fatal = f"The source folder cannot be opened ({error.strerror})."
        return result
    try:
        _scan_open(spec, root_fd, result, should_stop)
    finally:
        os.close(root_fd)
    return result


@dataclass(frozen=True)
class _Filters:
    """The patterns that keep a file out of a source."""

    include: pathspec.PathSpec[Any] | None
    exclude: pathspec.PathSpec[Any] | None
    ignored: pathspec.PathSpec[Any] | None  # the root's .gitignore, when the source uses it


def _scan_open(
    spec: ScanSpec, root_fd: int, result: ScanResult, should_stop: Callable[[], bool]
) -> None:
    filters = _Filters(
        include=_spec(spec.include),
        exclude=_spec(spec.exclude),
        ignored=_gitignore(root_fd) if spec.use_gitignore else None,
    )
    wanted = set(spec.files)
    seen: set[str] = set()
    visited = accepted_bytes = 0
    walk = _walk(root_fd)
    try:
        for entry in walk:
            if should_stop():
                raise Cancelled
            if wanted and entry.relative.rstrip("/") not in wanted:
                continue
            if entry.skip_reason:
                fmt = format_of(entry.relative) or ""
                result.rows.append(Row(entry.relative, fmt, 0, SKIPPED, entry.skip_reason))
                continue
            visited += 1
            if visited > MAX_FILES:
                result.limit_reached = f"The scan stopped after {MAX_FILES} files."
                break
            row = _file_row(spec, filters, entry, result, accepted_bytes=accepted_bytes)
            result.rows.append(row)
            if row.status != SKIPPED:
                accepted_bytes += row.size
                seen.add(row.path)
    finally:
        walk.close()  # closes the folder handles of a walk stopped early
    if not result.limit_reached:
        result.rows.extend(_deleted_rows(spec, seen, wanted))


def _file_row(
    spec: ScanSpec, filters: _Filters, entry: _Entry, result: ScanResult, *, accepted_bytes: int
) -> Row:
    """The review row of one file the walk reached: skipped with a reason, or read."""
    relative, info = entry.relative, entry.info
    assert info is not None  # noqa: S101 - _walk gives stat for every file it does not skip
    fmt = format_of(relative) or ""
    size = info.st_size
    reason = _skip_reason(spec, filters, relative, fmt, size, accepted_bytes=accepted_bytes)
    if reason:
        return Row(relative, fmt, size, SKIPPED, reason)
    try:
        data = read_below(entry.dir_fd, entry.name, limit=spec.max_file_bytes)
        size = len(data)
        digest = hashlib.sha256(data).hexdigest()
        status = _read_status(spec, result, relative, fmt, data, digest)
    except UnsafePath:
        return Row(relative, fmt, size, SKIPPED, "symbolic link (not followed)")
    except Unreadable as error:
        return Row(relative, fmt, size, SKIPPED, str(error))
    except OSError as error:
        return Row(relative, fmt, size, SKIPPED, f"cannot be read ({error.strerror})")
    return Row(relative, fmt, size, status, "", digest)


def _skip_reason(
    spec: ScanSpec, filters: _Filters, relative: str, fmt: str, size: int, *, accepted_bytes: int
) -> str:
    """Why a file is left out before it is read; empty when it is read."""
    if filters.ignored and filters.ignored.match_file(relative):
        return "ignored by .gitignore"
    if filters.exclude and filters.exclude.match_file(relative):
        return "excluded by a pattern"
    if not fmt:
        return "format not supported"
    if filters.include and not filters.include.match_file(relative):
        return "not matched by the include patterns"
    if size > spec.max_file_bytes:
        return f"larger than the limit of {spec.max_file_bytes // (1024 * 1024)} MiB"
    if accepted_bytes + size > MAX_ACCEPTED_BYTES:
        return "the scan reached 500 MiB of accepted files"
    return ""


def _read_status(
    spec: ScanSpec, result: ScanResult, relative: str, fmt: str, data: bytes, digest: str
) -> str:
    """Unchanged, or new/changed once its text was extracted within the scan's budget."""
    if spec.known_hashes.get(relative) == digest:
        return UNCHANGED
    pages = document_pages(data, fmt, max_chars=MAX_EXTRACTED_CHARS - result.extracted_chars)
    chars = sum(len(page.text) for page in pages)
    if result.extracted_chars + chars > MAX_EXTRACTED_CHARS:
        raise Unreadable("the scan reached 100 MiB of extracted text")
    # Kept only when whole: text cut at the scan's remaining budget is not.
    whole = chars < MAX_EXTRACTED_CHARS - result.extracted_chars
    if fmt == PDF and spec.keep_pages is not None and whole:
        spec.keep_pages(digest, pages)
    result.extracted_chars += chars
    return CHANGED if relative in spec.known_hashes else NEW


def _deleted_rows(spec: ScanSpec, seen: set[str], wanted: set[str]) -> list[Row]:
    """Files the source had that the scan no longer found (of the wanted ones, if listed)."""
    return [
        Row(gone, format_of(gone) or "", 0, DELETED, "no longer in the source")
        for gone in sorted(set(spec.known_hashes) - seen)
        if not wanted or gone in wanted
    ]
