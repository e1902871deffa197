"""Every write of the knowledge app: stores, sources, scan and index jobs."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import re
import shutil
import time
import unicodedata
from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Q
from django.template.defaultfilters import filesizeformat
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.models import AIProfile, Membership, User
from bridges.outbox import knowledge_indexed_event
from knowledge import events, qdrant
from knowledge.core import scanning
from knowledge.core.chunking import chunk_pages
from knowledge.core.extract import Page, Unreadable
from knowledge.core.formats import TEXT_SUFFIXES, format_of
from knowledge.embeddings import (
    BATCH_SIZE,
    Embedder,
    EmbeddingUnavailable,
    FastembedEmbedder,
    OpenAIEmbedder,
    fastembed_dimension,
)
from knowledge.errors import IndexMismatch, JobBusy, KnowledgeRefusal
from knowledge.models import Chunk, Document, FolderGrant, Job, Source, StagedChunk, Store
from memory_addon.host import filestore
from memory_addon.host.errors import LimitExceeded
from memory_addon.host.outbound import release_db_connection
from memory_addon.host.queue import queue_job_on_commit
from memory_addon.host.storage import storage_check

logger = logging.getLogger(__name__)
MIB = 1024 * 1024
# Chunks staged per INSERT when no model embeds them (about 1.6 MB of text at most).
STAGE_BATCH_CHUNKS = 500
UPLOAD_PREFIX = "knowledge"  # uploads live in the default storage under this folder
# Letters and digits of any script stay (Übersicht.md); slashes, markup, control and
# bidi-override characters (which could make "gpj.md" read as "dm.jpg") become "_".
_UNSAFE_NAME = re.compile(r"[^\w.() -]")
_GLOB_SPECIAL = re.compile(r"([\\*?\[\]!#])")


# --- Stores ------------------------------------------------------------------


def embedder_build(*, provider: str, model_name: str, ai_profile: AIProfile | None) -> Embedder:
    if provider == Store.Provider.FASTEMBED:
        return FastembedEmbedder(model_name or settings.EMBEDDING_MODEL)
    if provider == Store.Provider.OPENAI:
        if ai_profile is None:
            raise KnowledgeRefusal(
                _("Choose an AI profile with the embedding role for this server.")
            )
        return OpenAIEmbedder(
            base_url=ai_profile.base_url,
            model_name=model_name or ai_profile.model,
            api_key=ai_profile.api_key,
        )
    raise KnowledgeRefusal(
        _("Unknown embedding provider %(provider)s.") % {"provider": repr(provider)}
    )


def store_embedder(store: Store, *, for_query: bool = False) -> Embedder | None:
    """The store's embedder, or None for keyword-only stores. A mismatch is refused.

    `for_query`: a person waits for it, so one short attempt; on failure retrieval
    answers from keywords instead of keeping the request (and a worker) waiting.
    """
    if not store.semantic:
        return None
    if store.provider == Store.Provider.OPENAI:
        profile = store.ai_profile
        if profile is None:
            raise IndexMismatch(
                "The AI profile of this collection was deleted; rebuild it with another."
            )
        embedder: Embedder = OpenAIEmbedder(
            base_url=profile.base_url,
            model_name=profile.model,
            api_key=profile.api_key,
            dimension=store.dimension if profile.model == store.model_name else None,
            # A person waits for a query: one short attempt, then keyword search.
            timeout=settings.EMBEDDING_QUERY_TIMEOUT_SECONDS if for_query else 30.0,
            attempts=1 if for_query else 3,
        )
    else:
        embedder = embedder_build(
            provider=store.provider, model_name=store.model_name, ai_profile=None
        )
    if embedder.model_name != store.model_name or embedder.dimension != store.dimension:
        raise IndexMismatch(
            f"This collection was indexed with {store.model_name} ({store.dimension} dimensions) "
            f"but the configured model is {embedder.model_name} ({embedder.dimension}). "
            "Rebuild the collection to use the new model."
        )
    return embedder


def semantic_status() -> str:
    """Empty when the local model is there; otherwise why semantic search is off and how to
    fix it. Does not load the model (see fastembed_dimension)."""
    try:
        fastembed_dimension(settings.EMBEDDING_MODEL)
    except EmbeddingUnavailable as error:
        return str(error)
    return ""


def store_create(
    *,
    owner: User,
    name: str,
    provider: str,
    model_name: str = "",
    ai_profile: AIProfile | None = None,
    role_text: bool = True,
    role_coding: bool = False,
    autonomous_opt_in: bool = False,
    language: str = Store.Language.ENGLISH,
    backend: str = Store.Backend.POSTGRES,
    qdrant_url: str = "",
    qdrant_api_key: str = "",
) -> Store:
    name = name.strip()
    if not name or not name.isprintable():  # no line breaks, bidi or invisible controls
        raise KnowledgeRefusal(_("Give the collection a name on one plain line."))
    if backend not in Store.Backend.values:
        raise KnowledgeRefusal(_("Choose where the vectors live: postgres or qdrant."))
    in_qdrant = backend == Store.Backend.QDRANT
    if in_qdrant:
        if provider == Store.Provider.NONE:
            raise KnowledgeRefusal(_("A keyword-only collection has no vectors to keep in Qdrant."))
        qdrant_url = qdrant.check_url(qdrant_url)
    if language not in Store.Language.values:
        raise KnowledgeRefusal(
            "Choose the keyword search language: " + ", ".join(Store.Language.values) + "."
        )
    if not name:
        raise KnowledgeRefusal(_("Give the collection a name."))
    if Store.objects.filter(owner=owner, name=name).exists():
        raise KnowledgeRefusal(
            _("You already have a collection named %(name)s.") % {"name": repr(name)}
        )
    if ai_profile is not None and ai_profile.owner_id != owner.pk:
        raise KnowledgeRefusal(_("That AI profile is not yours."))
    dimension = None
    if provider == Store.Provider.FASTEMBED:
        # The name and dimension only: the model itself is loaded by the indexing worker.
        model_name = model_name or settings.EMBEDDING_MODEL
        try:
            dimension = fastembed_dimension(model_name)
        except EmbeddingUnavailable as error:
            raise KnowledgeRefusal(str(error)) from error
    elif provider != Store.Provider.NONE:
        release_db_connection()  # the probe below may wait on an outside server
        try:
            embedder = embedder_build(
                provider=provider, model_name=model_name, ai_profile=ai_profile
            )
        except EmbeddingUnavailable as error:
            raise KnowledgeRefusal(str(error)) from error
        model_name, dimension = embedder.model_name, embedder.dimension
    pending = Store(
        owner=owner,
        backend=backend,
        dimension=dimension,
        qdrant_url=qdrant_url if in_qdrant else "",
        qdrant_collection=qdrant.new_collection_name() if in_qdrant else "",
    )
    pending.qdrant_api_key = qdrant_api_key if in_qdrant else ""
    if in_qdrant:
        qdrant.collection_create(pending)  # first: a store never points at nothing
    try:
        store = _store_insert(
            pending,
            name=name,
            provider=provider,
            model_name=model_name,
            ai_profile=ai_profile,
            role_text=role_text,
            role_coding=role_coding,
            autonomous_opt_in=autonomous_opt_in,
            language=language,
        )
    except BaseException:
        if in_qdrant:
            qdrant.collection_delete(pending)
        raise
    return store


def _store_insert(
    store: Store,
    *,
    name: str,
    provider: str,
    model_name: str,
    ai_profile: AIProfile | None,
    role_text: bool,
    role_coding: bool,
    autonomous_opt_in: bool,
    language: str,
) -> Store:
    with transaction.atomic(durable=True):
        store = Store.objects.create(
            owner=store.owner,
            backend=store.backend,
            qdrant_url=store.qdrant_url,
            qdrant_collection=store.qdrant_collection,
            qdrant_api_key_encrypted=store.qdrant_api_key_encrypted,
            name=name,
            provider=provider,
            model_name=model_name,
            dimension=store.dimension,
            ai_profile=ai_profile,
            role_text=role_text,
            role_coding=role_coding,
            autonomous_opt_in=autonomous_opt_in,
            language=language,
        )
        # No vector index yet: the first index job builds it after loading its chunks
        # (_ensure_vector_index), in the commit that makes them visible.
    return store


def _ensure_vector_index(store: Store) -> bool:
    """Build the store's HNSW index if it has none yet; True when it was built now.

    Called in the commit that inserts a job's chunks, after the insert: the first
    (bulk) load of a collection builds its graph once from all its rows instead of
    inserting them into the graph one by one, and stays atomic (PostgreSQL's DDL is
    transactional). Later jobs add their rows to the existing graph.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NULL", [store.index_name])
        row = cursor.fetchone()
    if not (row and row[0]):
        return False
    with connection.cursor() as cursor:
        # The insert's deferred foreign-key checks must run first: PostgreSQL builds no
        # index on a table with pending trigger events. They run now instead of at commit.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        _create_vector_index(store)
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")
    return True


