"""Export all of a person's memory as a zip of Markdown, and restore it without replacing (M18).

Restores read hostile archives: every entry is read in small chunks and stops at
its declared size and at the largest file memory can hold, every zipfile error is
a Refusal (a 400 or a form message), and nothing is restored unless the
whole archive reads cleanly. Exports name each folder so that no two names are
equal ignoring case and none holds '..', and the same names map back on restore.
"""

from __future__ import annotations

import io
import re
import unicodedata
import zipfile
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from django.conf import settings
from django.db import transaction

from accounts.models import Agent, MessagingBinding, User
from host.core.bounded_zip import ZipRefused, open_zip, read_entry
from host.errors import Refusal
from memory_addon.models import ChangeSet, MemoryFile, MemoryScope
from memory_addon.services.changes import FileWrite, change_set_apply, clean_path
from memory_addon.services.scopes import (
    channel_folder_name,
    ensure_agent_scope,
    ensure_channel_scope,
    ensure_user_scope,
)

MAX_ARCHIVE_ENTRIES = 1000
MAX_ARCHIVE_BYTES = 8 * 1024 * 1024  # uncompressed; well above the 1 MiB a person may hold
_UNSAFE_PART = re.compile(r"[^A-Za-z0-9._ @+-]")


@dataclass
class RestoreReport:
    added: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # already there: current memory wins
    refused: list[tuple[str, str]] = field(default_factory=list)


# --- Folder names ---------------------------------------------------------------


@dataclass
class _Slot:
    """One folder of an export: a scope that exists, or an agent/conversation that may get one."""

    folder: str
    kind: str
    scope: MemoryScope | None = None
    agent: Agent | None = None
    binding: MessagingBinding | None = None


def _safe_part(text: str) -> str:
    cleaned = _UNSAFE_PART.sub("_", unicodedata.normalize("NFC", text)).strip(" .")[:80]
    return cleaned or "_"


def _slots(user: User) -> list[_Slot]:
    """Every folder of the person's export, in a fixed order, unique ignoring case."""
    scopes = list(MemoryScope.objects.filter(owner=user).order_by("pk"))
    own = next((s for s in scopes if s.kind == MemoryScope.Kind.USER), None)
    by_agent = {s.agent_id: s for s in scopes if s.kind == MemoryScope.Kind.AGENT}
    channels = [s for s in scopes if s.kind == MemoryScope.Kind.CHANNEL]
    by_binding = {s.binding_id: s for s in channels if not s.chat_key}
    # A binding's later external chats exist only as scopes: one folder each.
    per_chat = [s for s in channels if s.chat_key]
    slots = [_Slot("Memory", MemoryScope.Kind.USER, own)]
    for agent in user.agents.order_by("pk"):
        slots.append(
            _Slot(
                f"Memory/agents/{_safe_part(agent.slug)}",
                MemoryScope.Kind.AGENT,
                by_agent.get(agent.pk),
                agent=agent,
            )
        )
    bindings = {binding.pk: binding for binding in user.messaging_bindings.order_by("pk")}
    for binding in bindings.values():
        slots.append(
            _Slot(
                f"Memory/channels/{_safe_part(channel_folder_name(binding, ''))}",
                MemoryScope.Kind.CHANNEL,
                by_binding.get(binding.pk),
                binding=binding,
            )
        )
    for scope in per_chat:
        found = bindings.get(scope.binding_id or 0)
        if found is not None:
            folder = _safe_part(channel_folder_name(found, scope.chat_key))
            slots.append(_Slot(f"Memory/channels/{folder}", MemoryScope.Kind.CHANNEL, scope))
    for scope in scopes:
        if scope.kind == MemoryScope.Kind.PROJECT:
            name = _safe_part(scope.project_name or scope.project_key[:12])
            slots.append(_Slot(f"Projects/{name}", MemoryScope.Kind.PROJECT, scope))
    taken: set[str] = set()
    for slot in slots:
        base, number = slot.folder, 2
        while slot.folder.casefold() in taken:
            slot.folder = f"{base}-{number}"
            number += 1
        taken.add(slot.folder.casefold())
    return slots


def _unique_name(folder: str, path: str, taken: set[str]) -> str:
    name, number = f"{folder}/{path}", 2
    while name.casefold() in taken:
        pure = PurePosixPath(path)
        name = f"{folder}/{pure.with_name(f'{pure.stem}-{number}{pure.suffix}')}"
        number += 1
    taken.add(name.casefold())
    return name


def memory_export(*, user: User) -> bytes:
    folders = {slot.scope.pk: slot.folder for slot in _slots(user) if slot.scope is not None}
    files = MemoryFile.objects.filter(scope__owner=user, scope_id__in=folders)
    taken: set[str] = set()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for row in files.order_by("scope_id", "path"):
            archive.writestr(_unique_name(folders[row.scope_id], row.path, taken), row.content)
    return buffer.getvalue()


