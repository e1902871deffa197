"""Export all of a person's memory as a zip of Markdown, and restore it without replacing (M18)."""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass, field

from django.db import transaction

from accounts.models import User
from memory_addon.errors import MemoryRefusal
from memory_addon.models import ChangeSet, MemoryFile, MemoryScope
from memory_addon.services.changes import FileWrite, change_set_apply, clean_path
from memory_addon.services.scopes import agent_scope, channel_scope, scope_folder, user_scope

MAX_ARCHIVE_ENTRIES = 1000
MAX_ARCHIVE_BYTES = 8 * 1024 * 1024  # uncompressed; well above the 1 MiB a person may hold


@dataclass
class RestoreReport:
    added: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # already there: current memory wins
    refused: list[tuple[str, str]] = field(default_factory=list)


def memory_export(*, user: User) -> bytes:
    buffer = io.BytesIO()
    files = MemoryFile.objects.filter(scope__owner=user).select_related(
        "scope__agent", "scope__binding"
    )
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for row in files.order_by("scope_id", "path"):
            archive.writestr(f"{scope_folder(row.scope)}/{row.path}", row.content)
    return buffer.getvalue()


def _scopes_by_folder(user: User) -> dict[str, MemoryScope]:
    """Every folder the person could restore into, creating agent/conversation scopes as needed."""
    own = user_scope(user)
    scopes = {scope_folder(own): own}
    for agent in user.agents.all():
        scope = agent_scope(agent)
        scopes[scope_folder(scope)] = scope
    for binding in user.messaging_bindings.all():
        scope = channel_scope(binding)
        scopes[scope_folder(scope)] = scope
    for scope in MemoryScope.objects.filter(owner=user, kind=MemoryScope.Kind.PROJECT):
        scopes[scope_folder(scope)] = scope
    return scopes


def memory_restore(*, user: User, archive_bytes: bytes) -> RestoreReport:
    try:
        archive = zipfile.ZipFile(io.BytesIO(archive_bytes))
    except zipfile.BadZipFile:
        raise MemoryRefusal("This is not a zip file; choose a memory export.") from None
    entries = [info for info in archive.infolist() if not info.is_dir()]
    if len(entries) > MAX_ARCHIVE_ENTRIES:
        raise MemoryRefusal(f"The archive holds more than {MAX_ARCHIVE_ENTRIES} files.")
    if sum(info.file_size for info in entries) > MAX_ARCHIVE_BYTES:
        raise MemoryRefusal("The archive is too large to be a memory export.")
    scopes = _scopes_by_folder(user)
    report = RestoreReport()
    for info in entries:
        name = info.filename
        folder, scope = next(
            (
                (f, s)
                for f, s in sorted(scopes.items(), key=lambda i: -len(i[0]))
                if name.startswith(f + "/")
            ),
            ("", None),
        )
        relative = name[len(folder) + 1 :]
        if scope is None or (
            scope.kind == MemoryScope.Kind.USER and relative.startswith(("agents/", "channels/"))
        ):
            report.refused.append(
                (name, "no matching memory folder (agent or conversation unknown here)")
            )
            continue
        try:
            path = clean_path(relative)
            text = archive.read(info).decode("utf-8")
        except (MemoryRefusal, UnicodeDecodeError) as error:
            report.refused.append((name, getattr(error, "message", "not UTF-8 text")))
            continue
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
        except MemoryRefusal as refusal:
            report.refused.append((name, refusal.message))
            continue
        report.added.append(name)
    return report
