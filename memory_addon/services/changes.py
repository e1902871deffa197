"""Change sets: every change of memory files, with history, undo, restore and retention."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet, Sum
from django.utils import timezone
from django.utils.translation import gettext

from accounts.models import Agent, User
from host.compiled import CompiledQuery
from host.core.secret_guard import find_secret
from host.errors import (
    ChangeRefused,
    LimitExceeded,
    NothingToChange,
    PathNotAllowed,
    SecretRefused,
    StaleBase,
)
from host.read_once import reads_once
from host.secret_text import kind_label, secret_refusal
from host.storage import storage_check
from host.stored_secrets import stored_secrets
from memory_addon.core import entries
from memory_addon.core.paths import BANK_TYPES, MARKDOWN, PathRefused, normalize_path
from memory_addon.models import ChangeSet, FileChange, MemoryFile, MemoryScope, content_hash
from memory_addon.services.locks import memory_lock
from memory_addon.services.note_search import note_embeddings_refresh_on_commit
from memory_addon.services.scopes import index_path
from memory_addon.services.skill_rules_sync import skill_rules_follow
from memory_addon.signals import change_set_written, memory_changed, send_on_commit

ABSENT = ""  # the base hash of a file that does not exist


@dataclass(frozen=True)
class FileWrite:
    path: str
    content: str | None  # None deletes the file


def clean_path(raw: str, *, bank: bool = False) -> str:
    """The normalized path (M6); a project bank's files may also be .txt or .xml."""
    try:
        return normalize_path(raw, types=BANK_TYPES if bank else MARKDOWN)
    except PathRefused as error:
        # Translated here: the pure path rules carry their English template and values.
        message = gettext(error.template)
        values = dict(error.values)
        if "kind" in values:  # a name holding a secret: the guard's kind, in words
            values["kind"] = kind_label(str(values["kind"]))
        raise PathNotAllowed(message % values if values else message) from error


def current_entries_text(content: str) -> str:
    """The items of an index, one per line, for refusals the model can act on."""
    items = entries.parse_items(content)
    if not items:
        return "(the file is empty)"
    return "\n".join(
        f"- [{item.entry_id or 'your text'}] {item.text.splitlines()[0][:160]}" for item in items
    )


def _check_limits(
    scope: MemoryScope, path: str, content: str, *, is_index: bool, current: str
) -> None:
    size = len(content.encode("utf-8"))
    if scope.kind == MemoryScope.Kind.PROJECT:
        if size > settings.MEMORY_BANK_FILE_MAX_BYTES:
            raise LimitExceeded(
                f"{path} would be {size} bytes; a bank file holds at most "
                f"{settings.MEMORY_BANK_FILE_MAX_BYTES} bytes."
            )
        return
    if is_index:
        lines = entries.count_lines(content)
        size = entries.sent_bytes(content)  # the caps count what the model is sent
        if lines > settings.MEMORY_INDEX_MAX_LINES or size > settings.MEMORY_INDEX_MAX_BYTES:
            raise LimitExceeded(
                f"The index would have {lines} lines and {size} bytes; the cap is "
                f"{settings.MEMORY_INDEX_MAX_LINES} lines and {settings.MEMORY_INDEX_MAX_BYTES} "
                "bytes. Merge or remove entries first. Current entries:\n"
                + current_entries_text(current),
                lines=lines,
                size=size,
            )
    elif size > settings.MEMORY_TOPIC_MAX_BYTES:
        raise LimitExceeded(
            f"{path} would be {size} bytes; a topic file holds at most "
            f"{settings.MEMORY_TOPIC_MAX_BYTES} bytes."
        )


