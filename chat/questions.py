"""Questions during a run (M19): the ask_person tool, parking an answer on a question,
the person's answer (with an optional permanent rule), and the timeout.

An asked turn gives its worker back: the question row keeps what the model said and was
told since the prompt, and the answer (or the timeout) queues a new chat job that goes on
with the same answer message.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext
from pydantic import JsonValue

from accounts.models import User
from chat.models import Conversation, Message, Question
from host.errors import ChangeRefused, ProposalClosed, Refusal
from host.queue import queue_job_on_commit
from memory_addon.core.tool_arguments import (
    arguments_refusal,
    strict_arguments,
    strict_parameters,
)
from memory_addon.services.tools import ToolSchema

logger = logging.getLogger(__name__)

ASK_PERSON = "ask_person"
_TEXT: dict[str, JsonValue] = {"type": "string", "minLength": 1, "maxLength": 500}
_PARAMETERS: dict[str, JsonValue] = {
    "type": "object",
    "properties": {
        "question": {**_TEXT, "description": "One short question the person can answer."},
        "why": {**_TEXT, "description": "Why only the person can decide this; shown to them."},
        "options": {
            "type": "array",
            "items": {"type": "string", "minLength": 1, "maxLength": 200},
            "minItems": 2,
            "maxItems": 4,
            "description": "2 to 4 suggested answers.",
        },
        "recommended": {
            "type": "string",
            "minLength": 1,
            "maxLength": 200,
            "description": "The option you recommend; it must be one of options.",
        },
    },
    "required": ["question", "why", "options", "recommended"],
    "additionalProperties": False,
}
_DESCRIPTION = (
    "Ask the person when a decision only they can make blocks the task, instead of "
    "guessing. The answer comes back as this tool's result. Ask at most "
    "{limit} questions per answer; never for what you can find out or decide yourself."
)

# A Save to choice as the rule router reads it (learning/rule_routing.py); "" is
# wherever the router sends the rule.
SaveTo = str


def ask_person_schema(*, strict: bool = False) -> ToolSchema:
    """The tool in OpenAI function format, like the memory tools (strict when asked)."""
    description = _DESCRIPTION.format(limit=settings.CHAT_MAX_QUESTIONS_PER_RUN)
    if strict:
        return {
            "type": "function",
            "function": {
                "name": ASK_PERSON,
                "description": description,
                "parameters": strict_parameters(_PARAMETERS),
                "strict": True,
            },
        }
    return {
        "type": "function",
        "function": {"name": ASK_PERSON, "description": description, "parameters": _PARAMETERS},
    }


@dataclass(frozen=True)
class Asked:
    question: str
    why: str
    options: list[str]  # the recommended one first


def ask_arguments(arguments: str, *, strict: bool = False) -> Asked | str:
    """The call's arguments through the one argument gate of the model tools, or why not."""
    try:
        parsed = json.loads(arguments or "{}")
    except (ValueError, RecursionError):
        return "The arguments are not valid JSON; send a JSON object."
    if not isinstance(parsed, dict):
        return "The arguments must be a JSON object."
    if strict:
        parsed = strict_arguments(_PARAMETERS, parsed)
    problem = arguments_refusal(ASK_PERSON, _PARAMETERS, parsed)
    if problem:
        return f"Refused: {problem}"
    options = [" ".join(str(o).split()) for o in parsed["options"]]
    recommended = " ".join(str(parsed["recommended"]).split())
    if recommended not in options:
        return "Refused: 'recommended' must be one of 'options'. Nothing was asked."
    if len(set(options)) != len(options):
        return "Refused: 'options' holds the same answer twice. Nothing was asked."
    options.remove(recommended)
    return Asked(
        " ".join(str(parsed["question"]).split()),
        str(parsed["why"]).strip(),
        [recommended, *options],
    )