def _create_vector_index(store: Store) -> None:
    # One partial HNSW index per store, on the embedding cast to the store's dimension:
    # a query for one store only walks that store's graph.
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE INDEX IF NOT EXISTS {store.index_name} ON knowledge_chunk "
            f"USING hnsw ((embedding::vector({int(store.dimension or 0)})) vector_cosine_ops) "
            f"WITH (m = {int(settings.KNOWLEDGE_HNSW_M)}, "
            f"ef_construction = {int(settings.KNOWLEDGE_HNSW_EF_CONSTRUCTION)}) "
            f"WHERE store_id = {int(store.pk)}"
        )


def store_delete(*, store: Store) -> None:
    """Delete a collection and its chunks; the original files are never touched."""
    uploads = list(store.sources.filter(kind=Source.Kind.UPLOAD))
    if store.in_qdrant:  # its vectors first: a failure leaves the collection whole
        qdrant.collection_delete(store)
    with transaction.atomic(durable=True):
        with connection.cursor() as cursor:
            cursor.execute(f"DROP INDEX IF EXISTS {store.index_name}")
        store.delete()
    for source in uploads:  # our own copies of uploaded files, not the person's originals
        _upload_delete(source)


# --- Sources -----------------------------------------------------------------


def _upload_root() -> Path:
    """Where the scanner reads uploads: the storage's own folder when it is local, else a
    working copy that each job refreshes from the shared storage."""
    local = filestore.local_folder(filestore.uploads())
    base = local if local is not None else Path(settings.DATA_DIR) / "upload-cache"
    return (base / UPLOAD_PREFIX).resolve()