def _check_totals(scope: MemoryScope, sizes_after: dict[str, int | None]) -> None:
    existing, others = _sizes_now(scope)
    merged = {**existing, **sizes_after}
    files = {path: size for path, size in merged.items() if size is not None}
    if scope.owner_id is not None:
        storage_check(scope.owner_id, sum(files.values()) - sum(existing.values()))
    if scope.kind == MemoryScope.Kind.PROJECT:
        max_files, max_bytes = settings.MEMORY_BANK_MAX_FILES, settings.MEMORY_BANK_MAX_BYTES
        total = sum(files.values())
        where = "this bank"
    else:
        max_files, max_bytes = settings.MEMORY_SCOPE_MAX_FILES, settings.MEMORY_USER_MAX_BYTES
        total = others + sum(files.values())
        where = "your memory"
    if len(files) > max_files and len(files) > len(existing):
        raise LimitExceeded(
            f"This scope would hold {len(files)} files; the limit is {max_files}. "
            "Delete or merge files first."
        )
    if total > max_bytes and sum(files.values()) > sum(existing.values()):
        raise LimitExceeded(
            f"{where.capitalize()} would hold {total} bytes; the limit is {max_bytes} bytes."
        )


def _owner_sizes_query(owner_id: int) -> QuerySet[MemoryFile, tuple[int, str, int]]:
    return (
        MemoryFile.objects.filter(scope__owner_id=owner_id)
        .exclude(scope__kind=MemoryScope.Kind.PROJECT)
        .order_by()
        .values_list("scope_id", "path", "size")
    )


# One read of all the owner's notes outside banks (this scope's and the others'), on every
# write: compiled once per process.
_OWNER_SIZES = CompiledQuery(_owner_sizes_query, "owner_id")


def _sizes_now(scope: MemoryScope) -> tuple[dict[str, int], int]:
    """The scope's file sizes by path, and the bytes of the owner's other notes (banks
    have their own cap and count 0 here)."""
    if scope.kind == MemoryScope.Kind.PROJECT:
        return dict(MemoryFile.objects.filter(scope=scope).values_list("path", "size")), 0
    if scope.owner_id is None:
        existing = dict(MemoryFile.objects.filter(scope=scope).values_list("path", "size"))
        others = (
            MemoryFile.objects.filter(scope__owner__isnull=True)
            .exclude(scope=scope)
            .exclude(scope__kind=MemoryScope.Kind.PROJECT)
            .aggregate(total=Sum("size"))["total"]
            or 0
        )
        return existing, others
    rows = _OWNER_SIZES.rows(owner_id=scope.owner_id)
    existing = {path: size for scope_id, path, size in rows if scope_id == scope.pk}
    return existing, sum(size for scope_id, _, size in rows if scope_id != scope.pk)


def change_set_apply(
    *,
    user: User,
    scope: MemoryScope,
    writes: Sequence[FileWrite],
    origin: str,
    source: str,
    machine: bool,
    base_hashes: dict[str, str] | None = None,
    summary: str = "",
    conversation_ref: str = "",
    message_ref: str = "",
    agent: Agent | None = None,
    undoes: ChangeSet | None = None,
) -> ChangeSet:
    """Apply all writes in one transaction, or none of them.

    `base_hashes` maps a path to the hash its change was based on (ABSENT for a new
    file): a file that changed since is a StaleBase. Machine changes (`machine=True`)
    may not alter the person's text.
    """
    bank = scope.kind == MemoryScope.Kind.PROJECT
    normalized = [FileWrite(clean_path(w.path, bank=bank), w.content) for w in writes]
    if len({w.path for w in normalized}) != len(normalized):
        raise ChangeRefused("A change set cannot change the same file twice.")
    bases = {clean_path(path, bank=bank): sha for path, sha in (base_hashes or {}).items()}
    # Each written file is checked for the owner's stored secrets, and the outbox looks up
    # their endpoints: read once for the change set.
    with reads_once(), transaction.atomic():
        # The scope owner's lock: a bank or an agent's notes count toward the owner too.
        memory_lock(scope.owner_id or user.pk)
        _lock_scope(scope.pk)
        current = {
            f.path: f
            for f in MemoryFile.objects.select_for_update().filter(
                scope=scope, path__in=[w.path for w in normalized]
            )
        }
        _check_bases(bases, current)
        # M5: a person's save or restore owns every entry text it changes. An undo puts
        # back an earlier version exactly, fences and all.
        person_write = (
            not machine
            and undoes is None
            and origin in (ChangeSet.Origin.PERSON, ChangeSet.Origin.RESTORE)
        )
        effective = _effective_writes(
            scope, normalized, current, machine=machine, person_write=person_write
        )
        if not effective:
            raise NothingToChange("Nothing would change: the new text equals the current text.")
        _check_totals(
            scope,
            {
                w.path: None if w.content is None else len(w.content.encode("utf-8"))
                for w, _ in effective
            },
        )
        change_set = ChangeSet.objects.create(
            scope=scope,
            user=user,
            origin=origin,
            source=source,
            summary=summary[:300],
            conversation_ref=conversation_ref,
            message_ref=message_ref,
            agent=agent,
            undoes=undoes,
        )
        rows = _record_and_store(change_set, scope, effective, machine=machine)
        skill_rules_follow(scope, rows)
        _announce_on_commit(user, scope, change_set, rows)
    return change_set


