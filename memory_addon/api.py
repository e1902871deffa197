"""The memory add-on's JSON API: files, turn context, tools, proposals, history, settings."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

from django.http import Http404, HttpRequest
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404
from ninja import File, Query, Router, Schema, Status, UploadedFile
from pydantic import Field, JsonValue, StringConstraints

from accounts.auth import signed_in_user, token_scope
from accounts.models import User
from accounts.selectors import agent_for_user, binding_for_user
from accounts.token_access import command_refusal, tool_refusal
from addons.context import addon_context_build
from host import filestore
from host.core.secret_guard import find_secret
from host.errors import MemoryRefusal, NotAllowed
from host.schemas import Moment
from memory_addon.models import ChangeSet, MemoryFile, MemoryScope, Proposal
from memory_addon.schemas import (
    AddonsSentOut,
    ChangeDetailOut,
    ChangeSummaryOut,
    ConfirmIn,
    ErrorOut,
    FileContentOut,
    FileOut,
    FileWriteIn,
    NoteEditIn,
    NoteIn,
    NotesOut,
    ProposalOut,
    ScopeOut,
    SecretFlagOut,
    SentAlongOut,
    ToolCallIn,
    ToolCallOut,
    TurnContextOut,
    TurnIn,
    VersionOut,
)
from memory_addon.selectors import (
    ChangeDetail,
    ChangeSummary,
    ProposalRow,
    ScopeNotes,
    VersionRow,
    change_detail,
    change_set_for_user,
    change_sets_for_user,
    change_summary,
    pending_proposals,
    proposal_for_user,
    proposals_with_diffs,
    scope_for_user,
    scope_notes,
    scopes_for_user,
    version_for_user,
    versions_for_scope,
)
from memory_addon.services.backup import MAX_ARCHIVE_BYTES, memory_export, memory_restore
from memory_addon.services.changes import (
    change_set_undo,
    clean_path,
    file_delete,
    file_write,
    version_restore,
)
from memory_addon.services.context import (
    bank_status_view,
    turn_context_build,
)
from memory_addon.services.memory_tool import COMMAND_SCHEMAS, memory_tool_execute
from memory_addon.services.notes import note_add, note_edit
from memory_addon.services.policy import policy_for
from memory_addon.services.proposals import proposal_confirm, proposal_reject
from memory_addon.services.scopes import (
    bank_find,
    bank_set_enabled,
    scope_folder,
)
from memory_addon.services.tools import ToolSchema, tool_call_execute, tool_schemas
from memory_addon.turns import Turn

router = Router(tags=["memory"])
chats_router = Router(tags=["memory"])

ERRORS = {400: ErrorOut, 403: ErrorOut, 404: ErrorOut, 409: ErrorOut}


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


def turn_from(user: User, data: TurnIn) -> Turn:
    agent = agent_for_user(user, data.agent_id) if data.agent_id else None
    binding = binding_for_user(user, data.binding_id) if data.binding_id else None
    return Turn(
        user=user,
        agent=agent,
        binding=binding,
        run_kind=data.run_kind,
        conversation_ref=data.conversation_ref,
        message_ref=data.message_ref,
        memory_off=data.memory_off,
        context_window=data.context_window,
        project_key=data.project_key,
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
    return _file_content(_scope(request, scope_id), path)


def _file_content(scope: MemoryScope, path: str) -> FileContentOut:
    row = get_object_or_404(MemoryFile, scope=scope, path=clean_path(path))
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


@router.post(
    "/turn-context",
    response={200: TurnContextOut, **ERRORS},
    summary="Build the memory block for a turn",
)
def turn_context(request: HttpRequest, payload: TurnIn) -> TurnContextOut:
    turn = turn_from(signed_in_user(request), payload)
    # One query for the policy and the add-on state, one for the scopes' indexes.
    policy = policy_for(turn.user, with_addons=True)
    context = turn_context_build(turn, policy)
    # A caller of this endpoint offers the memory tools unless memory is off for the turn.
    offered = set() if context.reason_off else {t["function"]["name"] for t in tool_schemas()}
    addons = addon_context_build(
        user=turn.user,
        context_window=turn.context_window,
        tools=offered,
        memory_readable=not context.reason_off,
        preloaded=policy.addons,
    )
    return TurnContextOut(
        block=context.block,
        hash=context.block_hash,
        sent_along=SentAlongOut.model_validate(context.sent_along()),
        memory_off_reason=context.reason_off,
        addons_block="\n\n".join(b for b in (addons.skills_block, addons.files_block) if b),
        addons=AddonsSentOut.model_validate(addons.sent_along()),
    )


@router.get("/tools", summary="Tool schemas in OpenAI function-calling format")
def tools(request: HttpRequest, bank: bool = False) -> list[ToolSchema]:
    signed_in_user(request)
    return tool_schemas(bank=bank)


@router.post(
    "/tools/call", response={200: ToolCallOut, **ERRORS}, summary="Execute one tool call for a turn"
)
def tool_call(request: HttpRequest, payload: ToolCallIn) -> ToolCallOut:
    refusal = tool_refusal(token_scope(request), payload.name, bank=bool(payload.turn.project_key))
    if refusal:
        raise NotAllowed(refusal)
    turn = turn_from(signed_in_user(request), payload.turn)
    result = tool_call_execute(turn=turn, name=payload.name, arguments=payload.arguments)
    return ToolCallOut(ok=result.ok, output=result.output)


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
    summary="Confirm a proposal, optionally with edited text",
)
def proposal_confirm_endpoint(
    request: HttpRequest, proposal_id: int, payload: ConfirmIn | None = None
) -> ChangeSummary:
    proposal = _proposal(request, proposal_id)
    change_set = proposal_confirm(
        user=signed_in_user(request),
        proposal=proposal,
        edited_text=payload.text if payload else None,
    )
    return change_summary(change_set)


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


__all__ = ["chats_router", "router"]


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
        raise MemoryRefusal("The archive is too large to be a memory export.")
    report = memory_restore(user=signed_in_user(request), archive_bytes=archive.read())
    return RestoreOut(
        added=report.added, kept=report.kept, refused=[list(r) for r in report.refused]
    )


class BankIn(Schema):
    project_key: str = Field(min_length=1, max_length=128)
    project_name: str = Field("", max_length=200)


class BankStatusOut(Schema):
    project_key: str
    folder: str
    enabled: bool
    files: int
    bytes: int
    startup_context: str
    memory_off_reason: str = ""


def _bank_status(user: User, project_key: str, scope: MemoryScope | None) -> BankStatusOut:
    return BankStatusOut(**asdict(bank_status_view(user, project_key, scope)))


ProjectKey = Annotated[str, StringConstraints(min_length=1, max_length=128)]


@router.get(
    "/banks/status",
    response={200: BankStatusOut, **ERRORS},
    summary="A project bank: state and startup context",
)
def bank_status(request: HttpRequest, project_key: ProjectKey) -> BankStatusOut:
    user = signed_in_user(request)
    return _bank_status(user, project_key, bank_find(user, project_key))


@router.post(
    "/banks/enabled",
    response={200: BankStatusOut, **ERRORS},
    summary="Turn a project bank on or off (files are kept)",
)
def bank_enabled(request: HttpRequest, payload: BankIn, enabled: bool) -> BankStatusOut:
    user = signed_in_user(request)
    scope = bank_set_enabled(
        user=user,
        project_key=payload.project_key,
        project_name=payload.project_name,
        enabled=enabled,
    )
    return _bank_status(user, payload.project_key, scope)


@router.get(
    "/banks/files", response={200: list[FileOut], **ERRORS}, summary="Files of a project bank"
)
def bank_files(request: HttpRequest, project_key: ProjectKey) -> list[MemoryFile]:
    scope = bank_find(signed_in_user(request), project_key)
    return list(MemoryFile.objects.filter(scope=scope)) if scope else []


@router.get(
    "/banks/file", response={200: FileContentOut, **ERRORS}, summary="One file of a project bank"
)
def bank_file(
    request: HttpRequest, project_key: ProjectKey, path: str = "MEMORY.md"
) -> FileContentOut:
    scope = bank_find(signed_in_user(request), project_key)
    if scope is None:
        raise Http404("This project has no memory bank yet.")
    return _file_content(scope, path)


class MemoryToolIn(Schema):
    """One call of Anthropic's memory tool, forwarded as the model sent it."""

    input: dict[str, JsonValue] = Field(
        description="The tool_use block's input as the model sent it.",
        examples=[{"command": "create", "path": "/memories/build.md", "file_text": "make test\n"}],
    )
    project_key: str = Field(
        "", max_length=128, description="A project bank; empty means your own notes."
    )
    conversation_ref: str = Field("", max_length=200)
    message_ref: str = Field("", max_length=200)


