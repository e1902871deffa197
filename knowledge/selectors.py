"""Reads of the knowledge app that pages and the API share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from django.contrib.auth.models import AnonymousUser
from django.db.models import Count, Q, QuerySet
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext

from accounts.models import Membership, Organization, User
from knowledge.core.scanning import ProblemRow, ReviewRow
from knowledge.errors import StoreReadOnly
from knowledge.models import Document, Job, Source, Store, StoreShare

FileStatus = Literal["indexed", "waiting", "skipped"]
Access = Literal["owner", "manage", "read"]


@dataclass(frozen=True)
class FileRow:
    """One file of a collection as people see it: indexed, waiting, or skipped with a reason."""

    source: Source
    path: str
    status: FileStatus
    reason: str = ""
    size: int | None = None
    format: str = ""
    chunks: int = 0
    document_id: int | None = None


@dataclass(frozen=True)
class StoreFiles:
    rows: list[FileRow]

    def count(self, status: FileStatus) -> int:
        return sum(1 for row in self.rows if row.status == status)

    @property
    def indexed(self) -> int:
        return self.count("indexed")

    @property
    def waiting(self) -> int:
        return self.count("waiting")

    @property
    def skipped(self) -> int:
        return self.count("skipped")


def _waiting_jobs(store: Store) -> dict[int, Job]:
    """Per source, the scan whose files are not indexed yet: waiting for review or queued
    for (or in) an index job."""
    waiting: dict[int, Job] = {}
    for job in Job.objects.filter(store=store, kind=Job.Kind.SCAN, state=Job.State.REVIEW):
        waiting.setdefault(job.source_id, job)
    for job in Job.objects.filter(
        store=store, kind=Job.Kind.INDEX, state__in=Job.PENDING_STATES
    ).select_related("scan_job"):
        if job.scan_job is not None:
            waiting.setdefault(job.source_id, job.scan_job)
    return waiting


def _last_index_jobs(store: Store) -> dict[int, Job]:
    """Per source, its latest finished index job: its skipped files are the source's problems."""
    latest: dict[int, Job] = {}
    for job in (
        Job.objects.filter(store=store, kind=Job.Kind.INDEX, state=Job.State.SUCCEEDED)
        .select_related("scan_job")
        .order_by("-finished_at", "-id")
    ):
        latest.setdefault(job.source_id, job)
    return latest


def store_files(store: Store, *, source_id: int | None = None) -> StoreFiles:
    """Every file of the collection's sources (or of one source), grouped by source."""
    sources = {source.pk: source for source in store.sources.all()}
    if source_id is not None:
        sources = {pk: s for pk, s in sources.items() if pk == source_id}
    documents = (
        Document.objects.filter(source_id__in=sources)
        .annotate(chunk_total=Count("chunks"))
        .order_by("path")
    )
    waiting_jobs = _waiting_jobs(store)
    index_jobs = _last_index_jobs(store)
    by_source: dict[int, list[FileRow]] = {pk: [] for pk in sources}
    indexed: dict[int, set[str]] = {pk: set() for pk in sources}
    for document in documents:
        indexed[document.source_id].add(document.path)
        by_source[document.source_id].append(
            FileRow(
                source=sources[document.source_id],
                path=document.path,
                status="indexed",
                size=document.size,
                format=document.format,
                chunks=int(getattr(document, "chunk_total", 0)),
                document_id=document.pk,
            )
        )
    for pk, source in sources.items():
        scan = waiting_jobs.get(pk)
        for row in scan.review if scan else []:
            if row.get("status") in ("new", "changed") and row["path"] not in indexed[pk]:
                by_source[pk].append(
                    FileRow(
                        source=source,
                        path=row["path"],
                        status="waiting",
                        size=row.get("size"),
                        format=row.get("format") or "",
                    )
                )
        job = index_jobs.get(pk)
        if job is None:
            continue
        skipped: list[ReviewRow] = [
            row
            for row in (job.scan_job.review if job.scan_job else [])
            if row["status"] == "skipped"
        ]
        problems: list[ProblemRow] = job.problems
        skipped += [
            {"path": problem["path"], "status": "skipped", "reason": problem.get("reason", "")}
            for problem in problems
        ]
        for row in skipped:
            by_source[pk].append(
                FileRow(
                    source=source,
                    path=row["path"],
                    status="skipped",
                    reason=row.get("reason") or "",
                    size=row.get("size"),
                    format=row.get("format") or "",
                )
            )
    order = {"skipped": 0, "waiting": 1, "indexed": 2}
    rows = [
        row
        for pk in sorted(sources, key=lambda pk: sources[pk].label.lower())
        for row in sorted(by_source[pk], key=lambda r: (order[r.status], r.path.lower()))
    ]
    return StoreFiles(rows=rows)


# The one access rule for collections, for pages, htmx forms, the API, MCP, chat turns and
# scheduled runs alike. A collection you may not read is a 404, never a hint that it exists;
# one you may read but not manage is a 403 on the manage actions (StoreReadOnly).


def _organization_ids(user: User, *, admin: bool = False) -> QuerySet[Membership, int]:
    memberships = Membership.objects.filter(user=user)
    if admin:
        memberships = memberships.filter(role=Membership.Role.ADMIN)
    return memberships.values_list("organization_id", flat=True)


def _shares_in_organization(user: User) -> QuerySet[StoreShare]:
    # A share counts only while the owner and the person are in one organization: leaving
    # it ends what was shared there, for a named person as for the organization.
    return StoreShare.objects.filter(
        store__owner__membership__organization_id__in=_organization_ids(user)
    )


