"""Proposals, change sets and the audit of automatic changes."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Query, Router, Schema

from accounts.auth import signed_in_user
from host.schemas import Moment
from memory_addon.api.responses import ERRORS
from memory_addon.models import ChangeSet, Proposal
from memory_addon.schemas import (
    ChangeDetailOut,
    ChangeSummaryOut,
    ConfirmIn,
    ErrorOut,
    ImportIn,
    ImportOut,
    ProposalOut,
)
from memory_addon.selectors import (
    ChangeDetail,
    ChangeSummary,
    ProposalRow,
    change_detail,
    change_set_for_user,
    change_sets_for_user,
    change_summary,
    pending_proposals,
    proposal_for_user,
    proposals_with_diffs,
)
from memory_addon.services.changes import change_set_undo
from memory_addon.services.proposals import proposal_confirm, proposal_reject
from memory_addon.services.proposals.imports import memory_import

# Mounted on the package's router, whose "memory" tag its operations take.
router = Router()
# Mounted at /chats (config/api.py).
chats_router = Router(tags=["memory"])


class ProposalFilter(Schema):
    state: Proposal.State | None = Proposal.State.PENDING


@router.get("/proposals", response=list[ProposalOut], summary="Proposals, pending ones by default")
def proposal_list(request: HttpRequest, filters: Query[ProposalFilter]) -> list[ProposalRow]:
    user = signed_in_user(request)
    if filters.state == Proposal.State.PENDING:
        proposals = pending_proposals(user)
    else:
        queryset = Proposal.objects.filter(user=user).select_related(
            "scope__agent", "scope__binding"
        )
        if filters.state:
            queryset = queryset.filter(state=filters.state)
        proposals = list(queryset[:200])
    return proposals_with_diffs(proposals)


def _proposal(request: HttpRequest, proposal_id: int) -> Proposal:
    return proposal_for_user(signed_in_user(request), proposal_id)


@router.post(
    "/proposals/{proposal_id}/confirm",
    response={200: ChangeSummaryOut, **ERRORS},
    summary="Confirm a proposal, optionally with edited text or a conflict decision",
)
def proposal_confirm_endpoint(
    request: HttpRequest, proposal_id: int, payload: ConfirmIn | None = None
) -> ChangeSummary:
    proposal = _proposal(request, proposal_id)
    change_set = proposal_confirm(
        user=signed_in_user(request),
        proposal=proposal,
        edited_text=payload.text if payload else None,
        decision=payload.decision if payload else None,
    )
    return change_summary(change_set)


@router.post(
    "/imports",
    response={200: ImportOut, **ERRORS},
    summary="Import memory exported from another tool as proposals",
    description="Every item becomes a pending proposal with its provenance; nothing is saved "
    "until the person confirms it, in any save mode. Duplicates and conflicts with saved "
    "notes are marked on each proposal.",
)
def memory_import_endpoint(request: HttpRequest, payload: ImportIn) -> ImportOut:
    result = memory_import(
        user=signed_in_user(request),
        kind=payload.kind,
        text=payload.text,
        file_name=payload.file_name,
    )
    return ImportOut(
        proposals=[
            ProposalOut.model_validate(row) for row in proposals_with_diffs(result.proposals)
        ],
        duplicates=result.duplicates,
        conflicts=result.conflicts,
        repeated=result.repeated,
    )


@router.post(
    "/proposals/{proposal_id}/reject",
    response={200: ProposalOut, **ERRORS},
    summary="Reject a proposal",
)
def proposal_reject_endpoint(request: HttpRequest, proposal_id: int) -> ProposalRow:
    proposal = proposal_reject(
        user=signed_in_user(request), proposal=_proposal(request, proposal_id)
    )
    return proposals_with_diffs([proposal])[0]


@router.get(
    "/change-sets", response=list[ChangeSummaryOut], summary="Your change sets, newest first"
)
def change_set_list(request: HttpRequest) -> list[ChangeSummary]:
    return [change_summary(cs) for cs in change_sets_for_user(signed_in_user(request))[:200]]


@router.get(
    "/change-sets/{change_set_id}",
    response={200: ChangeDetailOut, 404: ErrorOut},
    summary="One change set with its diffs",
)
def change_set_detail(request: HttpRequest, change_set_id: int) -> ChangeDetail:
    change_set = change_set_for_user(signed_in_user(request), change_set_id)
    return change_detail(change_set)


@router.post(
    "/change-sets/{change_set_id}/undo",
    response={200: ChangeSummaryOut, **ERRORS},
    summary="Undo a change set",
)
def change_set_undo_endpoint(request: HttpRequest, change_set_id: int) -> ChangeSummary:
    user = signed_in_user(request)
    change_set = change_set_for_user(user, change_set_id)
    return change_summary(change_set_undo(user=user, change_set=change_set))


class AuditFilter(Schema):
    since: Moment | None = None
    until: Moment | None = None
    source: ChangeSet.Source | None = None


@chats_router.get(
    "/changes/audit",
    response=list[ChangeSummaryOut],
    summary="Audit of automatic memory changes (filter by date and source)",
)
def audit(request: HttpRequest, filters: Query[AuditFilter]) -> list[ChangeSummary]:
    queryset = change_sets_for_user(signed_in_user(request)).filter(
        origin=ChangeSet.Origin.AUTOMATIC
    )
    if filters.since:
        queryset = queryset.filter(created_at__gte=filters.since)
    if filters.until:
        queryset = queryset.filter(created_at__lt=filters.until)
    if filters.source:
        queryset = queryset.filter(source=filters.source)
    return [change_summary(cs) for cs in queryset[:500]]
