"""One turn: context and retrieval → the model with the memory tools → tool calls → answer.

Runs in a chat worker thread. Rules that shape it:
- No database connection is held while the model server is called: the connection goes
  back to the pool before every outside call and is taken again only for short writes.
- Every path ends in a stored, honest state (complete, stopped, failed); the partial
  text is written every CHAT_PERSIST_INTERVAL_MS so a reload shows what arrived.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from addons.context import addon_context_build
from chat import events
from chat.models import Conversation, Message
from chat.selectors import message_html
from chat.services import stop_requested
from chat.signals import answer_completed
from host import model_client as client
from host.core.secret_guard import mask_outbound
from host.core.storable import storable, storable_value
from host.core.tokens import estimate_tokens
from host.outbound import OutboundRefused, check_outbound_url, release_db_connection
from host.stored_secrets import stored_secrets
from memory_addon.services.context import turn_context_build
from memory_addon.services.policy import Policy, policy_for
from memory_addon.services.references import reference_block_build
from memory_addon.services.tools import ToolResult, ToolSchema, tool_call_execute, tool_schemas
from memory_addon.turns import Turn, run_kind_of

logger = logging.getLogger(__name__)

SYSTEM = (
    "You are a helpful assistant. Answer in Markdown. When an answer relies on an excerpt "
    "from the person's collections, cite its marker such as [R1]."
)
NO_TOOLS_NOTE = (
    "This model has no tool support: it sees the memory block but cannot read topic files "
    "or propose notes."
)
EXCERPT_CHARS = 1500


def _storable_arguments(arguments: str) -> str:
    """Tool arguments cleaned before they run: JSON escapes such as \\u0000 are cleaned too."""
    arguments = storable(arguments)
    try:
        parsed = json.loads(arguments)
    except (ValueError, RecursionError):
        return arguments  # the tool answers the model that this is not valid JSON
    cleaned = storable_value(parsed)
    return arguments if cleaned == parsed else json.dumps(cleaned, ensure_ascii=False)


def message_finish(
    *,
    message: Message,
    state: str,
    content: str | None = None,
    error: str = "",
    usage: dict[str, int] | None = None,
    only_if_streaming: bool = False,
    first_token_at: datetime | None = None,
    sent_along: dict[str, Any] | None = None,
    citations: list[dict[str, Any]] | None = None,
    policy: Policy | None = None,
) -> bool:
    """Store the end state of an answer and show it on every open page."""
    now = timezone.now()
    updates: dict[str, Any] = {
        "state": state,
        "error": storable(error[:2000]),
        "finished_at": now,
    }
    if content is not None:
        updates["content"] = storable(content)
    if usage is not None:
        updates["usage"] = usage
    if first_token_at is not None:
        updates["first_token_at"] = first_token_at
    if sent_along is not None:
        updates["sent_along"] = sent_along
    if citations is not None:
        updates["citations"] = citations
    rows = Message.objects.filter(pk=message.pk)
    if only_if_streaming:
        rows = rows.filter(state=Message.State.STREAMING)
    if not rows.update(**updates):
        return False
    if content is None:
        message.refresh_from_db()
    else:  # the row now holds exactly these values: no read back
        for name, value in updates.items():
            setattr(message, name, value)
    Conversation.objects.filter(pk=message.conversation_id).update(updated_at=now)
    try:
        events.push_message(message.conversation.owner_id, message, policy)
    except Exception:  # a page update must never turn an answer into a failure
        logger.exception("Could not push the end of message %s", message.pk)
    release_db_connection()
    return True


class _Streamer:
    """Collects deltas; a side thread pushes the rendered text (batched) and persists it.

    The side thread also keeps the heartbeat fresh while the model is silent, and it
    flushes the tail of a burst, so a reload mid-answer shows everything that arrived.
    """

    HEARTBEAT_SECONDS = 5.0

    def __init__(self, message: Message, user_id: int) -> None:
        self.message = message
        self.user_id = user_id
        self.parts: list[str] = []
        self.length = 0
        self.max_chars = settings.CHAT_MAX_ANSWER_CHARS
        # Set once the answer reached CHAT_MAX_ANSWER_CHARS: reading stops, the text stays.
        self.capped = False
        # A server that sends a chunk now and then, forever, would hold this worker
        # thread: the whole answer, every round and tool call in it, has a time limit.
        self.max_seconds = settings.CHAT_MAX_ANSWER_SECONDS
        self.deadline = time.monotonic() + self.max_seconds
        self.timed_out = False
        self.lock = threading.Lock()
        self.version = 0
        self.pushed_version = 0
        self.persisted_version = 0
        self.first_token_at: datetime | None = None
        self.stop_checked_at = 0.0
        self.stopped = False
        self.done = threading.Event()
        self.thread: threading.Thread | None = None
        self.announce: Callable[[], None] | None = None
        self.policy: Policy | None = None  # the turn's policy, read once, for its pushes

    @property
    def text(self) -> str:
        with self.lock:
            return "".join(self.parts)

    def start(self, announce: Callable[[], None] | None = None) -> None:
        """`announce` runs first on the side thread, while the model thinks."""
        self.announce = announce
        self.thread = threading.Thread(
            target=self._loop, name=f"chat-flush-{self.message.pk}", daemon=True
        )
        self.thread.start()

    def finish(self) -> None:
        self.done.set()
        if self.thread is not None:
            self.thread.join(timeout=10)

    def new_paragraph(self) -> None:
        """Text of a later round starts a new paragraph instead of running on."""
        with self.lock:
            if self.parts and not self.parts[-1].endswith("\n"):
                self.parts.append("\n\n")
                self.length += 2

    def add(self, delta: str) -> None:
        delta = storable(delta)
        with self.lock:
            if self.capped:
                return
            room = self.max_chars - self.length
            if len(delta) > room:
                delta = delta[: max(room, 0)]
                self.capped = True
            self.parts.append(delta)
            self.length += len(delta)
            self.version += 1
            if self.first_token_at is None:
                self.first_token_at = timezone.now()

    def _loop(self) -> None:
        push_every = settings.CHAT_PUSH_INTERVAL_MS / 1000
        persist_every = settings.CHAT_PERSIST_INTERVAL_MS / 1000
        persisted_at = heartbeat_at = time.monotonic()
        if self.announce is not None:
            try:
                self.announce()
            except Exception:
                logger.exception("Announcing message %s failed", self.message.pk)
                connection.close()
        while not self.done.wait(push_every):
            with self.lock:
                version, text = self.version, "".join(self.parts)
            now = time.monotonic()
            # One failed push or write (a busy pool, a Redis hiccup) is retried next time
            # round; it never ends the live updates of the answer.
            try:
                pushed_now = version != self.pushed_version
                if pushed_now:
                    self._push(text)
                    self.pushed_version = version
                if self.done.is_set():
                    break  # the end state is written and pushed by the runner
                due = now - persisted_at >= persist_every and version != self.persisted_version
                if due or now - heartbeat_at >= self.HEARTBEAT_SECONDS:
                    persisted_at = heartbeat_at = now
                    self._persist(text)
                    self.persisted_version = version
                    # A page loaded between the last push and this write showed the
                    # older stored text; the model may stay silent for long, so it gets
                    # what is stored now (unless this round pushed it already).
                    if not pushed_now:
                        self._push(text)
            except Exception:
                logger.exception("A live update of message %s failed", self.message.pk)
                connection.close()
        connection.close()

    def _push(self, text: str) -> None:
        shown = Message(pk=self.message.pk, role=Message.Role.ASSISTANT, content=text)
        shown.citations = self.message.citations
        html = message_html(shown)
        # Once the answer is done the runner pushes the end state; a body pushed after
        # it would show a shorter text, and waiting for this one would delay the end.
        if not self.done.is_set():
            events.push_body(self.user_id, self.message.pk, html)

    def _persist(self, text: str) -> None:
        updates: dict[str, Any] = {"content": text, "heartbeat_at": timezone.now()}
        if self.first_token_at is not None:
            updates["first_token_at"] = self.first_token_at
        Message.objects.filter(pk=self.message.pk, state=Message.State.STREAMING).update(**updates)
        connection.close()

    def should_stop(self) -> bool:
        if self.capped or self.timed_out:
            return True
        # Redis is asked at most every 100 ms: Stop still answers well within a second.
        now = time.monotonic()
        if now >= self.deadline:
            self.timed_out = True
            return True
        if not self.stopped and now - self.stop_checked_at >= 0.1:
            self.stop_checked_at = now
            self.stopped = stop_requested(self.message)
        return self.stopped


@dataclass
class Prepared:
    turn: Turn
    endpoint: client.Endpoint
    messages: list[dict[str, Any]]
    tools: list[ToolSchema] | None
    sent_along: dict[str, Any] = field(default_factory=dict)
    citations: list[dict[str, Any]] = field(default_factory=list)
    policy: Policy | None = None


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

    stores = list(conversation.stores.select_related("ai_profile"))
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


def _prepare(message: Message) -> Prepared:
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
    turn = Turn(
        user=conversation.owner,
        agent=conversation.agent,
        binding=conversation.binding,
        run_kind=run_kind_of(conversation.run_kind),
        conversation_ref=str(conversation.pk),
        message_ref=str(message.pk),
        reply_ref_trusted=True,  # the host made both references
        memory_off=not conversation.memory_on,
        context_window=profile.context_window,
        model_local=profile.runs_locally,
    )
    # Retrieval (an embeddings call and two searches) runs beside the memory block.
    retrieval = _beside(lambda: _retrieved(conversation, turn, current.content))
    # Read once, with the person's add-on state: the context, add-ons and pushes use it.
    policy = policy_for(conversation.owner, with_addons=True)
    context = turn_context_build(turn, policy)
    # Approved reference files (M14) go after the memory block, in their own wrapper.
    references = reference_block_build(
        user=conversation.owner, memory_off_reason=context.reason_off, mask=not turn.model_local
    )
    retrieved, citations, retrieval_info = retrieval()
    tools = tool_schemas() if profile.supports_tools and not context.reason_off else None
    system_parts = [SYSTEM]
    if not tools:
        system_parts.append(
            "You cannot call tools in this conversation: use the memory index lines as they "
            "are, and if the person asks you to remember something, say that saving is not "
            "available here."
        )
    if conversation.agent and conversation.agent.instructions:
        system_parts.append(conversation.agent.instructions)
    # Order (docs/addons.md): skills, the memory block, add-on context files, excerpts.
    addons = addon_context_build(
        user=conversation.owner,
        context_window=profile.context_window,
        tools={tool["function"]["name"] for tool in tools or []},
        memory_readable=not context.reason_off,
        preloaded=policy.addons,
        mask=not turn.model_local,
    )
    if addons.skills_block:
        system_parts.append(addons.skills_block)
    if context.block:
        system_parts.append(context.block)
    if references.block:
        system_parts.append(references.block)
    if addons.files_block:
        system_parts.append(addons.files_block)
    if retrieved:
        system_parts.append(retrieved)
    system = "\n\n".join(system_parts)
    # History is trimmed oldest first; the memory block and the current message never are.
    budget = (
        profile.context_window
        - min(settings.CHAT_ANSWER_RESERVE_TOKENS, profile.context_window // 4)
        - estimate_tokens(system)
        - estimate_tokens(current.content)
        - (estimate_tokens(json.dumps(tools)) if tools else 0)
    )
    kept: list[Message] = []
    for old in reversed(history):
        cost = estimate_tokens(old.content) + 4
        if cost > budget:
            break
        budget -= cost
        kept.append(old)
    kept.reverse()
    trimmed = len(history) - len(kept)
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    messages += [{"role": m.role, "content": m.content} for m in kept if m.content]
    messages.append({"role": "user", "content": current.content})
    items = [
        {
            "origin": item.origin,
            "scope": item.scope,
            "kind": item.kind,
            "tokens": item.tokens,
            "text": _as_sent(turn, item.text)[:160],
        }
        for item in context.sent
    ]
    sent_along = {
        "memory": {
            "items": items,
            "omitted": context.omitted,
            "tokens": context.tokens,
            "budget": context.budget,
            "hash": context.block_hash,
            "off": context.reason_off,
        },
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
    return Prepared(turn, _endpoint(conversation), messages, tools, sent_along, citations, policy)


def _claim(message_id: int) -> Message | None:
    now = timezone.now()
    claimed = Message.objects.filter(
        pk=message_id, state=Message.State.STREAMING, started_at__isnull=True
    ).update(started_at=now, heartbeat_at=now)
    message = (
        Message.objects.select_related(
            "conversation__ai_profile",
            "conversation__agent",
            "conversation__owner",
            "conversation__binding",
        )
        .filter(pk=message_id)
        .first()
    )
    if message is None:
        logger.info("Message %s is gone; nothing to answer", message_id)
        return None
    if not claimed:
        if message.state == Message.State.STREAMING:
            # Delivered again after its worker died mid-answer: never resume half a message.
            message_finish(
                message=message,
                state=Message.State.FAILED,
                error="The worker writing this answer stopped; the text above is incomplete.",
                only_if_streaming=True,
            )
        return None
    return message


@dataclass
class _End:
    state: str
    error: str = ""


def _timed_out(streamer: _Streamer) -> _End:
    return _End(
        Message.State.FAILED,
        f"The AI server took longer than {streamer.max_seconds:,} s for this answer; "
        "the text that arrived is kept.",
    )


def turn_run(*, message_id: int) -> None:
    message = _claim(message_id)
    if message is None:
        return
    streamer = _Streamer(message, message.conversation.owner_id)
    usage: dict[str, int] = {}
    try:
        end = _answer(message, streamer, usage)
    except client.ModelError as error:
        # The transport's whole-call bound ends a trickling stream at the answer's own
        # deadline: say so, not that the stream was cut.
        timed_out = time.monotonic() >= streamer.deadline
        end = _timed_out(streamer) if timed_out else _End(Message.State.FAILED, error.message)
    except Exception:
        logger.exception("Answer %s failed", message.pk)
        end = _End(
            Message.State.FAILED, "Something went wrong on the server while writing this answer."
        )
    finally:
        streamer.finish()
    message_finish(
        message=message,
        state=end.state,
        content=streamer.text,
        error=end.error,
        usage=usage,
        first_token_at=streamer.first_token_at,
        sent_along=message.sent_along or None,
        citations=message.citations or None,
        policy=streamer.policy,
    )
    if end.state == Message.State.COMPLETE:
        _announce_complete(message)


def _announce_complete(message: Message) -> None:
    """Rule learning (M13) listens: it looks at the person's message once the answer is
    complete. A listener's failure never turns a finished answer into a failure (Django
    logs it, with its traceback, under django.dispatch)."""
    answer_completed.send_robust(sender=Message, answer_id=message.pk)


def _answer(message: Message, streamer: _Streamer, usage: dict[str, int]) -> _End:
    """The rounds of one answer; returns how it ended (errors raise ModelError)."""
    user_id = message.conversation.owner_id
    if streamer.should_stop():
        return _End(Message.State.STOPPED)
    prepared = _prepare(message)
    streamer.policy = prepared.policy
    message.sent_along, message.citations = prepared.sent_along, prepared.citations

    def announce() -> None:
        """Sent along and citations, stored and shown while the model thinks."""
        Message.objects.filter(pk=message.pk).update(
            sent_along=prepared.sent_along, citations=prepared.citations
        )
        events.push_message(user_id, message, prepared.policy)
        connection.close()

    streamer.start(announce)
    conversation_messages = prepared.messages
    calls_log: list[dict[str, Any]] = []
    for round_number in range(1, settings.CHAT_MAX_TOOL_ROUNDS + 1):
        last_round = round_number == settings.CHAT_MAX_TOOL_ROUNDS
        result = _model_round(prepared, conversation_messages, streamer, usage, last=last_round)
        if streamer.capped:
            return _End(
                Message.State.COMPLETE,
                f"The answer was cut at the limit of {streamer.max_chars:,} characters.",
            )
        if streamer.timed_out:
            return _timed_out(streamer)
        if result.stopped:
            return _End(Message.State.STOPPED)
        if result.tool_calls and last_round:
            end = _calls_not_run(message, streamer, round_number, result.tool_calls, calls_log)
            if end is not None:
                return end
        if not result.tool_calls or last_round:
            break
        _run_tool_calls(prepared, message, round_number, result, conversation_messages, calls_log)
    if not streamer.text.strip() and not calls_log:
        return _End(Message.State.COMPLETE, "The model finished without writing an answer.")
    return _End(Message.State.COMPLETE)


def _model_round(
    prepared: Prepared,
    conversation_messages: list[dict[str, Any]],
    streamer: _Streamer,
    usage: dict[str, int],
    *,
    last: bool,
) -> client.RoundResult:
    """One call to the model, streamed into the answer; its usage is added up and its
    tool calls made storable."""
    streamer.new_paragraph()
    release_db_connection()
    try:
        # Checked (and resolved) before every call: a name may point elsewhere later.
        check_outbound_url(prepared.endpoint.base_url)
    except OutboundRefused as refusal:
        raise client.ModelError("refused", str(refusal)) from refusal
    result = client.stream_round(
        prepared.endpoint,
        messages=conversation_messages,
        # The last round gets no tools, so the model has to answer in words.
        tools=None if last else prepared.tools,
        on_delta=streamer.add,
        should_stop=streamer.should_stop,
    )
    for key, value in result.usage.items():
        usage[key] = usage.get(key, 0) + value
    for call in result.tool_calls:
        call.name, call.arguments = storable(call.name), _storable_arguments(call.arguments)
    return result


def _calls_not_run(
    message: Message,
    streamer: _Streamer,
    round_number: int,
    calls: list[client.ToolCall],
    calls_log: list[dict[str, Any]],
) -> _End | None:
    """No tools were offered in the last round, yet the model asked for some: kept as a
    trace, not run. The answer ends here when the model wrote nothing else."""
    reason = f"Not run: no tools are offered in the last of {round_number} rounds."
    calls_log += [_logged(round_number, call, False, reason) for call in calls]
    Message.objects.filter(pk=message.pk).update(tool_calls=calls_log)
    message.tool_calls = calls_log
    if streamer.text.strip():
        return None
    return _End(
        Message.State.COMPLETE,
        f"The model kept calling tools and gave no answer within {round_number} rounds.",
    )


def _run_tool_calls(
    prepared: Prepared,
    message: Message,
    round_number: int,
    result: client.RoundResult,
    conversation_messages: list[dict[str, Any]],
    calls_log: list[dict[str, Any]],
) -> None:
    """Run the round's tool calls (up to the limit per round) and hand their results to
    the model's next round; the calls are stored and shown as they ran."""
    conversation_messages.append(
        {
            "role": "assistant",
            "content": result.content or None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in result.tool_calls
            ],
        }
    )
    allowed = settings.CHAT_MAX_TOOL_CALLS_PER_ROUND
    over_limit = (
        f"Not run: at most {allowed} tool calls are run per round. "
        "Call it again in your next round if you still need it."
    )
    for number, call in enumerate(result.tool_calls):
        ok, text = _execute(prepared.turn, call) if number < allowed else (False, over_limit)
        text = storable(text)
        calls_log.append(_logged(round_number, call, ok, text))
        conversation_messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
    Message.objects.filter(pk=message.pk).update(tool_calls=calls_log, heartbeat_at=timezone.now())
    message.tool_calls = calls_log
    events.push_memory(message.conversation.owner_id, message)