def _upload_prefix(source: Source) -> str:
    return f"{UPLOAD_PREFIX}/store-{source.store_id}/source-{source.pk}"


def _upload_delete(source: Source) -> None:
    folder = Path(source.path)
    if source.path and folder.is_relative_to(_upload_root()):
        shutil.rmtree(folder, ignore_errors=True)
    filestore.tree_delete(filestore.uploads(), _upload_prefix(source))


def _upload_fetch(source: Source) -> None:
    """With a shared (remote) storage, bring the source's files into its local folder."""
    if source.kind != Source.Kind.UPLOAD or filestore.local_folder(filestore.uploads()):
        return
    folder = Path(source.path)
    if folder.is_relative_to(_upload_root()):
        release_db_connection()
        filestore.tree_download(filestore.uploads(), _upload_prefix(source), folder)


def allowed_roots() -> list[Path]:
    return [Path(root).resolve() for root in settings.KNOWLEDGE_ALLOWED_ROOTS]


def granted_folders(user: User) -> list[Path]:
    """The server folders this person may index: grants to them or their organization (K2).

    Superusers may use every allowed root; everyone else only what an admin granted, and
    never more than the allowed roots (a grant outside them counts for nothing).
    """
    roots = allowed_roots()
    if user.is_superuser:
        return roots
    organizations = Membership.objects.filter(user=user).values("organization")
    grants = FolderGrant.objects.filter(Q(user=user) | Q(organization__in=organizations))
    folders = {Path(grant.path) for grant in grants}
    return sorted(
        folder
        for folder in folders
        if folder.is_absolute()
        and ".." not in folder.parts
        and any(folder == root or folder.is_relative_to(root) for root in roots)
    )


def _check_granted(owner: User, path: Path) -> None:
    folders = granted_folders(owner)
    if any(path == folder or path.is_relative_to(folder) for folder in folders):
        return
    if owner.is_superuser:
        where = ", ".join(str(r) for r in folders) or "none yet"
        raise KnowledgeRefusal(
            f"{path} is outside the folders an admin allowed (KNOWLEDGE_ALLOWED_ROOTS: {where})."
        )
    if not folders:
        raise KnowledgeRefusal(
            "No server folder has been granted to you yet. An admin grants folders to people "
            "or organizations (Admin → Knowledge → Folder grants); until then you can upload files."
        )
    raise KnowledgeRefusal(
        f"{path} is outside the folders you may index: "
        + ", ".join(str(folder) for folder in folders)
        + ". Ask an admin to grant another folder."
    )


def _check_folder(raw: str, owner: User) -> Path:
    problem = scanning.folder_path_problem(raw)
    if problem:
        raise KnowledgeRefusal(problem)
    path = Path(raw.strip())
    # '..' first: "../docs" is refused for its '..', which is what the person must change.
    if ".." in path.parts:
        raise KnowledgeRefusal(_("Give the plain path of the folder, without '..'."))
    if not path.is_absolute():
        raise KnowledgeRefusal(
            _("Give the full path of the folder on the server, starting with /.")
        )
    # The grant comes first: a person learns nothing about folders they may not use.
    _check_granted(owner, path)
    try:
        os.close(scanning.open_folder(path))
    except scanning.UnsafePath:
        raise KnowledgeRefusal(
            "The folder path goes through a symbolic link; links are never followed."
        ) from None
    except FileNotFoundError:
        raise KnowledgeRefusal(_("There is no folder at %(path)s.") % {"path": path}) from None
    except NotADirectoryError:
        raise KnowledgeRefusal(_("%(path)s is a file, not a folder.") % {"path": path}) from None
    except OSError as error:
        raise KnowledgeRefusal(
            _("%(path)s cannot be opened (%(strerror)s).")
            % {"path": path, "strerror": error.strerror}
        ) from None
    return path


def _check_overlap(store: Store, path: Path) -> None:
    for existing in store.sources.filter(kind=Source.Kind.FOLDER):
        other = Path(existing.path)
        if path == other:
            raise KnowledgeRefusal(
                _("This folder is already a source: %(other)s.") % {"other": other}
            )
        if path.is_relative_to(other):
            raise KnowledgeRefusal(
                _("This folder is already covered by the source %(other)s.") % {"other": other}
            )
        if other.is_relative_to(path):
            raise KnowledgeRefusal(
                f"This folder contains the existing source {other}; remove that one first."
            )


def _start_job(
    *,
    store: Store,
    source: Source,
    kind: str,
    auto_index: bool = False,
    scan_job: Job | None = None,
) -> Job:
    try:
        with transaction.atomic():
            job = Job.objects.create(
                store=store,
                source=source,
                kind=kind,
                scan_job=scan_job,
                counts={"auto_index": auto_index},
            )
    except IntegrityError:
        raise JobBusy(
            _(
                "A scan or index job is already running for this collection; "
                "wait for it or cancel it."
            )
        ) from None
    _run_on_commit(job)
    return job


def _run_on_commit(job: Job) -> None:
    task = "knowledge.scan_source" if job.kind == Job.Kind.SCAN else "knowledge.index_source"
    queue_job_on_commit(task, job.pk)
    events.job_changed_on_commit(job)


