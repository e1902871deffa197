"""One turn: context and retrieval → the model with the memory tools → tool calls → answer.

Runs in a chat worker thread. Rules that shape it:
- No database connection is held while the model server is called: the connection goes
  back to the pool before every outside call and is taken again only for short writes.
- Every path ends in a stored, honest state (complete, stopped, failed); the partial
  text is written every CHAT_PERSIST_INTERVAL_MS so a reload shows what arrived
  (chat/stream.py). What the model is sent is put together in chat/prompt.py.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from addons.services import skill_uses_record
from chat import events, questions
from chat.models import Conversation, Message, Question
from chat.prompt import Prepared, prepare
from chat.signals import answer_completed, decided_answer_ended
from chat.stream import Streamer
from chat.turn_start import turn_start
from host import model_client as client
from host.core.storable import storable, storable_value
from host.outbound import OutboundRefused, check_outbound_url, release_db_connection
from memory_addon.services.policy import Policy
from memory_addon.services.tools import ToolResult, tool_call_execute
from memory_addon.turns import Turn

logger = logging.getLogger(__name__)


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


def _timed_out(streamer: Streamer) -> _End:
    return _End(
        Message.State.FAILED,
        f"The AI server took longer than {streamer.max_seconds:,} s for this answer; "
        "the text that arrived is kept.",
    )


def turn_run(*, message_id: int) -> None:
    message = _claim(message_id)
    if message is None:
        return
    start = turn_start(message)
    if start.parked:
        return  # a card waits for the person; its answer or its timeout queues the turn again
    streamer = Streamer(message, message.conversation.owner_id)
    resumed = questions.question_to_resume(message)
    if resumed is not None:
        streamer.first_token_at = message.first_token_at  # kept from before the question
        if message.content:
            streamer.add(message.content)  # the same answer goes on after the question
    usage: dict[str, int] = dict(message.usage) if resumed is not None else {}
    try:
        end = _answer(message, streamer, usage, resumed, start.plan)
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
    elif end.state == Message.State.WAITING:
        events.push_memory(message.conversation.owner_id, message)
    if resumed is not None and resumed.state == Question.State.DECIDED:
        # Nobody's reply runs this turn: whoever delivers the answer elsewhere listens.
        decided_answer_ended.send_robust(
            sender=Message, answer_id=message.pk, question_id=resumed.pk
        )


def _announce_complete(message: Message) -> None:
    """Rule learning (M13) listens: it looks at the person's message once the answer is
    complete. A listener's failure never turns a finished answer into a failure (Django
    logs it, with its traceback, under django.dispatch)."""
    answer_completed.send_robust(sender=Message, answer_id=message.pk)


def _answer(
    message: Message,
    streamer: Streamer,
    usage: dict[str, int],
    resumed: Question | None,
    plan: str,
) -> _End:
    """The rounds of one answer, or of its rest after a question; returns how it ended
    (errors raise ModelError). plan: the person's choice on a triage card (M20)."""
    user_id = message.conversation.owner_id
    if streamer.should_stop():
        return _End(Message.State.STOPPED)
    prepared = prepare(message, plan=plan)
    streamer.policy = prepared.policy
    skill_uses_record(
        user_id=user_id,
        skills=[(s["addon"], s["name"]) for s in prepared.sent_along["addons"]["skills"]],
    )
    message.sent_along, message.citations = prepared.sent_along, prepared.citations

    def announce() -> None:
        """Sent along and citations, stored and shown while the model thinks."""
        Message.objects.filter(pk=message.pk).update(
            sent_along=prepared.sent_along, citations=prepared.citations
        )
        events.push_message(user_id, message, prepared.policy)
        connection.close()

    streamer.start(announce)
    conversation_messages, calls_log, first_round = _going_on(message, prepared, resumed)
    for round_number in range(first_round, settings.CHAT_MAX_TOOL_ROUNDS + 1):
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
        asked = _run_tool_calls(
            prepared, message, round_number, result, conversation_messages, calls_log
        )
        if asked is not None:
            call_id, arguments = asked
            # A round that only asked is not a tool round: the answer goes on with it.
            only_asked = all(c.name == questions.ASK_PERSON for c in result.tool_calls)
            questions.question_park(
                message=message,
                call_id=call_id,
                asked=arguments,
                tail=conversation_messages[len(prepared.messages) :],
                next_round=round_number if only_asked else round_number + 1,
                shown=len(streamer.text),
            )
            return _End(Message.State.WAITING)
    if not streamer.text.strip() and not calls_log:
        return _End(Message.State.COMPLETE, "The model finished without writing an answer.")
    return _End(Message.State.COMPLETE)