# Locked on every write: compiled once per process.
_SCOPE_LOCK = CompiledQuery(
    lambda scope_id: MemoryScope.objects.select_for_update().filter(pk=scope_id).values_list("pk"),
    "scope_id",
)


def _lock_scope(scope_id: int) -> None:
    _SCOPE_LOCK.rows(scope_id=scope_id)


def _check_bases(bases: dict[str, str], current: dict[str, MemoryFile]) -> None:
    """A file that changed since the version its change was based on is a StaleBase."""
    for path, base in bases.items():
        now = current[path].sha256 if path in current else ABSENT
        if now != base:
            raise StaleBase(
                f"{path} changed since this change was prepared; nothing was saved. "
                "Reload the file and apply your change again.",
                path=path,
                current_sha256=now,
            )


def _effective_writes(
    scope: MemoryScope,
    normalized: list[FileWrite],
    current: dict[str, MemoryFile],
    *,
    machine: bool,
    person_write: bool,
) -> list[tuple[FileWrite, MemoryFile | None]]:
    """The writes that change something, each checked, with the file it replaces."""
    effective: list[tuple[FileWrite, MemoryFile | None]] = []
    # Entries as the machine left them in any touched file (an archive moves them across).
    machine_marks = (
        set().union(*(entries.entry_marks(f.content) for f in current.values()))
        if person_write
        else set()
    )
    for write in normalized:
        existing = current.get(write.path)
        before = existing.content if existing else None
        if person_write and existing is not None and write.content is not None:
            # A file this write creates (an import, a deleted file restored) keeps its
            # entries: there is no earlier text of the machine to compare with.
            write = FileWrite(
                write.path, entries.claim_changed_entries(write.content, machine_marks)
            )
        if before == write.content:
            continue
        if write.content is not None:
            _check_text(
                scope, write.path, before, write.content, machine=machine, existing=existing
            )
        elif existing and machine and not _machine_may_replace(existing, ""):
            raise ChangeRefused(
                f"{write.path} holds your own text; the assistant cannot delete it."
            )
        effective.append((write, existing))
    return effective


def _record_and_store(
    change_set: ChangeSet,
    scope: MemoryScope,
    effective: list[tuple[FileWrite, MemoryFile | None]],
    *,
    machine: bool,
) -> list[FileChange]:
    """Each file's before and after in the change set's history, and the new text stored."""
    rows = []
    for write, existing in effective:
        before = existing.content if existing else None
        rows.append(
            FileChange(
                change_set=change_set,
                scope=scope,
                path=write.path,
                before=before,
                after=write.content,
                before_sha256=existing.sha256 if existing else ABSENT,
                after_sha256=content_hash(write.content) if write.content is not None else ABSENT,
            )
        )
        _store(scope, write, existing, machine=machine)
    FileChange.objects.bulk_create(rows)
    return rows


