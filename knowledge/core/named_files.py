"""Bounded search for files by name under an open folder, never following links (no Django).

Unlike the scan of a source, this walk may enter hidden folders (tools keep their rule
files in `.cursor/`, `.github/` …): the caller decides which folders it enters and
which files it wants. It stops at a depth, a number of entries and a deadline, so a
huge or deep tree costs a bounded amount of time.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import islice

from knowledge.core.scanning import JUNK_FOLDERS, UnsafePath, open_dir_at


@dataclass(frozen=True)
class Found:
    relative: str
    size: int


@dataclass(frozen=True)
class Skipped:
    relative: str
    reason: str


@dataclass
class Search:
    """Shared by the walks of several folders: the bounds count over all of them."""

    wanted: Callable[[str], bool]  # a file's relative path
    enters: Callable[[str], bool]  # a folder's relative path
    max_depth: int
    max_entries: int
    deadline: float
    now: Callable[[], float]
    entries: int = 0
    stopped: str = ""  # "entries" / "time" once a bound stopped the search
    too_deep: int = 0  # folders not entered because of the depth bound
    found: list[Found] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    def _out_of_bounds(self) -> bool:
        if not self.stopped and self.entries >= self.max_entries:
            self.stopped = "entries"
        if not self.stopped and self.now() >= self.deadline:
            self.stopped = "time"
        return bool(self.stopped)

    def walk(self, dir_fd: int, prefix: str, relative_dir: str = "", depth: int = 0) -> None:
        """Search below an open folder; `prefix` names it in the rows (e.g. its path)."""
        if self._out_of_bounds():
            return
        try:
            with os.scandir(dir_fd) as listing:
                # A folder of a million names is not read whole: one past the bound stops us.
                left = self.max_entries - self.entries + 1
                names = sorted(islice((entry.name for entry in listing), left))
        except OSError as error:
            shown = f"{prefix}/{relative_dir}" if relative_dir else prefix
            self.skipped.append(Skipped(shown + "/", f"cannot be read ({error.strerror})"))
            return
        folders: list[str] = []
        for name in names:
            self.entries += 1
            if self._out_of_bounds():
                return
            relative = f"{relative_dir}/{name}" if relative_dir else name
            if self._look(dir_fd, prefix, relative, name):
                folders.append(name)
        for name in folders:
            relative = f"{relative_dir}/{name}" if relative_dir else name
            self._enter(dir_fd, prefix, relative, name, depth + 1)
            if self.stopped:
                return

    def _look(self, dir_fd: int, prefix: str, relative: str, name: str) -> bool:
        """Note a wanted file; True for a folder the search goes into."""
        shown = f"{prefix}/{relative}"
        if not _is_utf8(name):
            # Such a name cannot be shown, stored or typed back: listed, never entered.
            self.skipped.append(Skipped(_printable(shown), "the name is not valid UTF-8"))
            return False
        try:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError as error:
            if self.wanted(relative):
                self.skipped.append(Skipped(shown, f"cannot be read ({error.strerror})"))
            return False
        if stat.S_ISDIR(info.st_mode):
            return name not in JUNK_FOLDERS and self.enters(relative)
        if not self.wanted(relative):
            return False
        if stat.S_ISLNK(info.st_mode):
            self.skipped.append(Skipped(shown, "symbolic link (not followed)"))
        elif not stat.S_ISREG(info.st_mode):
            self.skipped.append(Skipped(shown, "not a regular file"))
        else:
            self.found.append(Found(shown, info.st_size))
        return False

    def _enter(self, dir_fd: int, prefix: str, relative: str, name: str, depth: int) -> None:
        if depth > self.max_depth:
            self.too_deep += 1
            return
        try:
            child = open_dir_at(dir_fd, name, relative + "/")
        except UnsafePath:
            return  # swapped for a link since we looked: not followed
        except OSError as error:
            self.skipped.append(
                Skipped(f"{prefix}/{relative}/", f"cannot be read ({error.strerror})")
            )
            return
        try:
            self.walk(child, prefix, relative, depth)
        finally:
            os.close(child)


def _is_utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # os.scandir keeps undecodable bytes as lone surrogates
        return False
    return True


def _printable(path: str) -> str:
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def entry_on_the_way(root_fd: int, relative: str, name: str) -> bool:
    """Whether `name` (any kind, links included) is in the open folder or in a folder on the
    way to the file at `relative`, walking down without following links."""
    parts = relative.split("/")[:-1]
    fd = root_fd
    try:
        for index in range(len(parts) + 1):
            try:
                os.stat(name, dir_fd=fd, follow_symlinks=False)
                return True
            except FileNotFoundError:
                pass
            if index == len(parts):
                return False
            parent, fd = fd, open_dir_at(fd, parts[index], "/".join(parts[: index + 1]) + "/")
            if parent != root_fd:
                os.close(parent)
        return False
    finally:
        if fd != root_fd:
            os.close(fd)