def decide_yourself(reason: str) -> str:
    """What the model is told when nobody can answer: decide, and say what you chose."""
    return (
        f"{reason} Decide by yourself, go on with the task, and name your choice in your "
        "answer as one line: 'Decided without you: <your choice>'."
    )


def over_limit_note() -> str:
    return decide_yourself(
        f"You already asked {settings.CHAT_MAX_QUESTIONS_PER_RUN} questions in this answer, "
        "the most allowed; this one was not asked."
    )


BACKGROUND_NOTE = (
    "Nobody reads along in this run, so you cannot ask questions: when a decision only "
    "the person could make comes up, decide by yourself and name your choice."
)


def question_park(
    *,
    message: Message,
    call_id: str,
    asked: Asked,
    tail: list[dict[str, Any]],
    next_round: int,
    shown: int,
) -> Question:
    """Store the question and what the turn needs to go on; the answer waits for it.

    shown: how much of the answer's text was written before the question (a messaging
    app got it with the question, so it gets only the rest later)."""
    with transaction.atomic(durable=True):
        number = message.questions.count() + 1
        return Question.objects.create(
            owner_id=message.conversation.owner_id,
            message=message,
            number=number,
            call_id=call_id,
            text=asked.question,
            why=asked.why,
            options=asked.options,
            resume={"tail": tail, "round": next_round, "shown": shown},
            expires_at=timezone.now() + timedelta(seconds=settings.CHAT_QUESTION_TIMEOUT_SECONDS),
        )


# The permanent rule is saved by the app that owns rules (learning); the chat never
# imports it, so the app registers its one saving function here from its ready().
class RuleSaver(Protocol):
    def __call__(
        self, *, user: User, conversation: Conversation, message: Message, text: str, to: SaveTo
    ) -> object: ...


_rule_saver: list[RuleSaver] = []


def question_rule_saver_register(saver: RuleSaver) -> None:
    _rule_saver[:] = [saver]


class AnswerRefused(ChangeRefused):
    """The answer form cannot be taken as it is; `field` names the input to fix."""

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message, field=field)
        self.field = field


def joined_answer(choice: str, other: str) -> str:
    """Text typed while a suggestion is selected adds to it."""
    choice, other = choice.strip(), " ".join(other.split())
    return f"{choice} — {other}" if choice and other else choice or other


def _answer_text(question: Question, choice: str, other: str) -> str:
    choice, other = choice.strip(), " ".join(other.split())
    if choice and choice not in question.options:
        raise AnswerRefused(gettext("Pick one of the suggested answers."), field="choice")
    if not choice and not other:
        raise AnswerRefused(
            gettext("Pick a suggested answer or type another answer."), field="choice"
        )
    return joined_answer(choice, other)


def question_answer(
    *,
    user: User,
    question_id: int,
    choice: str = "",
    other: str = "",
    rule: str = "",
    save_to: SaveTo = "",
    queue_turn: bool = True,
) -> Question:
    """The person's answer: the optional rule is saved with it (or neither is), then the
    answer's turn goes on as a new chat job (queue_turn=False: the caller runs it, as a
    messaging bridge does within its own job)."""
    rule = " ".join(rule.split())
    with transaction.atomic(durable=True):
        question = (
            Question.objects.select_for_update(of=("self",))
            .select_related("message__conversation__agent")
            .filter(pk=question_id, owner=user)
            .first()
        )
        if question is None:
            raise ChangeRefused(gettext("No such question."))
        if question.state != Question.State.WAITING:
            raise ProposalClosed(gettext("This question was already answered or decided."))
        answer = _answer_text(question, choice, other)
        if rule:
            _save_rule(user, question, rule, save_to)
        question.state, question.answer, question.rule = Question.State.ANSWERED, answer, rule
        question.answered_at = timezone.now()
        question.save(update_fields=["state", "answer", "rule", "answered_at"])
        _resume_on_commit(question, queue_turn=queue_turn)
    return question