def _going_on(
    message: Message, prepared: Prepared, resumed: Question | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """What the model is sent, the calls so far and the first round: from the prompt, or,
    after a question, the prompt, what came after it, and the answer as the tool result."""
    if resumed is None:
        return list(prepared.messages), [], 1
    answer = questions.tool_result(resumed)
    sent = [
        *prepared.messages,
        *resumed.resume.get("tail", []),
        {"role": "tool", "tool_call_id": resumed.call_id, "content": answer},
    ]
    calls_log = [
        {**c, "result": answer[:2000], "waiting": False} if c.get("id") == resumed.call_id else c
        for c in message.tool_calls
    ]
    # The tool log shows the person's answer from now on, no longer "waiting".
    Message.objects.filter(pk=message.pk).update(tool_calls=calls_log)
    message.tool_calls = calls_log
    return sent, calls_log, int(resumed.resume.get("round", 1))


def _model_round(
    prepared: Prepared,
    conversation_messages: list[dict[str, Any]],
    streamer: Streamer,
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
    streamer: Streamer,
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
) -> tuple[str, questions.Asked] | None:
    """Run the round's tool calls (up to the limit per round) and hand their results to
    the model's next round; the calls are stored and shown as they ran.

    Returns the call id and arguments of a question to the person: its result comes
    when the person answers, so it gets no tool message here."""
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
    asked: tuple[str, questions.Asked] | None = None
    for number, call in enumerate(result.tool_calls):
        if number >= allowed:
            ok, text = False, over_limit
        elif call.name == questions.ASK_PERSON and prepared.asks:
            question = _question(prepared, message, call, asked is not None)
            if isinstance(question, questions.Asked):
                asked = (call.id, question)
                # "waiting": the page says it in the person's language, not this text.
                entry = _logged(round_number, call, True, "Waiting for the answer.")
                calls_log.append({**entry, "waiting": True})
                continue
            ok, text = False, question
        else:
            ok, text = _execute(prepared.turn, call)
        text = storable(_repeated_error_noted(calls_log, call, ok, text))
        calls_log.append(_logged(round_number, call, ok, text))
        conversation_messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
    Message.objects.filter(pk=message.pk).update(tool_calls=calls_log, heartbeat_at=timezone.now())
    message.tool_calls = calls_log
    events.push_memory(message.conversation.owner_id, message)
    return asked


def _question(
    prepared: Prepared, message: Message, call: client.ToolCall, one_asked: bool
) -> questions.Asked | str:
    """The question to park, or the tool error the model gets instead."""
    asked = questions.ask_arguments(call.arguments, strict=prepared.turn.strict_tools)
    if isinstance(asked, str):
        return asked
    if one_asked:
        return "Not asked: ask one question at a time; ask this one after the answer."
    if message.questions.count() >= settings.CHAT_MAX_QUESTIONS_PER_RUN:
        return questions.over_limit_note()
    return asked


REPEATED_ERROR_NOTE = (
    "\n\nNote from the host: this same error already came back earlier in this "
    "answer. Do not repeat the call as it is: change your approach, or ask the person."
)


def _repeated_error_noted(
    calls_log: list[dict[str, Any]], call: client.ToolCall, ok: bool, text: str
) -> str:
    """A tool error the turn has seen before gets a note, so the model stops repeating."""
    if ok:
        return text
    seen = any(
        not c["ok"] and c["name"] == call.name and c["result"] == text[:2000] for c in calls_log
    )
    return text + REPEATED_ERROR_NOTE if seen else text


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
    queued_cutoff = now - timedelta(seconds=settings.CHAT_QUEUED_MAX_SECONDS)
    stalled = Message.objects.filter(state=Message.State.STREAMING).filter(
        started_at__isnull=False,
        heartbeat_at__lt=now - timedelta(seconds=settings.CHAT_STALE_SECONDS),
    ) | Message.objects.filter(
        # An answer going on after a question is queued again: its heartbeat says when.
        Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=queued_cutoff),
        state=Message.State.STREAMING,
        started_at__isnull=True,
        created_at__lt=queued_cutoff,
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