def _announce_on_commit(
    user: User, scope: MemoryScope, change_set: ChangeSet, rows: list[FileChange]
) -> None:
    """The live push and the note-search refresh after commit; the outbox event now."""
    send_on_commit(memory_changed, user_id=user.pk, change_set_id=change_set.pk)
    # B4: the event is written in this transaction, so no change goes without it.
    change_set_written.send(
        sender=ChangeSet,
        user_id=scope.owner_id or user.pk,
        change_set_id=change_set.pk,
        scope_id=scope.pk,
        origin=change_set.origin,
        source=change_set.source,
        file_count=len(rows),
    )
    note_embeddings_refresh_on_commit(scope.pk)


def _machine_may_replace(existing: MemoryFile, after: str) -> bool:
    """Machine text may go: intact entries, or a whole file the machine wrote itself."""
    if existing.machine_sha256 and existing.machine_sha256 == existing.sha256:
        return True
    return entries.keeps_person_text(existing.content, after)


def _check_text(
    scope: MemoryScope,
    path: str,
    before: str | None,
    after: str,
    *,
    machine: bool,
    existing: MemoryFile | None,
) -> None:
    # Every write of a note passes here: the person's stored keys are refused too.
    finding = find_secret(after, known=stored_secrets(scope.owner_id) if scope.owner_id else ())
    if finding:
        raise SecretRefused(
            f"{path}: {secret_refusal(finding)}", path=path, line=finding.line, kind=finding.kind
        )
    if machine and existing is not None and not _machine_may_replace(existing, after):
        raise ChangeRefused(
            f"This change would alter text you wrote in {path}; the assistant may only add, "
            "replace or remove its own entries. Nothing was saved."
        )
    _check_limits(scope, path, after, is_index=path == index_path(scope), current=before or "")


def _store(
    scope: MemoryScope, write: FileWrite, existing: MemoryFile | None, *, machine: bool
) -> None:
    if write.content is None:
        if existing:
            existing.delete()
        return
    wholly_machine = existing is None or existing.machine_sha256 == existing.sha256
    row = existing or MemoryFile(scope=scope, path=write.path)
    row.set_content(write.content)
    row.machine_sha256 = row.sha256 if machine and wholly_machine else ""
    row.save()


def file_write(
    *,
    user: User,
    scope: MemoryScope,
    path: str,
    content: str,
    base_sha256: str | None,
    source: str = ChangeSet.Source.API,
    summary: str = "",
) -> ChangeSet:
    """A person saves a whole file. `base_sha256` is the version they edited (None: no check)."""
    path = clean_path(path, bank=scope.kind == MemoryScope.Kind.PROJECT)
    with transaction.atomic(durable=True):
        return change_set_apply(
            user=user,
            scope=scope,
            writes=[FileWrite(path, content)],
            origin=ChangeSet.Origin.PERSON,
            source=source,
            machine=False,
            base_hashes=None if base_sha256 is None else {path: base_sha256},
            summary=summary or f"Edited {path}",
        )


def file_delete(
    *,
    user: User,
    scope: MemoryScope,
    path: str,
    base_sha256: str | None,
    source: str = ChangeSet.Source.API,
) -> ChangeSet:
    path = clean_path(path, bank=scope.kind == MemoryScope.Kind.PROJECT)
    with transaction.atomic(durable=True):
        if not MemoryFile.objects.filter(scope=scope, path=path).exists():
            raise ChangeRefused(f"There is no file {path} to delete.")
        return change_set_apply(
            user=user,
            scope=scope,
            writes=[FileWrite(path, None)],
            origin=ChangeSet.Origin.PERSON,
            source=source,
            machine=False,
            base_hashes=None if base_sha256 is None else {path: base_sha256},
            summary=f"Deleted {path}",
        )