def _logged(round_number: int, call: client.ToolCall, ok: bool, text: str) -> dict[str, Any]:
    return {
        "round": round_number,
        "id": call.id,
        "name": call.name,
        "arguments": call.arguments[:2000],
        "ok": ok,
        "result": text[:2000],
    }


def _execute(turn: Turn, call: client.ToolCall) -> ToolResult:
    try:
        return tool_call_execute(turn=turn, name=call.name, arguments=call.arguments)
    except Exception:
        logger.exception("Tool %s failed", call.name)
        return ToolResult(False, f"The tool {call.name} failed on the server; nothing was changed.")


def messages_reap_stalled() -> int:
    """Mark answers whose worker died (or that no worker picked up) as failed."""
    now = timezone.now()
    stalled = Message.objects.filter(state=Message.State.STREAMING).filter(
        started_at__isnull=False,
        heartbeat_at__lt=now - timedelta(seconds=settings.CHAT_STALE_SECONDS),
    ) | Message.objects.filter(
        state=Message.State.STREAMING,
        started_at__isnull=True,
        created_at__lt=now - timedelta(seconds=settings.CHAT_QUEUED_MAX_SECONDS),
    )
    count = 0
    for message in stalled.select_related("conversation"):
        reason = (
            "The worker writing this answer stopped; the text above is incomplete."
            if message.started_at
            else "No chat worker picked up this answer."
        )
        if message_finish(
            message=message, state=Message.State.FAILED, error=reason, only_if_streaming=True
        ):
            count += 1
    return count


__all__ = ["message_finish", "messages_reap_stalled", "storable", "turn_run"]
