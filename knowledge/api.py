"""The knowledge API: collections, sources, jobs and retrieval. Foreign ids are 404."""

from __future__ import annotations

from typing import TypedDict

from django.http import Http404, HttpRequest
from ninja import File, Router, Status, UploadedFile

from accounts.auth import signed_in_user
from accounts.selectors import profile_for_user
from host.schemas import ErrorOut
from knowledge import services
from knowledge.models import Job, Source, Store
from knowledge.retrieval import retrieve
from knowledge.schemas import (
    ExcerptOut,
    FolderSourceIn,
    JobOut,
    RetrieveIn,
    RetrieveOut,
    SharingIn,
    SharingOut,
    SourceAddedOut,
    SourceOut,
    SourcePatch,
    StoreIn,
    StoreOut,
)
from knowledge.selectors import (
    job_for_user,
    source_for_user,
    store_for_user,
    store_sharing,
    stores_readable_by,
)

router = Router(tags=["knowledge"])
ERRORS = {400: ErrorOut, 403: ErrorOut, 404: ErrorOut, 409: ErrorOut}


class SourceAdded(TypedDict):
    """A new source and the scan it started (SourceAddedOut)."""

    source: Source
    job: Job


def _store(request: HttpRequest, store_id: int, *, manage: bool = False) -> Store:
    return store_for_user(signed_in_user(request), store_id, manage=manage)


def _source(request: HttpRequest, source_id: int, *, manage: bool = False) -> Source:
    return source_for_user(signed_in_user(request), source_id, manage=manage)


def _job(request: HttpRequest, job_id: int, *, manage: bool = False) -> Job:
    return job_for_user(signed_in_user(request), job_id, manage=manage)


@router.get(
    "/stores", response=list[StoreOut], summary="Your collections and those shared with you"
)
def store_list(request: HttpRequest) -> list[Store]:
    return list(stores_readable_by(signed_in_user(request)))


@router.post(
    "/stores", response={201: StoreOut, **ERRORS, 503: ErrorOut}, summary="Create a collection"
)
def store_new(request: HttpRequest, payload: StoreIn) -> Status[Store]:
    owner = signed_in_user(request)
    profile = profile_for_user(owner, payload.ai_profile_id) if payload.ai_profile_id else None
    store = services.store_create(
        owner=owner,
        name=payload.name,
        provider=payload.provider,
        model_name=payload.model_name if payload.provider == "fastembed" else "",
        ai_profile=profile,
        role_text=payload.role_text,
        role_coding=payload.role_coding,
        autonomous_opt_in=payload.autonomous_opt_in,
        language=payload.language,
        backend=payload.backend,
        qdrant_url=payload.qdrant_url,
        qdrant_api_key=payload.qdrant_api_key,
    )
    return Status(201, store)


@router.get("/stores/{store_id}", response={200: StoreOut, 404: ErrorOut}, summary="One collection")
def store_get(request: HttpRequest, store_id: int) -> Store:
    return _store(request, store_id)


@router.delete(
    "/stores/{store_id}",
    response={204: None, 403: ErrorOut, 404: ErrorOut, 503: ErrorOut},
    summary="Delete a collection",
)
def store_remove(request: HttpRequest, store_id: int) -> Status[None]:
    services.store_delete(store=_store(request, store_id, manage=True))
    return Status(204, None)


@router.get(
    "/stores/{store_id}/sources",
    response={200: list[SourceOut], 404: ErrorOut},
    summary="Sources of a collection",
)
def source_list(request: HttpRequest, store_id: int) -> list[Source]:
    return list(_store(request, store_id).sources.all())


@router.post(
    "/stores/{store_id}/sources",
    response={201: SourceAddedOut, **ERRORS},
    summary="Add a server folder; starts the scan whose review must be confirmed",
)
def source_add(request: HttpRequest, store_id: int, payload: FolderSourceIn) -> Status[SourceAdded]:
    source, job = services.source_add_folder(
        store=_store(request, store_id, manage=True),
        path=payload.path,
        include=payload.include,
        exclude=payload.exclude,
        use_gitignore=payload.use_gitignore,
        max_file_mib=payload.max_file_mib,
        sync_mode=payload.sync_mode,
        actor=signed_in_user(request),
    )
    return Status(201, SourceAdded(source=source, job=job))


