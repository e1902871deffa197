"""Collection pages: list, create, the store page with sources, review, progress and test search."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Case, When
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from accounts.auth import signed_in_user
from host.core.ids import row_id
from host.embeddings import EmbeddingUnavailable
from host.errors import Refusal
from host.htmx import HtmxHttpRequest
from knowledge import selectors, services
from knowledge.core.formats import TEXT_NAMES
from knowledge.forms import FolderSourceForm, SearchForm, ShareForm, StoreForm, UploadForm
from knowledge.models import Job, Source, Store
from knowledge.retrieval import retrieve


def _store(request: HttpRequest, store_id: int, *, manage: bool = False) -> Store:
    return selectors.store_for_user(signed_in_user(request), store_id, manage=manage)


@login_required
@require_GET
def store_list(request: HttpRequest) -> HttpResponse:
    user = signed_in_user(request)
    stores = selectors.stores_readable_by(user).select_related("owner")
    managed = selectors.shared_store_ids_managed_by(user)
    return render(
        request, "knowledge/list.html", {"stores": stores, "me": user, "managed": managed}
    )


@login_required
@require_http_methods(["GET", "POST"])
def store_new(request: HttpRequest) -> HttpResponse:
    owner = signed_in_user(request)
    semantic_off = services.semantic_status()
    form = StoreForm(
        request.POST or None,
        owner=owner,
        local_models=[
            model
            for model in sorted(
                services.local_models(), key=lambda m: m != settings.KNOWLEDGE_EMBEDDING_MODEL
            )
            if not services.semantic_status(model)
        ],
    )
    if request.method == "POST" and form.is_valid():
        provider, model_name, profile = form.provider_and_profile()
        try:
            store = services.store_create(
                owner=owner,
                name=form.cleaned_data["name"],
                provider=provider,
                model_name=model_name,
                ai_profile=profile,
                role_text=form.cleaned_data["role_text"],
                role_coding=form.cleaned_data["role_coding"],
                autonomous_opt_in=form.cleaned_data["autonomous_opt_in"],
                language=form.cleaned_data["language"],
                backend=form.cleaned_data["backend"],
                qdrant_url=form.cleaned_data["qdrant_url"],
                qdrant_api_key=form.cleaned_data["qdrant_api_key"],
            )
        except Refusal as refusal:
            form.add_error(None, refusal.message)
        else:
            return redirect("knowledge_store", store_id=store.pk)
    return render(request, "knowledge/new.html", {"form": form, "semantic_off": semantic_off})


def _index_problem(store: Store) -> str:
    try:
        services.store_embedder(store)
    except Refusal as refusal:
        return refusal.message
    except EmbeddingUnavailable as error:
        return f"Semantic search is off for now: {error}"
    return ""


def _store_context(request: HttpRequest, store: Store, **extra: Any) -> dict[str, Any]:
    user = signed_in_user(request)
    access = selectors.store_access(user, store)
    sharing = selectors.store_sharing(store)
    organization, people = selectors.share_candidates(user, store)
    # The running job first: the live updates on the page are its own.
    jobs = list(
        store.jobs.select_related("source", "store")
        .annotate(running_first=Case(When(state__in=Job.ACTIVE_STATES, then=0), default=1))
        .order_by("running_first", "-created_at", "-id")[:1]
    )
    review_job = (
        store.jobs.filter(kind=Job.Kind.SCAN, state=Job.State.REVIEW)
        .select_related("source")
        .first()
    )
    return {
        "store": store,
        "access": access,
        "read_only": access == "read",
        "sharing": sharing,
        "share_form": extra.pop("share_form", None)
        or ShareForm(
            organization=organization,
            people=people,
            shared_with_organization=sharing.organization is not None,
            readers=[person.pk for person in sharing.readers],
            managers=[person.pk for person in sharing.managers],
        ),
        "sources": list(store.sources.all()),
        "job": jobs[0] if jobs else None,
        "review_job": review_job,
        "folder_form": extra.pop("folder_form", None) or FolderSourceForm(),
        "upload_form": extra.pop("upload_form", None) or UploadForm(),
        **_upload_context(),
        "search_form": extra.pop("search_form", None) or SearchForm(),
        "allowed_roots": services.granted_folders(user),
        "watch_interval_minutes": settings.KNOWLEDGE_WATCH_INTERVAL_SECONDS // 60,
        "index_problem": extra.pop("index_problem", None)
        if "index_problem" in extra
        else _index_problem(store),
        **extra,
    }


@login_required
@require_GET
def store_page(request: HttpRequest, store_id: int) -> HttpResponse:
    return render(
        request, "knowledge/store.html", _store_context(request, _store(request, store_id))
    )


@login_required
@require_POST
def store_delete(request: HttpRequest, store_id: int) -> HttpResponse:
    store = _store(request, store_id, manage=True)
    services.store_delete(store=store)
    messages.success(
        request,
        _("Deleted the collection “%(name)s”. Your original files are untouched.")
        % {"name": store.name},
    )
    return redirect("knowledge")


@login_required
@require_POST
def store_rebuild(request: HttpRequest, store_id: int) -> HttpResponse:
    store = _store(request, store_id, manage=True)
    try:
        services.store_rebuild(store=store)
    except Refusal as refusal:
        messages.error(request, refusal.message)
    else:
        messages.success(
            request, _("The old index is gone. Run Update now on each source to index it again.")
        )
    return redirect("knowledge_store", store_id=store.pk)


@login_required
@require_POST
def source_add_folder(request: HttpRequest, store_id: int) -> HttpResponse:
    store = _store(request, store_id, manage=True)
    form = FolderSourceForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            services.source_add_folder(
                store=store,
                path=data["path"],
                include=data["include"].splitlines(),
                exclude=data["exclude"].splitlines(),
                use_gitignore=data["use_gitignore"],
                max_file_mib=data["max_file_mib"],
                sync_mode=data["sync_mode"],
                actor=signed_in_user(request),
            )
        except Refusal as refusal:
            form.add_error("path", refusal.message)
        else:
            messages.success(
                request, _("Checking the folder… The review appears here when the scan is done.")
            )
            return redirect("knowledge_store", store_id=store.pk)
    return render(
        request,
        "knowledge/store.html",
        _store_context(request, store, folder_form=form),
        status=400,
    )


def _upload_context() -> dict[str, Any]:
    return {
        "upload_max_bytes": settings.KNOWLEDGE_UPLOAD_MAX_FILE_BYTES,
        "upload_max_files": settings.DATA_UPLOAD_MAX_NUMBER_FILES,
        "upload_max_total_bytes": settings.REQUEST_MAX_UPLOAD_BYTES,
        "upload_formats": services.upload_formats(),
        "upload_names": sorted(TEXT_NAMES),
    }


@login_required
@require_POST
def source_upload(request: HtmxHttpRequest, store_id: int) -> HttpResponse:
    store = _store(request, store_id, manage=True)
    form = UploadForm(request.POST, request.FILES)
    if form.is_valid():
        try:
            source, _job = services.source_add_upload(
                store=store, files=form.cleaned_data["documents"]
            )
        except Refusal as refusal:
            form.add_error("documents", refusal.message)
        else:
            messages.success(
                request, _("Checking the uploaded files: %(names)s") % {"names": source.label}
            )
            if request.htmx:
                return HttpResponseClientRedirect(reverse("knowledge_store", args=[store.pk]))
            return redirect("knowledge_store", store_id=store.pk)
    if request.htmx:
        return render(
            request,
            "knowledge/_upload.html",
            {"store": store, "upload_form": form, **_upload_context()},
            status=400,
        )
    return render(
        request,
        "knowledge/store.html",
        _store_context(request, store, upload_form=form),
        status=400,
    )


@login_required
@require_GET
def store_files(request: HttpRequest, store_id: int) -> HttpResponse:
    store = _store(request, store_id)
    source: Source | None = None
    raw_source = request.GET.get("source", "")
    if raw_source:
        source_id = row_id(raw_source)
        if source_id is None:
            raise Http404
        source = get_object_or_404(Source, pk=source_id, store=store)
    show = request.GET.get("show", "")
    files = selectors.store_files(store, source_id=source.pk if source else None)
    rows = (
        [row for row in files.rows if row.status == "skipped"] if show == "problems" else files.rows
    )
    return render(
        request,
        "knowledge/files.html",
        {
            "store": store,
            "files": files,
            "rows": rows,
            "source": source,
            "show": show,
            "read_only": not selectors.store_managed_by(signed_in_user(request), store),
        },
    )


@login_required
@require_POST
def document_remove(request: HttpRequest, document_id: int) -> HttpResponse:
    document = selectors.document_for_user(signed_in_user(request), document_id, manage=True)
    store_id = document.source.store_id
    try:
        services.document_remove(document=document)
    except Refusal as refusal:
        messages.error(request, refusal.message)
    else:
        if document.source.kind == Source.Kind.FOLDER:
            text = _(
                "Removed %(path)s and its excerpts. The file itself is untouched; "
                "updates of the folder leave it out."
            )
        else:
            text = _("Removed %(path)s and its excerpts.")
        messages.success(request, text % {"path": document.path})
    return redirect("knowledge_files", store_id=store_id)


def _source(request: HttpRequest, source_id: int) -> Source:
    return selectors.source_for_user(signed_in_user(request), source_id, manage=True)


@login_required
@require_POST
def source_action(request: HttpRequest, source_id: int, action: str) -> HttpResponse:
    if action not in ("update", "enable", "disable", "remove"):
        raise Http404
    source = _source(request, source_id)
    try:
        if action == "update":
            services.source_update_now(source=source)
            messages.success(
                request, _("Checking for changes… The review appears here when the scan is done.")
            )
        elif action in ("enable", "disable"):
            services.source_set_enabled(source=source, enabled=action == "enable")
            messages.success(
                request,
                _("Source enabled.") if action == "enable" else _("Source disabled."),
            )
        elif action == "remove":
            services.source_remove(source=source)
            messages.success(
                request, _("Source removed with its excerpts. The original files are untouched.")
            )
    except Refusal as refusal:
        messages.error(request, refusal.message)
    return redirect("knowledge_store", store_id=source.store_id)


def _job(request: HttpRequest, job_id: int, *, manage: bool = False) -> Job:
    return selectors.job_for_user(signed_in_user(request), job_id, manage=manage)


@login_required
@require_POST
def job_action(request: HttpRequest, job_id: int, action: str) -> HttpResponse:
    if action not in ("confirm", "dismiss", "cancel"):
        raise Http404
    job = _job(request, job_id, manage=True)
    try:
        if action == "confirm":
            services.scan_confirm(scan_job=job)
        elif action == "dismiss":
            services.scan_dismiss(scan_job=job)
        elif action == "cancel":
            services.job_cancel(job=job)
    except Refusal as refusal:
        messages.error(request, refusal.message)
    return redirect("knowledge_store", store_id=job.store_id)


@login_required
@require_GET
def job_status(request: HttpRequest, job_id: int) -> HttpResponse:
    job = _job(request, job_id)
    read_only = not selectors.store_managed_by(signed_in_user(request), job.store)
    return render(request, "knowledge/_job_status.html", {"job": job, "read_only": read_only})


@login_required
@require_GET
def test_search(request: HttpRequest, store_id: int) -> HttpResponse:
    store = _store(request, store_id)
    form = SearchForm(request.GET)
    context: dict[str, Any] = {"search_form": form}
    if form.is_valid():
        try:
            result = retrieve(
                [store],
                form.cleaned_data["query"],
                context_window=form.cleaned_data["context_window"],
            )
        except Refusal as refusal:
            context["search_error"] = refusal.message
        else:
            context["result"] = result
    return render(request, "knowledge/store.html", _store_context(request, store, **context))


@login_required
@require_POST
def store_sharing(request: HttpRequest, store_id: int) -> HttpResponse:
    store = _store(request, store_id, manage=True)
    user = signed_in_user(request)
    organization, people = selectors.share_candidates(user, store)
    form = ShareForm(request.POST, organization=organization, people=people)
    if form.is_valid():
        try:
            services.store_share_set(
                store=store,
                actor=user,
                organization_id=organization.pk
                if organization and form.cleaned_data["organization"]
                else None,
                readers=[int(pk) for pk in form.cleaned_data["readers"]],
                managers=[int(pk) for pk in form.cleaned_data["managers"]],
            )
        except Refusal as refusal:
            field = refusal.details.get("field")
            form.add_error("organization" if field == "organization_id" else field, refusal.message)
        else:
            messages.success(request, _("Saved who the collection is shared with."))
            return redirect("knowledge_store", store_id=store.pk)
    context = _store_context(request, store, share_form=form)
    return render(request, "knowledge/store.html", context, status=400)