# --- Reading an archive -----------------------------------------------------------


def _max_entry_bytes() -> int:
    """No memory file can be larger than this, so no entry of an export is either."""
    return max(
        settings.MEMORY_TOPIC_MAX_BYTES,
        settings.MEMORY_INDEX_MAX_BYTES,
        settings.MEMORY_BANK_FILE_MAX_BYTES,
    )


def _refusal(refused: ZipRefused) -> Refusal:
    name = refused.name[:200]
    return Refusal(
        {
            "not_zip": "This is not a zip file; choose a memory export.",
            "encrypted": f"{name} is encrypted; a memory export never is. Nothing was restored.",
            "oversize": f"The archive is damaged: {name} holds more than it declares. "
            "Nothing was restored.",
            "compression": f"{name} uses a compression method this host cannot read; export "
            "again from the Files page. Nothing was restored.",
            "damaged": f"The archive is damaged ({refused.detail}). Nothing was restored.",
        }[refused.kind]
    )


def _read_archive(archive_bytes: bytes) -> list[tuple[str, bytes]]:
    """Every file of the archive, or a Refusal that says why none can be used."""
    try:
        archive = open_zip(archive_bytes)
    except ZipRefused as refused:
        raise _refusal(refused) from None
    with archive:
        entries = [info for info in archive.infolist() if not info.is_dir()]
        if len(entries) > MAX_ARCHIVE_ENTRIES:
            raise Refusal(f"The archive holds more than {MAX_ARCHIVE_ENTRIES} files.")
        if sum(info.file_size for info in entries) > MAX_ARCHIVE_BYTES:
            raise Refusal("The archive is too large to be a memory export.")
        limit = _max_entry_bytes()
        for info in entries:
            if info.file_size > limit:
                raise Refusal(
                    f"{info.filename[:200]} is too large to be a memory file (more than "
                    f"{limit // 1024} KiB). Nothing was restored."
                )
        try:
            files = [(info.filename, read_entry(archive, info, limit)) for info in entries]
        except ZipRefused as refused:
            raise _refusal(refused) from None
    for name, data in files:
        # PostgreSQL stores no NUL, so no export holds one: refused before any write,
        # not half way through the archive.
        if b"\x00" in data:
            raise Refusal(
                f"{name[:200]} holds a NUL byte (binary data), which no memory file can "
                "hold. Nothing was restored."
            )
    return files


# --- Restore ------------------------------------------------------------------------


def _slot_scope(user: User, slot: _Slot) -> MemoryScope:
    if slot.scope is None:
        if slot.kind == MemoryScope.Kind.USER:
            slot.scope = ensure_user_scope(user)
        elif slot.agent is not None:
            slot.scope = ensure_agent_scope(slot.agent)
        elif slot.binding is not None:
            slot.scope = ensure_channel_scope(slot.binding)
    assert slot.scope is not None  # noqa: S101 - project slots always hold their scope
    return slot.scope


def memory_restore(*, user: User, archive_bytes: bytes) -> RestoreReport:
    entries = _read_archive(archive_bytes)
    slots = sorted(_slots(user), key=lambda slot: -len(slot.folder))
    report = RestoreReport()
    for name, data in entries:
        slot = next((s for s in slots if name.startswith(s.folder + "/")), None)
        relative = name[len(slot.folder) + 1 :] if slot else ""
        if slot is None or (
            slot.kind == MemoryScope.Kind.USER and relative.startswith(("agents/", "channels/"))
        ):
            report.refused.append(
                (name, "no matching memory folder (agent or conversation unknown here)")
            )
            continue
        try:
            path = clean_path(relative, bank=slot.kind == MemoryScope.Kind.PROJECT)
            text = data.decode("utf-8")
        except (Refusal, UnicodeDecodeError) as error:
            report.refused.append((name, getattr(error, "message", "not UTF-8 text")))
            continue
        scope = _slot_scope(user, slot)
        if MemoryFile.objects.filter(scope=scope, path=path).exists():
            report.kept.append(name)
            continue
        try:
            with transaction.atomic(durable=True):
                change_set_apply(
                    user=user,
                    scope=scope,
                    writes=[FileWrite(path, text)],
                    origin=ChangeSet.Origin.RESTORE,
                    source=ChangeSet.Source.PAGE,
                    machine=False,
                    base_hashes={path: ""},
                    summary=f"Restored {path} from an export",
                )
        except Refusal as refusal:
            report.refused.append((name, refusal.message))
            continue
        report.added.append(name)
    return report
