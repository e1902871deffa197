"""Sources of a collection: add a folder or uploads, update, enable, remove; remove one file."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils.translation import gettext as _

from accounts.models import User
from host import filestore
from host.errors import LimitExceeded
from host.outbound import release_db_connection
from host.storage import storage_check
from knowledge import qdrant
from knowledge.errors import JobBusy, KnowledgeRefusal
from knowledge.models import Chunk, Document, Job, Source, Store
from knowledge.services.folders import _check_folder, _check_granted, _check_overlap
from knowledge.services.jobs import _start_job
from knowledge.services.stores import _points_delete_on_commit, store_lock
from knowledge.services.uploads import (
    _check_uploads,
    _store_folder,
    _upload_delete,
    _upload_forget,
    _upload_names,
    _upload_prefix,
    _upload_root,
    upload_label,
)

logger = logging.getLogger(__name__)


MIB = 1024 * 1024


_GLOB_SPECIAL = re.compile(r"([\\*?\[\]!#])")


def source_add_folder(
    *,
    store: Store,
    path: str,
    include: Iterable[str] = (),
    exclude: Iterable[str] = (),
    use_gitignore: bool = True,
    max_file_mib: int = 50,
    sync_mode: str = Source.SyncMode.MANUAL,
    actor: User | None = None,
) -> tuple[Source, Job]:
    folder = _check_folder(path, store.owner)
    if actor is not None and actor.pk != store.owner_id:
        # A manager of a shared collection cannot borrow the owner's folder grants.
        _check_granted(actor, folder)
    if not 1 <= max_file_mib <= 1024:
        raise KnowledgeRefusal(_("The file size limit must be between 1 MiB and 1024 MiB (1 GiB)."))
    with transaction.atomic(durable=True):
        store_lock(store)
        _check_overlap(store, folder)
        source = Source.objects.create(
            store=store,
            kind=Source.Kind.FOLDER,
            path=str(folder),
            include_globs=[g for g in include if g.strip()],
            exclude_globs=[g for g in exclude if g.strip()],
            use_gitignore=use_gitignore,
            max_file_bytes=max_file_mib * MIB,
            sync_mode=sync_mode,
        )
        job = _start_job(store=store, source=source, kind=Job.Kind.SCAN)
    return source, job


def source_add_upload(*, store: Store, files: list[UploadedFile[bytes]]) -> tuple[Source, Job]:
    if not files:
        raise KnowledgeRefusal(_("Choose at least one file to upload."))
    names = _upload_names(files)
    _check_uploads(store, files, names)
    incoming = sum(upload.size or 0 for upload in files)
    try:
        storage_check(store.owner_id, incoming)
    except LimitExceeded as error:
        raise KnowledgeRefusal(error.message) from error
    source: Source | None = None
    storage = filestore.uploads()
    try:
        with transaction.atomic(durable=True):
            store_lock(store)
            source = Source.objects.create(
                store=store,
                kind=Source.Kind.UPLOAD,
                path="",
                name=upload_label(names),
                max_file_bytes=settings.KNOWLEDGE_UPLOAD_MAX_FILE_BYTES,
            )
            source.path = str(_upload_root() / _store_folder(store.pk) / f"source-{source.pk}")
            source.save(update_fields=["path"])
        # The files go to the storage (maybe a remote server) outside any transaction.
        release_db_connection()
        # A new source's folder is ours alone; anything there is left from a
        # database that was reset, never a file of this source.
        _upload_delete(source)
        prefix = _upload_prefix(source)
        for upload, name in zip(files, names, strict=True):
            if storage.save(f"{prefix}/{name}", upload) != f"{prefix}/{name}":
                raise KnowledgeRefusal(
                    _("The file name %(name)s could not be kept.") % {"name": name}
                )
        with transaction.atomic(durable=True):
            store_lock(store)
            # Uploads in a row wait in line behind the scan of the one before.
            job = _start_job(store=store, source=source, kind=Job.Kind.SCAN, wait_if_busy=True)
    except BaseException:
        # A refused or failed upload leaves no files and no source behind.
        if source is not None:
            _upload_delete(source)
            Source.objects.filter(pk=source.pk).delete()
        raise
    return source, job


def source_update_now(*, source: Source, auto_index: bool = False) -> Job:
    if source.kind == Source.Kind.FOLDER:
        # A grant an admin took back stops the updates too, not only new sources.
        _check_granted(source.store.owner, Path(source.path))
    with transaction.atomic(durable=True):
        if Job.objects.filter(source=source, state__in=Job.PENDING_STATES).exists():
            raise JobBusy(_("A job is running for this source; wait for it or cancel it first."))
        # Behind another source's job it waits in line, like an upload.
        return _start_job(
            store=source.store,
            source=source,
            kind=Job.Kind.SCAN,
            auto_index=auto_index,
            wait_if_busy=True,
        )


def source_set_enabled(*, source: Source, enabled: bool) -> None:
    """Disabled sources keep their chunks but retrieval skips them."""
    Source.objects.filter(pk=source.pk).update(enabled=enabled)


def source_remove(*, source: Source) -> None:
    """Delete the source's chunks; the original files are never touched."""
    source_pk = source.pk
    with transaction.atomic(durable=True):
        if Job.objects.filter(source=source, state__in=Job.ACTIVE_STATES).exists():
            raise JobBusy(_("A job is running for this source; cancel it first."))
        if source.kind == Source.Kind.UPLOAD:
            _upload_forget(source)
        source.delete()
    if source.store.in_qdrant:
        qdrant.source_points_delete(source.store, source_pk)


