"""Project banks and Anthropic's memory tool on them."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

from django.http import Http404, HttpRequest
from ninja import Router, Schema
from pydantic import Field, JsonValue, StringConstraints

from accounts.auth import signed_in_user, token_scope
from accounts.models import User
from accounts.token_access import command_refusal
from host.errors import NotAllowed
from memory_addon.api.notes import file_content_out
from memory_addon.api.responses import ERRORS
from memory_addon.models import MemoryFile, MemoryScope
from memory_addon.schemas import FileContentOut, FileOut
from memory_addon.services.context import bank_status_view
from memory_addon.services.memory_tool import COMMAND_SCHEMAS, memory_tool_execute
from memory_addon.services.scopes import bank_find, bank_set_enabled
from memory_addon.turns import Turn

# Mounted on the package's router, whose "memory" tag its operations take.
router = Router()


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
    return file_content_out(scope, path)


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
