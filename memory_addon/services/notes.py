"""Note-by-note changes to a scope's index: add, edit, delete, clear.

Each is one change set made by the person (history and Undo as for any save), based on
the version of the file the page showed: a note that moved or changed meanwhile is
refused instead of overwriting someone else's edit.
"""

from __future__ import annotations

from django.db import transaction
from django.utils.translation import gettext as _

from accounts.models import User
from host.errors import ChangeRefused, StaleBase
from memory_addon.core import entries
from memory_addon.models import ChangeSet, MemoryFile, MemoryScope
from memory_addon.services.changes import ABSENT, FileWrite, change_set_apply, file_write
from memory_addon.services.locks import memory_lock
from memory_addon.services.scopes import index_path


def note_key(item: entries.Item) -> str:
    """Names one note in one version of the file: its line and its exact text."""
    return f"{item.start_line}:{entries.sha256_text(item.raw)[:16]}"


def _index(scope: MemoryScope) -> MemoryFile | None:
    return MemoryFile.objects.filter(scope=scope, path=index_path(scope)).first()


def _person_text(text: str) -> str:
    cleaned = "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").split("\n")).strip()
    if not cleaned:
        raise ChangeRefused(_("Write the note first."))
    if "<!--" in cleaned or "-->" in cleaned:
        raise ChangeRefused(_("A note cannot contain HTML comment markers (<!-- or -->)."))
    if len(cleaned) > entries.MAX_ENTRY_CHARS:
        raise ChangeRefused(
            _(
                "A note holds at most %(max)s characters; this one has %(count)s. "
                "Use Raw Markdown for longer text."
            )
            % {"max": entries.MAX_ENTRY_CHARS, "count": len(cleaned)}
        )
    return cleaned


def note_add(*, user: User, scope: MemoryScope, text: str, source: str) -> ChangeSet:
    """The person's own note, as a list line at the end of the index."""
    line = " ".join(_person_text(text).split())
    line = line if line.startswith(("- ", "* ")) else f"- {line}"
    path = index_path(scope)
    with transaction.atomic(durable=True):
        # An add names no version: it goes at the end of whatever the index holds now.
        # Read that under the owner's lock, so parallel adds queue instead of failing
        # as stale.
        memory_lock(scope.owner_id or user.pk)
        row = _index(scope)
        current = row.content.rstrip("\n") if row else ""
        return change_set_apply(
            user=user,
            scope=scope,
            writes=[FileWrite(path, f"{current}\n{line}\n" if current else f"{line}\n")],
            origin=ChangeSet.Origin.PERSON,
            source=source,
            machine=False,
            base_hashes={path: row.sha256 if row else ABSENT},
            summary=f"Added a note to {path}",
        )


def note_edit(
    *,
    user: User,
    scope: MemoryScope,
    key: str,
    base_sha256: str,
    text: str | None,
    source: str,
) -> ChangeSet:
    """Replace one note's text, or delete it (text None). An edited machine entry becomes
    the person's own line without fences (M5), so the model can no longer replace,
    remove, merge or archive it."""
    row = _index(scope)
    if row is None or row.sha256 != base_sha256:
        raise StaleBase(
            _("These notes changed elsewhere; reload the page and try again."),
            path=index_path(scope),
        )
    item = next((i for i in entries.parse_items(row.content) if note_key(i) == key), None)
    if item is None:
        raise StaleBase(_("This note is no longer there; reload the page."), path=row.path)
    lines = row.content.split("\n")
    before, after = lines[: item.start_line - 1], lines[item.end_line :]
    if text is None:
        if before and before[-1].strip() == "" and (not after or after[0].strip() == ""):
            before = before[:-1]
        content = "\n".join(before + after)
    else:
        content = "\n".join([*before, _person_text(text), *after])
    verb = "Deleted" if text is None else "Edited"
    return file_write(
        user=user,
        scope=scope,
        path=index_path(scope),
        content=content,
        base_sha256=row.sha256,
        source=source,
        summary=f"{verb} a note in {row.path}",
    )


def notes_clear(*, user: User, scope: MemoryScope, base_sha256: str, source: str) -> ChangeSet:
    """Empty the index (topic files stay); undone like any change."""
    row = _index(scope)
    if row is None or not row.content.strip():
        raise ChangeRefused(_("There is nothing to clear in this memory."))
    if row.sha256 != base_sha256:
        raise ChangeRefused(_("These notes changed elsewhere; look at the new version first."))
    return file_write(
        user=user,
        scope=scope,
        path=index_path(scope),
        content="",
        base_sha256=row.sha256,
        source=source,
        summary=f"Cleared {row.path}",
    )