def document_remove(*, document: Document) -> None:
    """Take one file out of the collection: its excerpts go, the original file stays.

    A folder's file gets an exclude pattern, so the next update does not bring it back
    (the review then lists it as excluded); an uploaded file's copy is deleted.
    """
    source = document.source
    store = source.store
    with transaction.atomic(durable=True):
        locked = Source.objects.select_for_update().get(pk=source.pk)
        if Job.objects.filter(source=locked, state__in=Job.PENDING_STATES).exists():
            raise JobBusy(_("A job is running for this source; wait for it or cancel it first."))
        if store.in_qdrant:
            _points_delete_on_commit(
                store, list(Chunk.objects.filter(document=document).values_list("pk", flat=True))
            )
        if not Document.objects.filter(pk=document.pk).delete()[0]:
            raise KnowledgeRefusal(_("This file was already removed."))
        hashes = {path: sha for path, sha in locked.hashes.items() if path != document.path}
        updates: dict[str, Any] = {
            "hashes": hashes,
            "file_count": len(hashes),
            "chunk_count": Chunk.objects.filter(source=locked).count(),
        }
        # A review still waiting must not bring the file back when it is confirmed.
        for review in Job.objects.select_for_update().filter(
            source=locked, kind=Job.Kind.SCAN, state=Job.State.REVIEW
        ):
            review.review = [
                {**row, "status": "skipped", "reason": "removed from the collection"}
                if row["path"] == document.path
                else row
                for row in review.review
            ]
            review.save(update_fields=["review"])
        if locked.kind == Source.Kind.FOLDER:
            pattern = "/" + _GLOB_SPECIAL.sub(r"\\\1", document.path)
            if pattern not in locked.exclude_globs:
                updates["exclude_globs"] = [*locked.exclude_globs, pattern]
        else:
            updates["name"] = upload_label(hashes) if hashes else locked.name
        Source.objects.filter(pk=locked.pk).update(**updates)
        if source.kind == Source.Kind.UPLOAD:
            _upload_forget(source, document.path)


def watch_sources() -> int:
    """Re-scan watched sources; changes are indexed without a review (the person chose watch)."""
    started = 0
    for source in Source.objects.filter(
        sync_mode=Source.SyncMode.WATCH, enabled=True
    ).select_related("store"):
        try:
            source_update_now(source=source, auto_index=True)
        except KnowledgeRefusal as refusal:  # busy, or the folder is no longer granted
            logger.info("Not updating source %s: %s", source.pk, refusal.message)
            continue
        started += 1
    return started
