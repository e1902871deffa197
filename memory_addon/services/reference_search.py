"""Search the person's granted folders for other tools' rule files (M14), and tell whether a
folder file sits in a Git working tree. Reads only: a found file is added and approved
through `references` like a typed path."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from accounts.models import User
from knowledge.core import named_files, scanning
from knowledge.services import granted_folders
from memory_addon.core import reference
from memory_addon.models import ReferenceFile


@dataclass(frozen=True)
class FoundFile:
    path: str
    size: int
    tool: str
    added: ReferenceFile | None  # already one of the person's reference files


@dataclass(frozen=True)
class SearchResult:
    folders: list[Path]
    found: list[FoundFile]
    skipped: list[named_files.Skipped]
    stopped: str  # "" / "entries" / "time"
    too_deep: int
    max_depth: int
    max_entries: int
    seconds: int


def reference_search(*, user: User) -> SearchResult:
    folders = granted_folders(user)
    search = named_files.Search(
        wanted=lambda relative: bool(reference.known_tool(relative)),
        enters=reference.search_enters,
        max_depth=settings.REFERENCE_SEARCH_MAX_DEPTH,
        max_entries=settings.REFERENCE_SEARCH_MAX_ENTRIES,
        deadline=time.monotonic() + settings.REFERENCE_SEARCH_SECONDS,
        now=time.monotonic,
    )
    # A grant inside another grant would list its files twice.
    for folder in [f for f in folders if not any(f != o and f.is_relative_to(o) for o in folders)]:
        try:
            root = scanning.open_folder(folder)
        except scanning.UnsafePath:
            search.skipped.append(named_files.Skipped(str(folder), "symbolic link (not followed)"))
            continue
        except OSError as error:
            search.skipped.append(
                named_files.Skipped(str(folder), f"cannot be read ({error.strerror})")
            )
            continue
        try:
            search.walk(root, str(folder))
        finally:
            os.close(root)
        if search.stopped:
            break
    added = {
        ref.path: ref
        for ref in ReferenceFile.objects.filter(
            owner=user,
            origin=ReferenceFile.Origin.FOLDER,
            path__in=[item.relative for item in search.found],
        )
    }
    return SearchResult(
        folders=folders,
        found=[
            FoundFile(
                item.relative,
                item.size,
                reference.tool_for(item.relative),
                added.get(item.relative),
            )
            for item in search.found
        ],
        skipped=search.skipped,
        stopped=search.stopped,
        too_deep=search.too_deep,
        max_depth=search.max_depth,
        max_entries=search.max_entries,
        seconds=settings.REFERENCE_SEARCH_SECONDS,
    )


def in_git_tree(ref: ReferenceFile) -> bool:
    """A folder file with a `.git` folder or file beside it or above it, within its grant."""
    if ref.origin != ReferenceFile.Origin.FOLDER:
        return False
    path = Path(ref.path)
    for folder in granted_folders(ref.owner):
        if not path.is_relative_to(folder) or path == folder:
            continue
        try:
            root = scanning.open_folder(folder)
        except (scanning.UnsafePath, OSError):
            continue
        try:
            if named_files.entry_on_the_way(root, path.relative_to(folder).as_posix(), ".git"):
                return True
        except (scanning.UnsafePath, OSError):
            continue
        finally:
            os.close(root)
    return False
