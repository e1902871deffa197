"""What one turn sends: the system prompt (instructions only), the host context at its
fixed place (chat.pinning), the trimmed history, a memory reminder and the excerpts,
the current message, the tools, and the Sent along record of it all."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connection

from accounts.models import AIProfile
from addons.context import addon_context_build
from chat.models import Conversation, Message
from chat.pinning import context_place
from chat.questions import BACKGROUND_NOTE, ask_person_schema
from host import model_client as client
from host.core.secret_guard import mask_outbound
from host.core.tokens import estimate_tokens
from host.stored_secrets import stored_secrets
from memory_addon.services.client_context import client_context_build
from memory_addon.services.policy import Policy, policy_for
from memory_addon.services.tools import ToolSchema, tool_schemas
from memory_addon.turns import Turn, run_kind_of

logger = logging.getLogger(__name__)

SYSTEM = (
    "You are a helpful assistant. Answer in Markdown. When an answer relies on an excerpt "
    "from the person's collections, cite its marker such as [R1]."
)
NO_SAVING_NOTE = (
    "You cannot call memory tools in this conversation: use the memory index lines as they "
    "are, and if the person asks you to remember something, say that saving is not available "
    "here."
)
NO_TOOLS_NOTE = (
    "This model has no tool support: it sees the memory block but cannot read topic files "
    "or propose notes."
)
TEMPORARY_NOTE = (
    "This is a temporary chat: nothing from it is saved to memory. If the person asks you "
    "to remember something, say that a temporary chat saves nothing."
)
EXCERPT_CHARS = 1500
MESSAGE_OVERHEAD_TOKENS = 4  # a message's role and separators in the chat template


def room_for_prompt(context_window: int) -> int:
    """Tokens a prompt may take: the model's window less the room kept for its answer."""
    return context_window - min(settings.CHAT_ANSWER_RESERVE_TOKENS, context_window // 4)


def message_fits(context_window: int, text: str) -> bool:
    """Whether a message alone fits the prompt (history and memory are cut to fit; the
    message itself never is)."""
    return estimate_tokens(text) + MESSAGE_OVERHEAD_TOKENS <= room_for_prompt(context_window)


PLAN_HEADING = "The plan I chose for this request (follow it):"


@dataclass
class Prepared:
    turn: Turn
    endpoint: client.Endpoint
    messages: list[dict[str, Any]]
    tools: list[ToolSchema] | None
    sent_along: dict[str, Any] = field(default_factory=dict)
    citations: list[dict[str, Any]] = field(default_factory=list)
    policy: Policy | None = None
    asks: bool = False  # ask_person is offered: someone reads along and can answer (M19)


def _endpoint(conversation: Conversation) -> client.Endpoint:
    profile = conversation.ai_profile
    if profile is None:
        raise client.ModelError("refused", "This conversation has no AI profile.")
    return client.Endpoint(
        base_url=profile.base_url,
        model=profile.model,
        api_key=profile.api_key,
        connect_timeout=float(settings.CHAT_CONNECT_TIMEOUT_SECONDS),
        read_timeout=float(settings.CHAT_READ_TIMEOUT_SECONDS),
        max_retries=settings.CHAT_MAX_RETRIES,
        max_retry_wait=float(settings.CHAT_RETRY_MAX_WAIT_SECONDS),
        max_tool_argument_chars=settings.CHAT_MAX_TOOL_ARGUMENT_CHARS,
        # The answer's own cap ends reading first (the text that arrived is kept).
        max_content_chars=2 * settings.CHAT_MAX_ANSWER_CHARS + 1_048_576,
        # The answer's own deadline ends the helper thread's call too.
        max_seconds=float(settings.CHAT_MAX_ANSWER_SECONDS),
        runs_locally=profile.runs_locally,
        known_secrets=stored_secrets(conversation.owner_id),
    )


def _retrieved(
    conversation: Conversation, turn: Turn, query: str
) -> tuple[str, list[dict[str, Any]], dict[str, Any]]:
    from knowledge.retrieval import retrieve
    from knowledge.selectors import stores_for_turn

    # Checked at every turn: a collection no longer shared with the person is not searched,
    # though the conversation (or the schedule that made it) still names it.
    profile = conversation.ai_profile
    stores = stores_for_turn(
        conversation.owner,
        attached=conversation.stores.all(),
        role=profile.role if profile is not None else "",
    )
    if not stores:
        return "", [], {}
    usable = [s for s in stores if s.autonomous_opt_in or not turn.is_background]
    info: dict[str, Any] = {
        "stores": [s.name for s in usable],
        "skipped_stores": [s.name for s in stores if s not in usable],
    }
    try:
        result = retrieve(
            stores,
            query,
            context_window=turn.context_window,
            autonomous=turn.is_background,
            mask=not turn.model_local,
        )
    except Exception:
        logger.exception("Retrieval failed for conversation %s", conversation.pk)
        info["error"] = "The collections could not be searched for this answer."
        return "", [], info
    citations = [
        {
            "n": number,
            "marker": excerpt.marker,
            "path": excerpt.candidate.path,
            "page": excerpt.candidate.page,
            "source_id": excerpt.candidate.source_id,
            "store_id": excerpt.candidate.store_id,
            "tokens": excerpt.tokens,
            "text": _as_sent(turn, excerpt.candidate.text)[:EXCERPT_CHARS],
        }
        for number, excerpt in enumerate(result.excerpts, start=1)
    ]
    info["semantic"] = result.semantic
    return result.block, citations, info


def _as_sent(turn: Turn, text: str) -> str:
    """A text as the model got it, for Sent along: masked unless the model runs here."""
    return text if turn.model_local else mask_outbound(text)


def _beside[T](work: Callable[[], T]) -> Callable[[], T]:
    """Start `work` on its own thread (and database connection); the returned call waits
    for its result. Inside a transaction (tests) it runs in place: another connection
    would not see the transaction's rows."""
    if connection.in_atomic_block:
        result = work()
        return lambda: result
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = work()
        except BaseException as error:  # handed to the waiting thread as is
            box["error"] = error
        finally:
            connection.close()

    thread = threading.Thread(target=run, name="chat-beside", daemon=True)
    thread.start()

    def wait() -> T:
        thread.join()
        if "error" in box:
            raise box["error"]
        value: T = box["result"]
        return value

    return wait


def _with_ask_person(
    tools: list[ToolSchema] | None, profile: AIProfile, turn: Turn
) -> tuple[list[ToolSchema] | None, bool]:
    """The tools offered with ask_person (M19) added when someone can answer: scheduled
    and background runs never ask, nobody is there."""
    if not profile.supports_tools or turn.is_background:
        return tools, False
    return [*(tools or []), ask_person_schema(strict=profile.strict_tools)], True


def _add_plan(
    turn: Turn, plan: str, messages: list[dict[str, Any]], sent_along: dict[str, Any]
) -> None:
    """The person's chosen plan follows their message, in their own role."""
    if plan:
        messages.append({"role": "user", "content": f"{PLAN_HEADING}\n\n{plan}"})
        sent_along["plan"] = _as_sent(turn, plan)


def _saving_note(turn: Turn, tools: list[ToolSchema] | None) -> list[str]:
    """What the model is told when it cannot save what the person asks it to remember."""
    if turn.temporary:
        return [TEMPORARY_NOTE]
    if not tools:
        return [NO_SAVING_NOTE]
    return []


def prepare(message: Message, *, plan: str = "") -> Prepared:
    """plan: what the person chose on a triage card (M20); it follows their message as
    theirs, never as a system instruction."""
    conversation = message.conversation
    profile = conversation.ai_profile
    if profile is None:
        raise client.ModelError("refused", "This conversation has no AI profile.")
    history = list(
        conversation.messages.filter(pk__lt=message.pk).exclude(
            role=Message.Role.ASSISTANT, state__in=[Message.State.FAILED, Message.State.STREAMING]
        )
    )
    current = history.pop() if history and history[-1].role == Message.Role.USER else None
    if current is None:
        raise client.ModelError("refused", "There is no message to answer.")
    # Every path that stores a message reaches here (a bridge's, a schedule's, a send
    # before the model changed): the model is never sent what it cannot read.
    if not message_fits(profile.context_window, current.content):
        raise client.ModelError(
            "context_too_long",
            f"The message is too long for {profile.name}: it reads at most about "
            f"{room_for_prompt(profile.context_window):,} tokens, and the message alone is "
            f"about {estimate_tokens(current.content):,}. Shorten it, or pick a model with a "
            "larger context window.",
        )
    turn = Turn(
        user=conversation.owner,
        agent=conversation.agent,
        binding=conversation.binding,
        chat_key=conversation.chat_key,
        run_kind=run_kind_of(conversation.run_kind),
        conversation_ref=str(conversation.pk),
        message_ref=str(message.pk),
        reply_ref_trusted=True,  # the host made both references
        memory_off=not conversation.memory_on,
        temporary=conversation.temporary,
        context_window=profile.context_window,
        model_local=profile.runs_locally,
        strict_tools=profile.strict_tools,
        reads_files=profile.supports_tools,
    )
    # Retrieval (an embeddings call and two searches) runs beside the memory block.
    retrieval = _beside(lambda: _retrieved(conversation, turn, current.content))
    # Read once, with the person's add-on state: the context, add-ons and pushes use it.
    policy = policy_for(conversation.owner, with_addons=True)
    # The memory block, then the approved reference files (M14) in their own wrapper.
    built = client_context_build(turn, policy)
    context, references = built.memory, built.references
    retrieved, citations, retrieval_info = retrieval()
    tools = (
        tool_schemas(strict=profile.strict_tools, read_only=turn.temporary)
        if profile.supports_tools and not context.reason_off
        else None
    )
    offered, asks = _with_ask_person(tools, profile, turn)
    # The system prompt is instructions only, the same every turn of the conversation
    # (B9): what changes (skills, memory, files, excerpts) goes in messages of its own.
    system_parts = [SYSTEM, *([BACKGROUND_NOTE] if turn.is_background else [])]
    system_parts += _saving_note(turn, tools)
    if conversation.agent and conversation.agent.instructions:
        system_parts.append(conversation.agent.instructions)
    system = "\n\n".join(system_parts)
    addons = addon_context_build(
        user=conversation.owner,
        context_window=profile.context_window,
        tools={tool["function"]["name"] for tool in tools or []},
        memory_readable=not context.reason_off,
        preloaded=policy.addons,
        mask=not turn.model_local,
    )
    # Order (docs/addons.md): skills, the memory block, reference files, add-on context
    # files. Skills change when a rule is learned: pinned with the memory, they leave the
    # system prompt alone and their change arrives as a reminder like a note's.
    host_context = "\n\n".join(
        block
        for block in (addons.skills_block, context.block, references.block, addons.files_block)
        if block
    )
    placed = context_place(
        conversation,
        host_context,
        memory_off=bool(context.reason_off),
        local=turn.model_local,
    )
    # History is trimmed oldest first; the host context, the reminder, the excerpts and
    # the current message never are.
    budget = (
        room_for_prompt(profile.context_window)
        - sum(
            estimate_tokens(text) + MESSAGE_OVERHEAD_TOKENS
            for text in (system, placed.message, placed.reminder, retrieved, current.content, plan)
            if text
        )
        - (estimate_tokens(json.dumps(offered)) if offered else 0)
    )
    kept: list[Message] = []
    for old in reversed(history):
        cost = estimate_tokens(old.content) + MESSAGE_OVERHEAD_TOKENS
        if cost > budget:
            break
        budget -= cost
        kept.append(old)
    kept.reverse()
    trimmed = len(history) - len(kept)
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    if placed.message:
        messages.append({"role": "user", "content": placed.message})
    messages += [{"role": m.role, "content": m.content} for m in kept if m.content]
    # After the history, so the cached prefix (system, host context, history) holds.
    messages += [{"role": "user", "content": t} for t in (placed.reminder, retrieved) if t]
    messages.append({"role": "user", "content": current.content})
    sent_along = {
        "memory": context.sent_along().stored(mask=not turn.model_local),
        "pinned": placed.sent_along(),
        "excerpts": [
            {k: c[k] for k in ("marker", "path", "page", "tokens", "store_id")} for c in citations
        ],
        "reference_files": references.sent_along(),
        "addons": addons.sent_along(),
        "retrieval": retrieval_info,
        "history": {"sent": len(kept), "trimmed": trimmed},
        "tools": bool(tools),
        "tools_note": "" if profile.supports_tools else NO_TOOLS_NOTE,
    }
    _add_plan(turn, plan, messages, sent_along)
    return Prepared(
        turn, _endpoint(conversation), messages, offered, sent_along, citations, policy, asks
    )