def _save_rule(user: User, question: Question, rule: str, save_to: SaveTo) -> None:
    conversation = question.message.conversation
    if not _rule_saver:
        raise AnswerRefused(gettext("Rules cannot be saved on this server."), field="rule")
    try:
        _rule_saver[0](
            user=user, conversation=conversation, message=question.message, text=rule, to=save_to
        )
    except AnswerRefused:
        raise
    except Refusal as refusal:
        # Secret guard, save mode, kill switch: the card stays open and says why.
        raise AnswerRefused(refusal.message, field="rule") from refusal


def questions_expire() -> int:
    """Questions unanswered for CHAT_QUESTION_TIMEOUT_SECONDS: the model decides."""
    count = 0
    due = Question.objects.filter(state=Question.State.WAITING, expires_at__lte=timezone.now())
    for question_id in due.values_list("pk", flat=True):
        with transaction.atomic(durable=True):
            question = (
                Question.objects.select_for_update()
                .filter(pk=question_id, state=Question.State.WAITING)
                .first()
            )
            if question is None:
                continue  # answered meanwhile
            question.state, question.answered_at = Question.State.DECIDED, timezone.now()
            question.save(update_fields=["state", "answered_at"])
            _resume_on_commit(question)
            count += 1
    return count


def tool_result(question: Question) -> str:
    """What the model is told once the question is answered or decided."""
    if question.state == Question.State.DECIDED:
        minutes = max(1, settings.CHAT_QUESTION_TIMEOUT_SECONDS // 60)
        return decide_yourself(f"The person did not answer within {minutes} minutes.")
    text = f"The person answered: {question.answer}"
    if question.rule:
        text += f"\nThey also saved a permanent rule: {question.rule}"
    return text


def _resume_on_commit(question: Question, *, queue_turn: bool = True) -> None:
    """The parked answer goes back on the chat queue; a worker claims it as a new job."""
    now = timezone.now()
    resumed = Message.objects.filter(pk=question.message_id, state=Message.State.WAITING).update(
        state=Message.State.STREAMING, started_at=None, finished_at=None, heartbeat_at=now
    )
    if resumed and queue_turn:
        queue_job_on_commit("chat.turn_run", question.message_id, queue=settings.CHAT_QUEUE)


def question_to_resume(message: Message) -> Question | None:
    """The answered or decided question this job goes on from, claimed once."""
    question = (
        message.questions.exclude(state=Question.State.WAITING)
        .filter(resumed_at__isnull=True)
        .order_by("-number")
        .first()
    )
    if question is None:
        return None
    claimed = Question.objects.filter(pk=question.pk, resumed_at__isnull=True).update(
        resumed_at=timezone.now()
    )
    return question if claimed else None


def question_waiting_in(conversation_id: int) -> Question | None:
    """The question a conversation's newest answer waits on, if any."""
    return (
        Question.objects.filter(
            message__conversation_id=conversation_id, state=Question.State.WAITING
        )
        .select_related("message")
        .order_by("-asked_at", "-id")
        .first()
    )


_NUMBERED = re.compile(r"\s*(\d{1,2})\s*[.):]?(?:\s+(.*))?\s*", re.DOTALL)


def reply_as_answer(question: Question, text: str) -> tuple[str, str]:
    """A reply in a messaging app as (choice, other): a number picks a suggested answer,
    text after it adds to it; any other text is another answer."""
    match = _NUMBERED.fullmatch(text)
    if match and 1 <= int(match.group(1)) <= len(question.options):
        return question.options[int(match.group(1)) - 1], match.group(2) or ""
    return "", text


def question_as_text(question: Question) -> str:
    """The question as a numbered message for a messaging app."""
    lines = [f"Question {question.number}: {question.text}", f"Why it asks: {question.why}"]
    for number, option in enumerate(question.options, start=1):
        lines.append(f"{number}. {option}" + (" (recommended)" if number == 1 else ""))
    lines.append("Reply with a number, or with your own answer.")
    return "\n".join(lines)