@router.post(
    "/stores/{store_id}/uploads",
    response={201: SourceAddedOut, **ERRORS},
    summary="Upload files as a new source; starts the scan whose review must be confirmed",
)
def source_upload(
    request: HttpRequest, store_id: int, documents: File[list[UploadedFile]]
) -> Status[SourceAdded]:
    """Multipart field `documents`, one or more files. The collection page's checks apply
    (formats, size per file and per person, names); confirm the scan's review with
    `/jobs/{job_id}/confirm` to index them."""
    source, job = services.source_add_upload(
        store=_store(request, store_id, manage=True), files=list(documents)
    )
    return Status(201, SourceAdded(source=source, job=job))


@router.post(
    "/sources/{source_id}/update",
    response={202: JobOut, **ERRORS},
    summary="Update now: scan for changes (review before indexing)",
)
def source_update(request: HttpRequest, source_id: int) -> Status[Job]:
    return Status(202, services.source_update_now(source=_source(request, source_id, manage=True)))


@router.patch(
    "/sources/{source_id}", response={200: SourceOut, **ERRORS}, summary="Enable or disable"
)
def source_patch(request: HttpRequest, source_id: int, payload: SourcePatch) -> Source:
    source = _source(request, source_id, manage=True)
    services.source_set_enabled(source=source, enabled=payload.enabled)
    source.refresh_from_db()
    return source


@router.delete(
    "/sources/{source_id}",
    response={204: None, **ERRORS},
    summary="Remove a source and its chunks (never the original files)",
)
def source_delete(request: HttpRequest, source_id: int) -> Status[None]:
    services.source_remove(source=_source(request, source_id, manage=True))
    return Status(204, None)


@router.get("/jobs/{job_id}", response={200: JobOut, 404: ErrorOut}, summary="A scan or index job")
def job_get(request: HttpRequest, job_id: int) -> Job:
    return _job(request, job_id)


@router.post(
    "/jobs/{job_id}/confirm",
    response={202: JobOut, **ERRORS},
    summary="Confirm a scan's review and start indexing",
)
def job_confirm(request: HttpRequest, job_id: int) -> Status[Job]:
    return Status(202, services.scan_confirm(scan_job=_job(request, job_id, manage=True)))


@router.post(
    "/jobs/{job_id}/cancel", response={200: JobOut, **ERRORS}, summary="Cancel a running job"
)
def job_cancel(request: HttpRequest, job_id: int) -> Job:
    job = _job(request, job_id, manage=True)
    services.job_cancel(job=job)
    job.refresh_from_db()
    return job


@router.post(
    "/retrieve",
    response={200: RetrieveOut, **ERRORS},
    summary="The bounded, cited block for a prompt (also the test search)",
)
def retrieve_endpoint(request: HttpRequest, payload: RetrieveIn) -> RetrieveOut:
    readable = stores_readable_by(signed_in_user(request))
    stores = list(readable.filter(pk__in=payload.store_ids))
    if len(stores) != len(set(payload.store_ids)):
        raise Http404
    result = retrieve(
        stores, payload.query, context_window=payload.context_window, autonomous=payload.autonomous
    )
    return RetrieveOut(
        block=result.block,
        excerpts=[ExcerptOut(**excerpt) for excerpt in result.sent_along()],
    )


def _sharing_out(store: Store) -> SharingOut:
    sharing = store_sharing(store)
    return SharingOut(
        organization_id=sharing.organization.pk if sharing.organization else None,
        readers=[user.pk for user in sharing.readers],
        managers=[user.pk for user in sharing.managers],
    )


@router.get(
    "/stores/{store_id}/sharing",
    response={200: SharingOut, 404: ErrorOut},
    summary="Who the collection is shared with",
)
def sharing_get(request: HttpRequest, store_id: int) -> SharingOut:
    return _sharing_out(_store(request, store_id))


@router.put(
    "/stores/{store_id}/sharing",
    response={200: SharingOut, **ERRORS},
    summary="Share with your organization (members read, admins manage) and named people",
)
def sharing_set(request: HttpRequest, store_id: int, payload: SharingIn) -> SharingOut:
    store = _store(request, store_id, manage=True)
    services.store_share_set(
        store=store,
        actor=signed_in_user(request),
        organization_id=payload.organization_id,
        readers=payload.readers,
        managers=payload.managers,
    )
    return _sharing_out(store)