class MemoryToolOut(Schema):
    ok: bool
    output: str = Field(description="Send this back to the model as the tool_result content.")
    change_id: int | None = Field(None, description="The change set, for undo.")
    proposal_id: int | None = Field(None, description="The proposal waiting for the person.")


@router.get(
    "/memory-tool/commands",
    summary="The JSON schema of each memory-tool command; every call is checked against it",
)
def memory_tool_commands(request: HttpRequest) -> dict[str, dict[str, JsonValue]]:
    signed_in_user(request)
    return COMMAND_SCHEMAS


@router.post(
    "/memory-tool",
    response={200: MemoryToolOut, **ERRORS},
    summary="Execute one command of Anthropic's memory tool (view, create, str_replace, "
    "insert, delete, rename) on /memories paths",
    description=(
        "With project_key the commands act on that project bank, else on your own notes. "
        "The same path rules, limits, secret guard, save mode and change sets as every "
        "other write; a refusal is ok=false with the reason and writes nothing. "
        "See docs/memory-tool.md for a client loop."
    ),
)
def memory_tool(request: HttpRequest, payload: MemoryToolIn) -> MemoryToolOut:
    refusal = command_refusal(
        token_scope(request), str(payload.input.get("command")), bank=bool(payload.project_key)
    )
    if refusal:
        raise NotAllowed(refusal)
    turn = Turn(
        user=signed_in_user(request),
        project_key=payload.project_key,
        conversation_ref=payload.conversation_ref,
        message_ref=payload.message_ref,
    )
    result = memory_tool_execute(turn=turn, command=payload.input)
    return MemoryToolOut(
        ok=result.ok,
        output=result.output,
        change_id=result.change_id,
        proposal_id=result.proposal_id,
    )
