"""A turn's memory block, the tool schemas and one tool call."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from accounts.auth import signed_in_user, token_reads_own_rule_files, token_scope
from accounts.models import User
from accounts.selectors import agent_for_user, binding_for_user
from accounts.token_access import tool_refusal
from addons.context import addon_context_build
from host.errors import NotAllowed
from memory_addon.api.responses import ERRORS
from memory_addon.schemas import (
    AddonsSentOut,
    BlockDeltaOut,
    ReferenceFilesSentOut,
    SentAlongOut,
    ToolCallIn,
    ToolCallOut,
    TurnContextIn,
    TurnContextOut,
    TurnIn,
)
from memory_addon.services.client_context import client_context_build
from memory_addon.services.known_blocks import block_delivery
from memory_addon.services.policy import policy_for
from memory_addon.services.tools import ToolSchema, tool_call_execute, tool_schemas
from memory_addon.turns import Turn, chat_key_of

# Mounted on the package's router, whose "memory" tag its operations take.
router = Router()


def turn_from(user: User, data: TurnIn, *, client_reads_rule_files: bool = False) -> Turn:
    agent = agent_for_user(user, data.agent_id) if data.agent_id else None
    binding = binding_for_user(user, data.binding_id) if data.binding_id else None
    return Turn(
        user=user,
        agent=agent,
        binding=binding,
        chat_key=chat_key_of(data.chat_id, data.thread_id) if binding else "",
        run_kind=data.run_kind,
        conversation_ref=data.conversation_ref,
        message_ref=data.message_ref,
        memory_off=data.memory_off,
        context_window=data.context_window,
        project_key=data.project_key,
        strict_tools=data.strict_tools,
        client_reads_rule_files=client_reads_rule_files,
    )


@router.post(
    "/turn-context",
    response={200: TurnContextOut, **ERRORS},
    summary="Build the memory block for a turn",
    description="With known_hash: unchanged, or a delta against a block the host still "
    "knows, instead of the whole block (docs/cache-friendly-delivery.md).",
)
def turn_context(request: HttpRequest, payload: TurnContextIn) -> TurnContextOut:
    turn = turn_from(
        signed_in_user(request),
        payload,
        client_reads_rule_files=token_reads_own_rule_files(request),
    )
    # One query for the policy and the add-on state, one for the scopes' indexes, one
    # for the reference files when the person has some to send and the token's client
    # does not read its own.
    policy = policy_for(turn.user, with_addons=True)
    built = client_context_build(turn, policy)
    context = built.memory
    # A caller of this endpoint offers the memory tools unless memory is off for the turn.
    offered = set() if context.reason_off else {t["function"]["name"] for t in tool_schemas()}
    addons = addon_context_build(
        user=turn.user,
        context_window=turn.context_window,
        tools=offered,
        memory_readable=not context.reason_off,
        preloaded=policy.addons,
    )
    delivery = block_delivery(
        user_id=turn.user.pk,
        block=context.block,
        sha256=context.block_hash,
        known_hash=payload.known_hash,
    )
    delta = delivery.delta
    return TurnContextOut(
        block=delivery.block,
        hash=context.block_hash,
        unchanged=delivery.unchanged,
        delta=BlockDeltaOut(base_hash=payload.known_hash, added=delta.added, removed=delta.removed)
        if delta
        else None,
        sent_along=SentAlongOut.model_validate(context.sent_along()),
        memory_off_reason=context.reason_off,
        addons_block="\n\n".join(b for b in (addons.skills_block, addons.files_block) if b),
        addons=AddonsSentOut.model_validate(addons.sent_along()),
        reference_block=built.references.block,
        reference_files=ReferenceFilesSentOut.model_validate(built.references.sent_along()),
    )


@router.get(
    "/tools",
    summary="Tool schemas in OpenAI function-calling format",
    description="bank=true: the project-bank tools instead of the chat tools. strict=true: "
    "the strict-mode form (every field required, optional ones nullable, strict: true); "
    "send strict_tools: true in the turn of calls made with it.",
)
def tools(request: HttpRequest, bank: bool = False, strict: bool = False) -> list[ToolSchema]:
    signed_in_user(request)
    return tool_schemas(bank=bank, strict=strict)


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
