"""Scopes, their files and notes, and the files' history."""

from __future__ import annotations

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Router, Status

from accounts.auth import signed_in_user
from host.core.secret_guard import find_secret
from memory_addon.api.responses import ERRORS
from memory_addon.models import ChangeSet, MemoryFile, MemoryScope
from memory_addon.schemas import (
    ChangeSummaryOut,
    ErrorOut,
    FileContentOut,
    FileOut,
    FileWriteIn,
    NoteEditIn,
    NoteIn,
    NotesOut,
    ScopeOut,
    SecretFlagOut,
    VersionOut,
)
from memory_addon.selectors import (
    ChangeSummary,
    ScopeNotes,
    VersionRow,
    change_summary,
    scope_for_user,
    scope_notes,
    scopes_for_user,
    version_for_user,
    versions_for_scope,
)
from memory_addon.services.changes import clean_path, file_delete, file_write, version_restore
from memory_addon.services.notes import note_add, note_edit
from memory_addon.services.scopes import scope_folder

# Mounted on the package's router, whose "memory" tag its operations take.
router = Router()


def _scope(request: HttpRequest, scope_id: int) -> MemoryScope:
    return scope_for_user(signed_in_user(request), scope_id)


def _scope_out(scope: MemoryScope) -> ScopeOut:
    return ScopeOut(
        id=scope.pk,
        kind=scope.kind,
        label=scope.get_kind_display(),
        folder=scope_folder(scope),
        enabled=scope.enabled,
    )


@router.get("/scopes", response=list[ScopeOut], summary="Your memory scopes")
def scope_list(request: HttpRequest) -> list[ScopeOut]:
    user = signed_in_user(request)  # their own scope was made with them
    return [_scope_out(scope) for scope in scopes_for_user(user)]


@router.get(
    "/scopes/{scope_id}/files",
    response={200: list[FileOut], 404: ErrorOut},
    summary="Files of a scope",
)
def file_list(request: HttpRequest, scope_id: int) -> list[MemoryFile]:
    return list(MemoryFile.objects.filter(scope=_scope(request, scope_id)))


@router.get(
    "/scopes/{scope_id}/file",
    response={200: FileContentOut, **ERRORS},
    summary="Read one file (with a secret flag when a line looks like one)",
)
def file_read(request: HttpRequest, scope_id: int, path: str) -> FileContentOut:
    return file_content_out(_scope(request, scope_id), path)


def file_content_out(scope: MemoryScope, path: str) -> FileContentOut:
    bank = scope.kind == MemoryScope.Kind.PROJECT
    row = get_object_or_404(MemoryFile, scope=scope, path=clean_path(path, bank=bank))
    finding = find_secret(row.content)
    return FileContentOut(
        path=row.path,
        sha256=row.sha256,
        size=row.size,
        updated_at=row.updated_at,
        content=row.content,
        secret_flag=SecretFlagOut(line=finding.line, kind=finding.kind) if finding else None,
    )


@router.put(
    "/scopes/{scope_id}/file",
    response={200: ChangeSummaryOut, **ERRORS},
    summary="Write a whole file as the person; a stale base_sha256 is a 409 and nothing is saved",
)
def file_put(request: HttpRequest, scope_id: int, path: str, payload: FileWriteIn) -> ChangeSummary:
    change_set = file_write(
        user=signed_in_user(request),
        scope=_scope(request, scope_id),
        path=path,
        content=payload.content,
        base_sha256=payload.base_sha256,
    )
    return change_summary(change_set)


@router.delete(
    "/scopes/{scope_id}/file",
    response={200: ChangeSummaryOut, **ERRORS},
    summary="Delete a file (kept in history)",
)
def file_remove(
    request: HttpRequest, scope_id: int, path: str, base_sha256: str | None = None
) -> ChangeSummary:
    change_set = file_delete(
        user=signed_in_user(request),
        scope=_scope(request, scope_id),
        path=path,
        base_sha256=base_sha256,
    )
    return change_summary(change_set)


@router.get(
    "/scopes/{scope_id}/notes",
    response={200: NotesOut, 404: ErrorOut},
    summary="The notes of a scope's index, in the order the model reads them",
)
def note_list(request: HttpRequest, scope_id: int) -> ScopeNotes:
    return scope_notes(_scope(request, scope_id))


@router.post(
    "/scopes/{scope_id}/notes",
    response={201: ChangeSummaryOut, **ERRORS},
    summary="Add a note as the person, at the end of the index (the Memory tab's Add)",
)
def note_create(request: HttpRequest, scope_id: int, payload: NoteIn) -> Status[ChangeSummary]:
    change_set = note_add(
        user=signed_in_user(request),
        scope=_scope(request, scope_id),
        text=payload.text,
        source=ChangeSet.Source.API,
    )
    return Status(201, change_summary(change_set))


@router.put(
    "/scopes/{scope_id}/notes/{key}",
    response={200: ChangeSummaryOut, **ERRORS},
    summary="Change one note's text; a stale base_sha256 or a gone note is a 409",
)
def note_update(
    request: HttpRequest, scope_id: int, key: str, payload: NoteEditIn
) -> ChangeSummary:
    change_set = note_edit(
        user=signed_in_user(request),
        scope=_scope(request, scope_id),
        key=key,
        base_sha256=payload.base_sha256,
        text=payload.text,
        source=ChangeSet.Source.API,
    )
    return change_summary(change_set)


@router.delete(
    "/scopes/{scope_id}/notes/{key}",
    response={200: ChangeSummaryOut, **ERRORS},
    summary="Delete one note (kept in history); a stale base_sha256 or a gone note is a 409",
)
def note_remove(request: HttpRequest, scope_id: int, key: str, base_sha256: str) -> ChangeSummary:
    change_set = note_edit(
        user=signed_in_user(request),
        scope=_scope(request, scope_id),
        key=key,
        base_sha256=base_sha256,
        text=None,
        source=ChangeSet.Source.API,
    )
    return change_summary(change_set)


@router.get(
    "/scopes/{scope_id}/history",
    response={200: list[VersionOut], 404: ErrorOut},
    summary="Versions of a scope's files, newest first",
)
def history(request: HttpRequest, scope_id: int) -> list[VersionRow]:
    return versions_for_scope(_scope(request, scope_id))


@router.post(
    "/versions/{version_id}/restore",
    response={200: ChangeSummaryOut, **ERRORS},
    summary="Restore a file to a version (confirm with the person first)",
)
def version_restore_endpoint(request: HttpRequest, version_id: int) -> ChangeSummary:
    user = signed_in_user(request)
    version = version_for_user(user, version_id)
    return change_summary(version_restore(user=user, version=version))