def source_add_folder(
    *,
    store: Store,
    path: str,
    include: Iterable[str] = (),
    exclude: Iterable[str] = (),
    use_gitignore: bool = True,
    max_file_mib: int = 50,
    sync_mode: str = Source.SyncMode.MANUAL,
) -> tuple[Source, Job]:
    folder = _check_folder(path, store.owner)
    if not 1 <= max_file_mib <= 1024:
        raise KnowledgeRefusal(_("The file size limit must be between 1 MiB and 1024 MiB (1 GiB)."))
    with transaction.atomic(durable=True):
        Store.objects.select_for_update().get(pk=store.pk)
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


def upload_safe_name(raw: str) -> str:
    """The name an uploaded file is kept and shown under: no folders, markup or controls."""
    base = unicodedata.normalize("NFC", raw).replace("\\", "/").rsplit("/", 1)[-1]
    name = _UNSAFE_NAME.sub("_", base).strip().lstrip(".") or "file"
    if len(name) <= 120:
        return name
    # Cut the stem, never the suffix: the format is read from it.
    stem, dot, suffix = name.rpartition(".")
    if not dot or len(suffix) > 10:
        return name[:120]
    return stem[: 120 - len(suffix) - 1] + "." + suffix


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
            raise LimitExceeded(
                _(
                    "%(name)s is %(size)s; a file may be at most %(limit)s. "
                    "Split it or leave it out."
                )
                % {
                    "name": name,
                    "size": filesizeformat(upload.size or 0),
                    "limit": filesizeformat(limit),
                }
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
            store_id=store_id, kind=Job.Kind.INDEX, state__in=Job.ACTIVE_STATES
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
            Store.objects.select_for_update().get(pk=store.pk)
            source = Source.objects.create(
                store=store,
                kind=Source.Kind.UPLOAD,
                path="",
                name=upload_label(names),
                max_file_bytes=settings.KNOWLEDGE_UPLOAD_MAX_FILE_BYTES,
            )
            source.path = str(_upload_root() / f"store-{store.pk}" / f"source-{source.pk}")
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
            Store.objects.select_for_update().get(pk=store.pk)
            job = _start_job(store=store, source=source, kind=Job.Kind.SCAN)
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
        return _start_job(
            store=source.store, source=source, kind=Job.Kind.SCAN, auto_index=auto_index
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
        source.delete()
    if source.store.in_qdrant:
        qdrant.source_points_delete(source.store, source_pk)
    if source.kind == Source.Kind.UPLOAD:
        source.pk = source_pk  # delete() cleared it; the storage prefix is named after it
        _upload_delete(source)


def document_remove(*, document: Document) -> None:
    """Take one file out of the collection: its excerpts go, the original file stays.

    A folder's file gets an exclude pattern, so the next update does not bring it back
    (the review then lists it as excluded); an uploaded file's copy is deleted.
    """
    source = document.source
    store = source.store
    with transaction.atomic(durable=True):
        locked = Source.objects.select_for_update().get(pk=source.pk)
        if Job.objects.filter(source=locked, state__in=Job.ACTIVE_STATES).exists():
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
        _upload_file_delete(source, document.path)


def _upload_file_delete(source: Source, relative: str) -> None:
    folder = Path(source.path)
    if folder.is_relative_to(_upload_root()) and "/" not in relative and relative not in ("", ".."):
        (folder / relative).unlink(missing_ok=True)
        release_db_connection()
        filestore.uploads().delete(f"{_upload_prefix(source)}/{relative}")


def job_cancel(*, job: Job) -> None:
    updated = Job.objects.filter(pk=job.pk, state__in=Job.ACTIVE_STATES).update(
        cancel_requested=True
    )
    if not updated:
        raise KnowledgeRefusal(_("This job is not running any more."))


def scan_confirm(*, scan_job: Job) -> Job:
    """The person confirmed the review: index what it listed."""
    with transaction.atomic(durable=True):
        locked = Job.objects.select_for_update().get(pk=scan_job.pk)
        if locked.kind != Job.Kind.SCAN or locked.state != Job.State.REVIEW:
            raise KnowledgeRefusal(_("This review is no longer waiting for a confirmation."))
        locked.state = Job.State.SUCCEEDED
        locked.save(update_fields=["state"])
        return _start_job(
            store=locked.store, source=locked.source, kind=Job.Kind.INDEX, scan_job=locked
        )


def scan_dismiss(*, scan_job: Job) -> None:
    Job.objects.filter(pk=scan_job.pk, state=Job.State.REVIEW).update(state=Job.State.DISMISSED)
    if scan_job.source.status == Source.Status.NEW and not scan_job.source.documents.exists():
        source_remove(source=scan_job.source)


# --- Running jobs (called by Celery tasks) -------------------------------------


def _claim(job_id: int, kind: str) -> Job | None:
    """Take a queued job, or one whose worker died (stale heartbeat), for this run.

    Taking over a dead worker's job counts as its retry (Job.requeues), like the reaper's
    re-queue: the count is also this run's claim, so a run that lost its job to a newer
    one notices at its next heartbeat and stops (_Lost) without touching the job.
    """
    now = timezone.now()
    stale = now - timedelta(seconds=settings.KNOWLEDGE_JOB_STALE_SECONDS)
    jobs = Job.objects.filter(pk=job_id, kind=kind)
    claimed = jobs.filter(state=Job.State.QUEUED).update(state=Job.State.RUNNING, heartbeat_at=now)
    if not claimed:
        dead = Q(heartbeat_at__lt=stale) | Q(heartbeat_at__isnull=True)
        claimed = jobs.filter(dead, state=Job.State.RUNNING).update(
            heartbeat_at=now, requeues=F("requeues") + 1
        )
    if not claimed:
        return None
    return Job.objects.select_related("source", "store").get(pk=job_id)


class _Stop(Exception):
    pass


class _Lost(Exception):
    """This run's job was settled elsewhere (re-queued or failed by the reaper): stop quietly."""


def _ours(job: Job) -> Q:
    return Q(pk=job.pk, state=Job.State.RUNNING, requeues=job.requeues)


def _beat(job: Job, *, progress: int | None = None, counts: dict[str, Any] | None = None) -> None:
    """Record liveness and progress outside any transaction; stop when cancel was asked."""
    fields: dict[str, Any] = {"heartbeat_at": timezone.now()}
    if progress is not None:
        job.progress = fields["progress"] = progress
    if counts is not None:
        job.counts = fields["counts"] = {**job.counts, **counts}
    if not Job.objects.filter(_ours(job)).update(**fields):
        raise _Lost
    if Job.objects.filter(pk=job.pk, cancel_requested=True).exists():
        raise _Stop
    events.job_changed_on_commit(job)


def _finish(job: Job, state: str, *, error: str = "", **fields: Any) -> None:
    """Settle a job this run (or the reaper) holds; a job settled elsewhere is left alone."""
    job.state, job.error, job.finished_at = state, error[:500], timezone.now()
    for name, value in fields.items():
        setattr(job, name, value)
    updated = Job.objects.filter(
        pk=job.pk, state__in=Job.ACTIVE_STATES, requeues=job.requeues
    ).update(state=job.state, error=job.error, finished_at=job.finished_at, **fields)
    if not updated:
        raise _Lost
    events.job_changed_on_commit(job)


# PDF text the scan extracted, kept by content hash for the index job (read once, then
# removed), so a PDF is extracted once. Left-overs of dismissed scans expire.
EXTRACTED_KEEP_SECONDS = 24 * 3600


def _extracted_folder() -> Path:
    return Path(settings.DATA_DIR) / "extracted"


def _keep_pages(digest: str, pages: list[Page]) -> None:
    folder = _extracted_folder()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f"{digest}.json.{os.getpid()}.part"
        partial.write_text(json.dumps([[page.number, page.text] for page in pages]))
        partial.replace(folder / f"{digest}.json")
    except OSError:
        logger.warning("Could not keep the text of %s; the index extracts it again", digest)


def _kept_pages(digest: str) -> list[Page] | None:
    """The pages the scan extracted from the file with this hash (and forget them)."""
    path = _extracted_folder() / f"{digest}.json"
    try:
        data = json.loads(path.read_text())
        path.unlink()
    except (OSError, ValueError):
        return None
    return [Page(number, text) for number, text in data]


def _expire_kept_pages() -> None:
    cutoff = time.time() - EXTRACTED_KEEP_SECONDS
    try:
        for entry in os.scandir(_extracted_folder()):
            if entry.stat().st_mtime < cutoff:
                Path(entry.path).unlink(missing_ok=True)
    except OSError:
        return


def _spec(source: Source) -> scanning.ScanSpec:
    return scanning.ScanSpec(
        keep_pages=_keep_pages,
        root=Path(source.path),
        include=tuple(source.include_globs),
        exclude=tuple(source.exclude_globs),
        use_gitignore=source.use_gitignore,
        max_file_bytes=source.max_file_bytes,
        known_hashes=dict(source.hashes),
    )


def scan_run(job_id: int) -> None:
    job = _claim(job_id, Job.Kind.SCAN)
    if job is None:
        logger.info("Scan job %s is not waiting to run; nothing to do", job_id)
        return
    try:
        _scan_claimed(job)
    except _Lost:
        logger.warning("Scan job %s was settled elsewhere; this run stops", job_id)


def _scan_claimed(job: Job) -> None:
    source = job.source
    checked = {"n": 0}

    def should_stop() -> bool:
        checked["n"] += 1
        if checked["n"] % 50:
            return False
        try:
            _beat(job)
        except _Stop:
            return True
        return False

    _expire_kept_pages()
    try:
        _upload_fetch(source)
        result = scanning.scan(_spec(source), should_stop=should_stop)
    except scanning.Cancelled:
        _finish(job, Job.State.CANCELLED)
        return
    _skip_known_uploads(source, result.rows)
    rows = [row.__dict__ for row in result.rows]
    if result.missing_root:
        _apply_missing_root(job, source, rows)
        return
    if result.fatal:
        Source.objects.filter(pk=source.pk).update(
            status=Source.Status.ERROR, status_message=result.fatal
        )
        _finish(job, Job.State.FAILED, error=result.fatal, review=rows)
        return
    summary = result.summary()
    counts = {**summary, "limit": result.limit_reached}
    changes = sum(summary["counts"][s] for s in ("new", "changed", "deleted"))  # type: ignore[index]
    if job.counts.get("auto_index"):
        if not changes:
            _finish(job, Job.State.SUCCEEDED, review=rows, counts=counts, progress=100)
            return
        _finish(job, Job.State.REVIEW, review=rows, counts=counts, progress=100)
        scan_confirm(scan_job=job)
        return
    _finish(job, Job.State.REVIEW, review=rows, counts=counts, progress=100)


def _skip_known_uploads(source: Source, rows: list[scanning.Row]) -> None:
    """Uploaded files the collection already holds are skipped by the scan as well.

    The check at upload time cannot see a parallel upload whose scan has not run yet;
    scans of one collection run one at a time, so here the earlier one is visible:
    as another source's document, or in a scan that waits for review.
    """
    if source.kind != Source.Kind.UPLOAD:
        return
    fresh = {
        row.sha256: index
        for index, row in enumerate(rows)
        if row.status in (scanning.NEW, scanning.CHANGED) and row.sha256
    }
    if not fresh:
        return
    held = _held_elsewhere(source.store_id, set(fresh), other_than=source)
    for digest, (_source, path) in held.items():
        index = fresh[digest]
        rows[index] = dataclasses.replace(
            rows[index], status=scanning.SKIPPED, reason=f"already in this collection as {path}"
        )


def _apply_missing_root(job: Job, source: Source, rows: list[dict[str, Any]]) -> None:
    """A deleted root removes the source's chunks at once, so no stale excerpt remains."""
    with transaction.atomic(durable=True):
        removed = source.documents.count()
        source.documents.all().delete()
        Source.objects.filter(pk=source.pk).update(
            status=Source.Status.MISSING,
            status_message="The folder no longer exists.",
            hashes={},
            file_count=0,
            chunk_count=0,
        )
        _finish(
            job,
            Job.State.SUCCEEDED,
            review=rows,
            progress=100,
            counts={"removed": removed, "new": 0, "unchanged": 0, "skipped": 0},
        )


def index_run(job_id: int) -> None:
    job = _claim(job_id, Job.Kind.INDEX)
    if job is None:
        logger.info("Index job %s is not waiting to run; nothing to do", job_id)
        return
    try:
        _index_claimed(job)
    except _Lost:
        logger.warning("Index job %s was settled elsewhere; this run stops", job_id)


def _index_claimed(job: Job) -> None:
    source, store = job.source, job.store
    # A re-run after a crash starts from scratch: drop what the dead run staged.
    StagedChunk.objects.filter(job=job).delete()
    previous_status = source.status if source.status != Source.Status.INDEXING else Source.Status.OK
    Source.objects.filter(pk=source.pk).update(status=Source.Status.INDEXING)
    rows = job.scan_job.review if job.scan_job else []
    try:
        embedder = store_embedder(store)
        outcome = _index_rows(job, source, embedder, rows)
        if store.in_qdrant:
            qdrant.stage_points(store, job.pk, source.pk)
    except _Stop:
        StagedChunk.objects.filter(job=job).delete()
        Source.objects.filter(pk=source.pk).update(status=previous_status)
        _finish(job, Job.State.CANCELLED)
        return
    except (EmbeddingUnavailable, KnowledgeRefusal) as error:
        StagedChunk.objects.filter(job=job).delete()
        Source.objects.filter(pk=source.pk).update(
            status=Source.Status.ERROR, status_message=str(error)[:500]
        )
        _finish(job, Job.State.FAILED, error=str(error))
        return
    _commit(job, source, rows, outcome)


def _open_source_folder(source: Source) -> int:
    """The source's folder as a handle, opened from / without following any link."""
    try:
        return scanning.open_folder(Path(source.path))
    except scanning.UnsafePath as error:
        raise KnowledgeRefusal(
            f"Nothing was indexed: the source path goes through a symbolic link now ({error}) "
            "Fix the folder, then run Update now."
        ) from None
    except FileNotFoundError:
        raise KnowledgeRefusal(
            "Nothing was indexed: the folder no longer exists. Run Update now."
        ) from None
    except OSError as error:
        raise KnowledgeRefusal(
            f"Nothing was indexed: the folder cannot be opened ({error.strerror})."
        ) from None


def _read_reviewed(root_fd: int, source: Source, row: dict[str, Any]) -> tuple[bytes, str]:
    """The file's bytes, read through the folder handle, if they are what the person reviewed."""
    data = scanning.read_below(root_fd, row["path"], limit=source.max_file_bytes)
    digest = hashlib.sha256(data).hexdigest()
    if digest != row.get("sha256"):
        raise Unreadable("changed since the review; run Update now to review it again")
    return data, digest


def _index_rows(
    job: Job, source: Source, embedder: Embedder | None, rows: list[dict[str, Any]]
) -> dict[str, Any]:
    _upload_fetch(source)
    root_fd = _open_source_folder(source)
    try:
        return _index_open(job, source, embedder, rows, root_fd)
    finally:
        os.close(root_fd)


def _index_open(
    job: Job,
    source: Source,
    embedder: Embedder | None,
    rows: list[dict[str, Any]],
    root_fd: int,
) -> dict[str, Any]:
    to_index = [row for row in rows if row["status"] in ("new", "changed")]
    problems: list[dict[str, str]] = []
    documents: dict[str, dict[str, Any]] = {}
    pending: list[StagedChunk] = []
    total = max(1, len(to_index))
    staged_chunks = 0
    last_beat = float("-inf")  # the first file reports at once
    # A model embeds a batch at a time; without one, chunks are staged in larger batches
    # (each batch is one INSERT round trip).
    batch_size = BATCH_SIZE if embedder is not None else STAGE_BATCH_CHUNKS

    def flush() -> None:
        nonlocal pending, staged_chunks
        if not pending:
            return
        if embedder is not None:
            release_db_connection()
            vectors = embedder.embed([chunk.text for chunk in pending])
            for chunk, vector in zip(pending, vectors, strict=True):
                chunk.embedding = vector
        StagedChunk.objects.bulk_create(pending)
        staged_chunks += len(pending)
        pending = []

    for done, row in enumerate(to_index, start=1):
        try:
            data, digest = _read_reviewed(root_fd, source, row)
            pages = _kept_pages(digest) or scanning.document_pages(
                data, row["format"], max_chars=scanning.MAX_EXTRACTED_CHARS
            )
        except (Unreadable, scanning.UnsafePath) as error:
            problems.append({"path": row["path"], "reason": str(error)})
            continue
        except OSError as error:
            problems.append({"path": row["path"], "reason": f"cannot be read ({error.strerror})"})
            continue
        documents[row["path"]] = {"sha256": digest, "format": row["format"], "size": len(data)}
        for chunk in chunk_pages(
            pages,
            chunk_tokens=settings.KNOWLEDGE_CHUNK_TOKENS,
            overlap_tokens=settings.KNOWLEDGE_CHUNK_OVERLAP_TOKENS,
        ):
            pending.append(
                StagedChunk(
                    job=job,
                    path=row["path"],
                    ordinal=chunk.ordinal,
                    page=chunk.page,
                    text=chunk.text,
                    token_count=chunk.tokens,
                )
            )
            if len(pending) >= batch_size:
                flush()
        # Progress, heartbeat and the cancel check at most every
        # KNOWLEDGE_PROGRESS_INTERVAL_SECONDS, not per file: each beat is two queries,
        # a template render and a push to the page.
        now = time.monotonic()
        if now - last_beat >= settings.KNOWLEDGE_PROGRESS_INTERVAL_SECONDS:
            last_beat = now
            _beat(
                job,
                progress=min(99, int(90 * done / total)),
                counts={
                    "documents": done,
                    "of": len(to_index),
                    "chunks": staged_chunks + len(pending),
                    "problems": len(problems),
                },
            )
    flush()
    return {"documents": documents, "problems": problems}


def _commit(job: Job, source: Source, rows: list[dict[str, Any]], outcome: dict[str, Any]) -> None:
    """Make the new state visible in one transaction."""
    documents: dict[str, dict[str, Any]] = outcome["documents"]
    problems = outcome["problems"]
    removed_paths = {row["path"] for row in rows if row["status"] == "deleted"}
    replaced_paths = removed_paths | set(documents)
    with transaction.atomic(durable=True):
        locked = Source.objects.select_for_update().get(pk=source.pk)
        if not Job.objects.select_for_update().filter(_ours(job)).exists():
            raise _Lost
        if Job.objects.filter(pk=job.pk, cancel_requested=True).exists():
            if job.store.in_qdrant:
                _points_delete_on_commit(job.store, _staged_chunk_ids(job))
            StagedChunk.objects.filter(job=job).delete()
            Source.objects.filter(pk=source.pk).update(
                status=Source.Status.OK if locked.hashes else Source.Status.NEW
            )
            _finish(job, Job.State.CANCELLED)
            return
        removed = Document.objects.filter(source=locked, path__in=removed_paths).count()
        if job.store.in_qdrant:  # the replaced chunks' vectors go once they are gone
            _points_delete_on_commit(
                job.store,
                list(
                    Chunk.objects.filter(
                        source=locked, document__path__in=replaced_paths
                    ).values_list("pk", flat=True)
                ),
            )
        Document.objects.filter(source=locked, path__in=replaced_paths).delete()
        created = Document.objects.bulk_create(
            [Document(source=locked, path=path, **meta) for path, meta in documents.items()]
        )
        by_path = json.dumps({document.path: document.pk for document in created})
        with connection.cursor() as cursor:
            cursor.execute(
                """
                INSERT INTO knowledge_chunk (id, document_id, store_id, source_id, ordinal, page,
                                             text, token_count, embedding)
                SELECT coalesce(s.chunk_id,
                                nextval(pg_get_serial_sequence('knowledge_chunk', 'id'))),
                       (%s::jsonb ->> s.path)::bigint, %s, %s, s.ordinal, s.page, s.text,
                       s.token_count, CASE WHEN %s THEN NULL ELSE s.embedding END
                FROM knowledge_stagedchunk s
                WHERE s.job_id = %s AND %s::jsonb ? s.path
                """,
                [by_path, job.store_id, locked.pk, job.store.in_qdrant, job.pk, by_path],
            )
            inserted = cursor.rowcount
        if job.store.semantic and not job.store.in_qdrant and inserted > 0:
            # The graph is built from the first rows (Qdrant stores keep no graph here).
            _ensure_vector_index(job.store)
        StagedChunk.objects.filter(job=job).delete()
        hashes = {path: sha for path, sha in locked.hashes.items() if path not in replaced_paths}
        hashes |= {path: meta["sha256"] for path, meta in documents.items()}
        skipped = sum(1 for row in rows if row["status"] == "skipped") + len(problems)
        chunk_count = Chunk.objects.filter(source=locked).count()
        Source.objects.filter(pk=locked.pk).update(
            status=Source.Status.OK,
            status_message="",
            hashes=hashes,
            file_count=len(hashes),
            chunk_count=chunk_count,
            problem_count=skipped,
            last_indexed_at=timezone.now(),
        )
        unchanged = sum(1 for row in rows if row["status"] == "unchanged")
        counts = {
            **job.counts,
            "new": len(documents),
            "unchanged": unchanged,
            "removed": removed,
            "skipped": skipped,
            "chunks": chunk_count,
        }
        _finish(job, Job.State.SUCCEEDED, progress=100, problems=problems, counts=counts)
        # B4: written in the commit that makes the new index visible.
        knowledge_indexed_event(
            user_id=job.store.owner_id,
            store_id=job.store_id,
            source_id=locked.pk,
            job_id=job.pk,
            counts=counts,
        )


def _staged_chunk_ids(job: Job) -> list[int]:
    staged = StagedChunk.objects.filter(job=job).values_list("chunk_id", flat=True)
    return [int(i) for i in staged if i is not None]


def _points_delete_on_commit(store: Store, chunk_ids: list[int]) -> None:
    if chunk_ids:
        transaction.on_commit(lambda: qdrant.points_delete(store, chunk_ids))


def _stale_jobs() -> Q:
    cutoff = timezone.now() - timedelta(seconds=settings.KNOWLEDGE_JOB_STALE_SECONDS)
    # Running without a heartbeat for too long: the worker died. Queued again by us and
    # still not started: the message was lost with the broker.
    return Q(state=Job.State.RUNNING, heartbeat_at__lt=cutoff) | Q(
        state=Job.State.QUEUED, requeues__gt=0, heartbeat_at__lt=cutoff
    )


def stale_jobs_reap() -> dict[str, int]:
    """Settle jobs whose worker died: send them again once, then fail them with a reason.

    Runs from Celery beat every few minutes, so a killed worker blocks a collection for
    minutes, not for the broker's hour-long visibility timeout. A failed index job leaves
    the previous index serving; the collection can start a new job at once.
    """
    settled = {"requeued": 0, "failed": 0}
    for job_id in Job.objects.filter(_stale_jobs()).values_list("pk", flat=True):
        with transaction.atomic(durable=True):
            job = (
                Job.objects.select_for_update(skip_locked=True)
                .filter(_stale_jobs(), pk=job_id)
                .select_related("source", "store")
                .first()
            )
            if job is None:  # it beat or finished meanwhile, or another reaper has it
                continue
            if job.requeues < settings.KNOWLEDGE_JOB_MAX_REQUEUES:
                job.state, job.requeues, job.heartbeat_at = (
                    Job.State.QUEUED,
                    job.requeues + 1,
                    timezone.now(),
                )
                job.save(update_fields=["state", "requeues", "heartbeat_at"])
                _run_on_commit(job)
                settled["requeued"] += 1
                logger.warning("Job %s had a stale heartbeat; sent it again", job.pk)
                continue
            reason = (
                f"The worker running this {job.get_kind_display().lower()} stopped responding "
                f"(no heartbeat for {settings.KNOWLEDGE_JOB_STALE_SECONDS} s), also after a "
                "retry. The previous index is still in use; run Update now to try again."
            )
            StagedChunk.objects.filter(job=job).delete()
            if job.kind == Job.Kind.INDEX:
                Source.objects.filter(pk=job.source_id).update(
                    status=Source.Status.ERROR, status_message=reason[:500]
                )
            _finish(job, Job.State.FAILED, error=reason)
            settled["failed"] += 1
            logger.warning("Job %s had a stale heartbeat after a retry; failed it", job.pk)
    return settled


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


def store_rebuild(*, store: Store) -> Store:
    """Start over with the configured model: drop the old vectors; sources then re-index."""
    if store.provider == Store.Provider.NONE:
        raise KnowledgeRefusal(_("A keyword-only collection has no vectors to rebuild."))
    if store.in_qdrant:
        raise KnowledgeRefusal(
            "A collection in Qdrant cannot be rebuilt for a new model yet; create a new "
            "collection with that model and delete this one."
        )
    release_db_connection()
    try:
        if store.provider == Store.Provider.FASTEMBED:  # name and dimension, no model load
            model_name = settings.EMBEDDING_MODEL
            dimension = fastembed_dimension(model_name)
        else:
            embedder = embedder_build(
                provider=store.provider,
                model_name=store.ai_profile.model if store.ai_profile else "",
                ai_profile=store.ai_profile,
            )
            model_name, dimension = embedder.model_name, embedder.dimension
    except EmbeddingUnavailable as error:
        raise KnowledgeRefusal(str(error)) from error
    with transaction.atomic(durable=True):
        if Job.objects.filter(store=store, state__in=Job.ACTIVE_STATES).exists():
            raise JobBusy(_("A job is running for this collection; wait for it or cancel it."))
        with connection.cursor() as cursor:
            cursor.execute(f"DROP INDEX IF EXISTS {store.index_name}")
        Document.objects.filter(source__store=store).delete()
        store.sources.update(
            hashes={},
            file_count=0,
            chunk_count=0,
            status=Source.Status.NEW,
            status_message="Rebuilt for a new model: run Update now to index it again.",
        )
        store.model_name, store.dimension = model_name, dimension
        store.save(update_fields=["model_name", "dimension"])
        # The next index job builds the new index after loading (_ensure_vector_index).
    return store
