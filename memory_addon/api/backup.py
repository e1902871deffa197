"""Export all memory files as a zip, and restore such an export."""

from __future__ import annotations

from django.http import HttpRequest
from django.http.response import HttpResponseBase
from ninja import File, Router, Schema, UploadedFile

from accounts.auth import signed_in_user
from host import filestore
from host.errors import Refusal
from memory_addon.schemas import ErrorOut
from memory_addon.services.backup import MAX_ARCHIVE_BYTES, memory_export, memory_restore

# Mounted on the package's router, whose "memory" tag its operations take.
router = Router()


class RestoreOut(Schema):
    added: list[str]
    kept: list[str]
    refused: list[list[str]]


@router.get("/export", summary="All your memory files as a zip of Markdown")
def export(request: HttpRequest) -> HttpResponseBase:
    user = signed_in_user(request)
    return filestore.export_response(
        user_id=user.pk,
        kind="memory",
        filename="memory-export.zip",
        data=memory_export(user=user),
        content_type="application/zip",
    )


@router.post(
    "/restore",
    response={200: RestoreOut, 400: ErrorOut},
    summary="Restore an export: adds only files that do not exist yet, never replaces",
)
def restore(request: HttpRequest, archive: File[UploadedFile]) -> RestoreOut:
    if archive.size and archive.size > MAX_ARCHIVE_BYTES:
        raise Refusal("The archive is too large to be a memory export.")
    report = memory_restore(user=signed_in_user(request), archive_bytes=archive.read())
    return RestoreOut(
        added=report.added, kept=report.kept, refused=[list(r) for r in report.refused]
    )
