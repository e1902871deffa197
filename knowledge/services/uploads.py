"""Uploaded files: where our copies live, their safe names, and the checks before a file is kept."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import unicodedata
from collections.abc import Iterable
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.template.defaultfilters import filesizeformat
from django.utils.translation import gettext as _

from host import filestore
from host.errors import LimitExceeded
from host.leftovers import leftover_forget, storage_tree_forget
from host.outbound import release_db_connection
from knowledge import qdrant
from knowledge.core import scanning
from knowledge.core.formats import TEXT_SUFFIXES, format_of
from knowledge.errors import KnowledgeRefusal
from knowledge.models import Document, Job, Source, Store

UPLOAD_PREFIX = "knowledge"  # uploads live in the default storage under this folder
QDRANT_COLLECTION = "qdrant-collection"  # the leftover kind of a deleted collection's vectors


# Letters and digits of any script stay (Übersicht.md); slashes, markup, control and
# bidi-override characters (which could make "gpj.md" read as "dm.jpg") become "_".
_UNSAFE_NAME = re.compile(r"[^\w.() -]")


def _upload_root() -> Path:
    """Where the scanner reads uploads: the storage's own folder when it is local, else a
    working copy that each job refreshes from the shared storage."""
    local = filestore.local_folder(filestore.uploads())
    base = local if local is not None else Path(settings.DATA_DIR) / "upload-cache"
    return (base / UPLOAD_PREFIX).resolve()


def _store_folder(store_id: int) -> str:
    return f"store-{store_id}"


def _store_prefix(store_id: int) -> str:
    return f"{UPLOAD_PREFIX}/{_store_folder(store_id)}"


def _upload_prefix(source: Source) -> str:
    return f"{_store_prefix(source.store_id)}/source-{source.pk}"


def _upload_delete(source: Source) -> None:
    folder = Path(source.path)
    if source.path and folder.is_relative_to(_upload_root()):
        shutil.rmtree(folder, ignore_errors=True)
        # The collection's folder too once it is empty: an upload that lost the race to
        # the collection's delete wrote it again after the delete had removed it.
        with contextlib.suppress(OSError):
            folder.parent.rmdir()
    filestore.tree_delete(filestore.uploads(), _upload_prefix(source))


def store_leftovers_forget(sender: type[Store], instance: Store, **kwargs: object) -> None:
    """Whatever deletes a collection (its page, the API, a conversation's own collection
    going, its owner's account), what it keeps outside its rows goes after the commit:
    the local upload folder here, our copies on a shared storage and its Qdrant
    collection through host/leftovers.py, retried until they are gone."""
    using = str(kwargs.get("using") or "default")
    local = _upload_root() / _store_folder(instance.pk)
    _copies_forget(local, _store_prefix(instance.pk), using=using)
    if instance.in_qdrant and instance.qdrant_collection:
        leftover_forget(QDRANT_COLLECTION, qdrant.leftover_target(instance), using=using)


def _upload_fetch(source: Source) -> None:
    """With a shared (remote) storage, bring the source's files into its local folder."""
    if source.kind != Source.Kind.UPLOAD or filestore.local_folder(filestore.uploads()):
        return
    folder = Path(source.path)
    if folder.is_relative_to(_upload_root()):
        release_db_connection()
        filestore.tree_download(filestore.uploads(), _upload_prefix(source), folder)


def _upload_forget(source: Source, relative: str = "") -> None:
    """Inside the transaction that removes the source (or, with `relative`, one of its
    files): our copies go once it commits, the local ones here, those on a shared
    storage through host/leftovers.py, retried while the storage is down. A failed
    storage call after the commit used to leave the objects there for good."""
    if relative and ("/" in relative or relative in (".", "..")):
        return  # uploads are flat: nothing of ours has such a name
    folder = Path(source.path)
    ours = bool(source.path) and folder.is_relative_to(_upload_root())
    prefix = _upload_prefix(source)
    _copies_forget(
        (folder / relative if relative else folder) if ours else None,
        f"{prefix}/{relative}" if relative else prefix,
    )


def _copies_forget(local: Path | None, prefix: str, *, using: str = "default") -> None:
    """Our copies go once the surrounding delete commits: `local` (a folder or a file
    under the upload root) here, `prefix` of a shared storage through host/leftovers.py."""
    if local is not None:
        transaction.on_commit(lambda: filestore.local_remove(local), using=using)
    if filestore.local_folder(filestore.uploads()) is None:
        storage_tree_forget("default", prefix, using=using)


def upload_bytes(user_id: int) -> int:
    """Bytes of the files a person uploaded (our copies under DATA_DIR)."""
    total = 0
    sources = Source.objects.filter(store__owner_id=user_id, kind=Source.Kind.UPLOAD)
    storage = filestore.uploads()
    if filestore.local_folder(storage) is None:
        return sum(filestore.tree_size(storage, _upload_prefix(s)) for s in sources)
    for folder in sources.values_list("path", flat=True):
        try:
            with os.scandir(folder) as entries:
                total += sum(e.stat(follow_symlinks=False).st_size for e in entries if e.is_file())
        except OSError:
            continue
    return total


MAX_NAME_CHARS = 120
# A folder entry holds 255 bytes: in a script of 3- or 4-byte letters a name passed that
# long before 120 characters, and " (2)" for a second file of a name went past it too.
MAX_NAME_BYTES = 200


def _cut(text: str, chars: int, size: int) -> str:
    return text[:chars].encode()[:size].decode("utf-8", "ignore")


def upload_safe_name(raw: str) -> str:
    """The name an uploaded file is kept and shown under: no folders, markup or controls,
    short enough for any file system with room for a " (2)"."""
    base = unicodedata.normalize("NFC", raw).replace("\\", "/").rsplit("/", 1)[-1]
    name = _UNSAFE_NAME.sub("_", base).strip().lstrip(".") or "file"
    if len(name) <= MAX_NAME_CHARS and len(name.encode()) <= MAX_NAME_BYTES:
        return name
    # Cut the stem, never the suffix: the format is read from it.
    stem, dot, suffix = name.rpartition(".")
    if not dot or len(suffix) > 10:
        return _cut(name, MAX_NAME_CHARS, MAX_NAME_BYTES)
    room = (MAX_NAME_CHARS - len(suffix) - 1, MAX_NAME_BYTES - len(suffix.encode()) - 1)
    return _cut(stem, *room) + "." + suffix


def upload_label(names: Iterable[str]) -> str:
    """An upload source as people know it: its file names (never our copy's server path)."""
    ordered = sorted(names, key=str.lower)
    shown = ", ".join(ordered[:3])
    if len(ordered) > 3:
        shown += f" (+{len(ordered) - 3})"
    return shown[:300]


def _upload_names(files: list[UploadedFile[bytes]]) -> list[str]:
    """Safe, distinct file names: two uploads never overwrite each other."""
    names: list[str] = []
    taken: set[str] = set()
    for upload in files:
        name = upload_safe_name(upload.name or "file")
        stem, dot, suffix = name.rpartition(".") if "." in name else (name, "", "")
        candidate, number = name, 2
        while candidate.lower() in taken:
            candidate = f"{stem} ({number}){dot}{suffix}"
            number += 1
        taken.add(candidate.lower())
        names.append(candidate)
    return names


def upload_formats() -> list[str]:
    """What the upload form accepts, from the same allowlist the scanner applies (K3)."""
    return [".pdf", *sorted(TEXT_SUFFIXES)]


def _upload_digest(upload: UploadedFile[bytes]) -> str:
    digest = hashlib.sha256()
    for block in upload.chunks():
        digest.update(block)
    return digest.hexdigest()


def _check_uploads(store: Store, files: list[UploadedFile[bytes]], names: list[str]) -> None:
    """Refuse what could never be indexed, and files the collection already has (K2, K3)."""
    limit = settings.KNOWLEDGE_UPLOAD_MAX_FILE_BYTES
    for upload, name in zip(files, names, strict=True):
        if (upload.size or 0) > limit:
            size, most = filesizeformat(upload.size or 0), filesizeformat(limit)
            if size == most:  # just over: "50.0 MB; at most 50.0 MB" said nothing
                size = _("%(bytes)s bytes") % {"bytes": f"{upload.size:,}"}
                most = _("%(bytes)s bytes") % {"bytes": f"{limit:,}"}
            raise LimitExceeded(
                _(
                    "%(name)s is %(size)s; a file may be at most %(limit)s. "
                    "Split it or leave it out."
                )
                % {"name": name, "size": size, "limit": most}
            )
        if format_of(name) is None:
            raise KnowledgeRefusal(
                _(
                    "%(name)s is not a format collections index. Allowed: PDF and text formats "
                    "such as .md, .txt, .rst, .csv, .html and source code."
                )
                % {"name": name}
            )
    seen: dict[str, str] = {}
    for upload, name in zip(files, names, strict=True):
        digest = _upload_digest(upload)
        if digest in seen:
            raise KnowledgeRefusal(
                _("%(name)s and %(other)s are the same file; upload it once.")
                % {"name": name, "other": seen[digest]}
            )
        seen[digest] = name
    held = _held_elsewhere(store.pk, set(seen))
    if held:
        digest, (source, path) = next(iter(held.items()))
        raise KnowledgeRefusal(_already_there(seen[digest], source, path))


# Review rows whose file the collection has or will have once the review is confirmed.
_KEPT_STATUSES = (scanning.NEW, scanning.CHANGED, scanning.UNCHANGED)


def _held_elsewhere(
    store_id: int, digests: set[str], *, other_than: Source | None = None
) -> dict[str, tuple[Source, str]]:
    """Which of these file hashes the collection already holds, and where: another
    source's document first, then a scan that waits for review or is being indexed."""
    held: dict[str, tuple[Source, str]] = {}
    documents = (
        Document.objects.filter(source__store_id=store_id, sha256__in=digests)
        .select_related("source")
        .order_by("source_id", "path")
    )
    if other_than is not None:
        documents = documents.exclude(source=other_than)
    for document in documents:
        held.setdefault(document.sha256, (document.source, document.path))
    scans = list(
        Job.objects.filter(
            store_id=store_id, kind=Job.Kind.SCAN, state=Job.State.REVIEW
        ).select_related("source")
    )
    scans += [
        job.scan_job
        for job in Job.objects.filter(
            store_id=store_id, kind=Job.Kind.INDEX, state__in=Job.PENDING_STATES
        ).select_related("scan_job__source")
        if job.scan_job is not None
    ]
    for scan in scans:
        if other_than is not None and scan.source_id == other_than.pk:
            continue
        for row in scan.review:
            if row.get("sha256") in digests and row.get("status") in _KEPT_STATUSES:
                held.setdefault(row["sha256"], (scan.source, row["path"]))
    return held


def _already_there(name: str, source: Source, path: str) -> str:
    if source.kind == Source.Kind.FOLDER:
        return _(
            "%(name)s is already covered by the folder source %(folder)s (as %(path)s); "
            "it is not uploaded a second time."
        ) % {"name": name, "folder": source.path, "path": path}
    return _("%(name)s is already in this collection: uploaded as %(path)s (%(source)s).") % {
        "name": name,
        "path": path,
        "source": source.label,
    }