def _shares_reaching(user: User) -> QuerySet[StoreShare]:
    return _shares_in_organization(user).filter(
        Q(user=user) | Q(organization_id__in=_organization_ids(user))
    )


def _shares_managing(user: User) -> QuerySet[StoreShare]:
    return _shares_in_organization(user).filter(
        Q(user=user, access=StoreShare.Access.MANAGE)
        | Q(organization_id__in=_organization_ids(user, admin=True))
    )


def stores_readable_by(user: User | AnonymousUser) -> QuerySet[Store]:
    """Your own collections and those shared with you or your organization."""
    if not user.is_authenticated:
        return Store.objects.none()
    return Store.objects.filter(Q(owner=user) | Q(pk__in=_shares_reaching(user).values("store_id")))


def shared_store_ids_managed_by(user: User) -> set[int]:
    return set(_shares_managing(user).values_list("store_id", flat=True))


def stores_for_turn(user: User, *, attached: QuerySet[Store], role: str) -> list[Store]:
    """What one chat turn searches, of the collections the person may read now: those the
    conversation names, and those assigned to the role (text, coding) of its AI profile."""
    wanted = Q(pk__in=attached.values("pk"))
    if role == "text":
        wanted |= Q(role_text=True)
    elif role == "coding":
        wanted |= Q(role_coding=True)
    return list(stores_readable_by(user).filter(wanted).select_related("ai_profile"))


@dataclass(frozen=True)
class StoreAudience:
    """Who may see a collection's page now: those who may manage it, and the readers only."""

    managers: frozenset[int]
    readers: frozenset[int]


def store_audience(store: Store) -> StoreAudience:
    """The people the access rule above lets read `store`, seen from the store's side:
    the owner, and its shares' people who are in one organization with the owner."""
    owner_org_people = Membership.objects.filter(
        organization__membership__user_id=store.owner_id
    ).values("user_id")
    shares = StoreShare.objects.filter(store=store)
    managing = Q(
        pk__in=shares.filter(user__isnull=False, access=StoreShare.Access.MANAGE).values("user_id")
    ) | Q(
        pk__in=Membership.objects.filter(
            organization__in=shares.values("organization_id"), role=Membership.Role.ADMIN
        ).values("user_id")
    )
    reading = Q(pk__in=shares.filter(user__isnull=False).values("user_id")) | Q(
        pk__in=Membership.objects.filter(organization__in=shares.values("organization_id")).values(
            "user_id"
        )
    )
    people = User.objects.filter(pk__in=owner_org_people)
    managers = {store.owner_id, *people.filter(managing).values_list("pk", flat=True)}
    readers = set(people.filter(reading).values_list("pk", flat=True)) - managers
    return StoreAudience(managers=frozenset(managers), readers=frozenset(readers))


def store_managed_by(user: User, store: Store) -> bool:
    if store.owner_id == user.pk:
        return True
    return _shares_managing(user).filter(store_id=store.pk).exists()


def store_access(user: User, store: Store) -> Access:
    if store.owner_id == user.pk:
        return "owner"
    return "manage" if store_managed_by(user, store) else "read"


def _check_manage(user: User, store: Store, manage: bool) -> None:
    if manage and not store_managed_by(user, store):
        raise StoreReadOnly(
            gettext(
                "You may read the collection “%(name)s” but not change it: "
                "ask its owner for the right to manage it."
            )
            % {"name": store.name}
        )


def store_for_user(user: User, store_id: int, *, manage: bool = False) -> Store:
    store = get_object_or_404(stores_readable_by(user).select_related("owner"), pk=store_id)
    _check_manage(user, store, manage)
    return store


def source_for_user(user: User, source_id: int, *, manage: bool = False) -> Source:
    source = get_object_or_404(
        Source.objects.select_related("store"),
        pk=source_id,
        store__in=stores_readable_by(user),
    )
    _check_manage(user, source.store, manage)
    return source


def job_for_user(user: User, job_id: int, *, manage: bool = False) -> Job:
    job = get_object_or_404(
        Job.objects.select_related("store", "source"),
        pk=job_id,
        store__in=stores_readable_by(user),
    )
    _check_manage(user, job.store, manage)
    return job


def document_for_user(user: User, document_id: int, *, manage: bool = False) -> Document:
    document = get_object_or_404(
        Document.objects.select_related("source__store"),
        pk=document_id,
        source__store__in=stores_readable_by(user),
    )
    _check_manage(user, document.source.store, manage)
    return document


@dataclass(frozen=True)
class Sharing:
    """Who a collection is shared with, besides its owner."""

    organization: Organization | None
    readers: list[User]
    managers: list[User]


def store_sharing(store: Store) -> Sharing:
    shares = list(store.shares.select_related("user", "organization").order_by("id"))
    organization = next((s.organization for s in shares if s.organization is not None), None)
    people = [s for s in shares if s.user is not None]
    return Sharing(
        organization=organization,
        readers=[s.user for s in people if s.user and s.access == StoreShare.Access.READ],
        managers=[s.user for s in people if s.user and s.access == StoreShare.Access.MANAGE],
    )


def share_candidates(user: User, store: Store) -> tuple[Organization | None, list[User]]:
    """The organization a person may share the collection with, and the people in it they
    may name: everyone there but the owner (a manager sees themselves, so saving the form
    keeps their own share)."""
    organization = Organization.objects.filter(membership__user=user).first()
    if organization is None:
        return None, []
    people = list(
        User.objects.filter(membership__organization=organization)
        .exclude(pk=store.owner_id)
        .order_by("username")
    )
    return organization, people