def change_set_undo(
    *, user: User, change_set: ChangeSet, source: str = ChangeSet.Source.API
) -> ChangeSet:
    """Restore the text before a change set, as a new change set."""
    with transaction.atomic(durable=True):
        return change_set_undo_locked(user=user, change_set=change_set, source=source)


def change_set_undo_locked(
    *,
    user: User,
    change_set: ChangeSet,
    source: str,
    origin: str = ChangeSet.Origin.UNDO,
    conversation_ref: str = "",
    message_ref: str = "",
) -> ChangeSet:
    """Undo inside the caller's transaction (which took memory_lock first).

    `origin`: a person's undo is UNDO; one the model made on its own is AUTOMATIC, so it
    is audited and counted like any automatic change.
    """
    memory_lock(change_set.scope.owner_id or user.pk)
    if ChangeSet.objects.filter(undoes=change_set).exists():
        raise ChangeRefused("This change was already undone.")
    changes = list(change_set.changes.all())
    if not changes:
        raise ChangeRefused("This change set has no file changes left in the history to undo.")
    try:
        return change_set_apply(
            user=user,
            scope=change_set.scope,
            writes=[FileWrite(c.path, c.before) for c in changes],
            origin=origin,
            source=source,
            machine=False,
            base_hashes={c.path: c.after_sha256 for c in changes},
            summary=f"Undid change set #{change_set.pk}",
            undoes=change_set,
            conversation_ref=conversation_ref,
            message_ref=message_ref,
        )
    except StaleBase as error:
        raise ChangeRefused(
            f"Cannot undo: {error.details.get('path')} was changed again after this change. "
            "Undo the later change first, or edit the file by hand."
        ) from error


def change_sets_undo(
    *, user: User, change_sets: Sequence[ChangeSet], source: str = ChangeSet.Source.API
) -> list[ChangeSet]:
    """Undo several change sets as one step (e.g. a "Confirm all"): all of them or none.

    Newest first, so each undo finds its files as its change left them.
    """
    with transaction.atomic(durable=True):
        memory_lock(user.pk)
        return [
            change_set_undo_locked(user=user, change_set=change_set, source=source)
            for change_set in sorted(change_sets, key=lambda cs: cs.pk, reverse=True)
        ]


def version_restore(
    *, user: User, version: FileChange, source: str = ChangeSet.Source.API
) -> ChangeSet:
    """Put a file back to how it was after `version`; the replaced text stays in history."""
    if version.after is None:
        raise ChangeRefused("This version is a deletion; restore the version before it instead.")
    with transaction.atomic(durable=True):
        try:
            return change_set_apply(
                user=user,
                scope=version.scope,
                writes=[FileWrite(version.path, version.after)],
                origin=ChangeSet.Origin.RESTORE,
                source=source,
                machine=False,
                summary=f"Restored {version.path} as of change set #{version.change_set_id}",
            )
        except NothingToChange as error:
            raise NothingToChange("The file already has this text.") from error


def history_prune() -> int:
    """Keep at most N versions per scope and none older than the retention days."""
    cutoff = timezone.now() - timedelta(days=settings.MEMORY_HISTORY_MAX_DAYS)
    deleted, _ = FileChange.objects.filter(created_at__lt=cutoff).delete()
    keep = settings.MEMORY_HISTORY_MAX_VERSIONS
    for scope_id in (
        FileChange.objects.values_list("scope_id", flat=True).distinct().order_by("scope_id")
    ):
        stale_ids = list(
            FileChange.objects.filter(scope_id=scope_id)
            .order_by("-created_at", "-id")
            .values_list("id", flat=True)[keep:]
        )
        if stale_ids:
            deleted += FileChange.objects.filter(id__in=stale_ids).delete()[0]
    ChangeSet.objects.filter(created_at__lt=cutoff, changes__isnull=True).delete()
    return deleted
