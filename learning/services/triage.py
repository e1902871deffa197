"""The triage card (M20): the estimate before an eligible turn, Proceed, and the sweep.

The chat calls `triage_turn_start` at the start of every turn (chat/turn_start.py,
registered in learning/apps.py). An eligible turn gets one bounded model call with the
turn's own memory; a card that is shown parks the turn until the person proceeds or the
card's wait ends, and both queue the same answer again, which then runs with the plan.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from accounts.models import EstimateComplexity, User
from accounts.selectors import estimate_complexity_for
from chat.models import Message
from chat.prompt import prepare
from chat.runner import message_finish
from chat.services import stop_requested
from chat.turn_start import TurnStart
from host import model_client as client
from host.core.untrusted import normalise_untrusted
from host.errors import ChangeRefused, NotAllowed, ProposalClosed
from host.outbound import OutboundRefused
from host.queue import queue_job_on_commit
from learning.core.triage import (
    INSTRUCTION,
    Judgement,
    TriageUnusable,
    option_from_stored,
    parse_judgement,
)
from learning.models import TriageCard
from learning.services.model_call import model_call_once
from learning.services.rules import rule_remember
from memory_addon.services.user_settings import save_mode_for

logger = logging.getLogger(__name__)
OWN_IDEA = "own"
MAX_IDEA_CHARS = 2000


def triage_mode(message: Message) -> str:
    """The setting that applies to this turn, or "" when the turn is not eligible:
    only interactive turns of a saved agent with planning on and a model with tools;
    never scheduled, background or bridge turns, nor a turn that answers a card."""
    conversation = message.conversation
    agent, profile = conversation.agent, conversation.ai_profile
    if message.tool_calls or message.content:
        return ""  # a turn resumed after a card was answered: it already ran
    if conversation.run_kind != "interactive" or conversation.binding_id is not None:
        return ""
    if agent is None or not agent.planning or profile is None or not profile.supports_tools:
        return ""
    mode = estimate_complexity_for(conversation.owner).mode
    return "" if mode == EstimateComplexity.OFF else mode


def _question_of(answer: Message) -> Message | None:
    return (
        Message.objects.filter(
            conversation_id=answer.conversation_id, pk__lt=answer.pk, role=Message.Role.USER
        )
        .order_by("-pk")
        .first()
    )


def _hold_answer(answer_id: int, until_seconds: int) -> None:
    """Keep the chat's reaper off the answer while it waits for the estimate or the person
    (the reaper fails answers whose heartbeat is old)."""
    until = timezone.now() + timedelta(seconds=until_seconds)
    Message.objects.filter(pk=answer_id, state=Message.State.STREAMING).update(heartbeat_at=until)


def triage_turn_start(message: Message) -> TurnStart:
    """The hook the chat calls before a turn; a failure here never stops the turn."""
    try:
        return _turn_start(message)
    except Exception:
        logger.exception("Triage of answer %s failed; it runs as asked", message.pk)
        return TurnStart()


def _turn_start(message: Message) -> TurnStart:
    card = TriageCard.objects.filter(answer=message).first()
    if card is not None:  # estimated before: this is the turn the card (or its wait) queued
        if card.state == TriageCard.State.WAITING:
            return TurnStart(parked=True)  # delivered twice while parked: still waits
        return TurnStart(plan=card.plan)
    mode = triage_mode(message)
    question = _question_of(message)
    if not mode or question is None:
        return TurnStart()
    limit = settings.TRIAGE_TIMEOUT_SECONDS
    _hold_answer(message.pk, limit + settings.CHAT_STALE_SECONDS)
    base = TriageCard(
        user_id=message.conversation.owner_id,
        conversation_id=message.conversation_id,
        user_message=question,
        answer=message,
        mode=mode,
    )
    try:
        judgement = _estimate(message, float(limit))
    except (client.ModelError, OutboundRefused, TriageUnusable) as error:
        base.state = TriageCard.State.FAILED
        base.notice = str(error)[:300]
        _card_save(base, notify=True)
        return TurnStart()
    base.looks_complex = judgement.complex
    base.reasons = list(judgement.reasons)
    base.options = [option.stored() for option in judgement.options]
    if mode == EstimateComplexity.AUTOMATIC and not judgement.complex:
        base.state = TriageCard.State.SIMPLE
        _card_save(base, notify=False)
        return TurnStart()
    wait = settings.TRIAGE_CARD_WAIT_SECONDS
    base.state = TriageCard.State.WAITING
    base.expires_at = timezone.now() + timedelta(seconds=wait)
    _card_save(base, notify=True)
    _hold_answer(message.pk, wait + settings.CHAT_STALE_SECONDS)
    return TurnStart(parked=True)


def _estimate(message: Message, limit: float) -> Judgement:
    """One call with the turn's own context (memory, history, the request), the
    instruction first; masked by the model client like every call."""
    prepared = prepare(message)
    messages = [dict(m) for m in prepared.messages]
    messages[0]["content"] = f"{INSTRUCTION}\n\n{messages[0]['content']}"
    profile = message.conversation.ai_profile
    if profile is None:  # triage_mode checked it; the profile went away meanwhile
        raise TriageUnusable("The conversation has no AI profile.")
    result, took = model_call_once(profile=profile, messages=messages, limit=limit)
    if result.stopped or took > limit:
        raise TriageUnusable(f"The estimate took longer than {int(limit)} seconds.")
    return parse_judgement(result.content)


def _card_save(card: TriageCard, *, notify: bool) -> None:
    with transaction.atomic(durable=True):
        card.save()
        if notify:
            _push_on_commit(card.user_id, card.answer_id)


def _push_on_commit(user_id: int, answer_id: int) -> None:
    """Redraw what is under the answer on the person's open pages."""

    def push() -> None:
        from chat import events

        message = Message.objects.select_related("conversation").filter(pk=answer_id).first()
        if message is None:
            return
        try:
            events.push_memory(user_id, message)
        except Exception:  # a page update never undoes the stored card
            logger.exception("Could not push the triage card of answer %s", answer_id)

    transaction.on_commit(push)


def _resume_on_commit(answer_id: int) -> None:
    """Queue the parked answer again. Its queue time starts now, so the reaper counts the
    wait for a worker from here and not from the person's message."""
    now = timezone.now()
    Message.objects.filter(pk=answer_id, state=Message.State.STREAMING).update(
        started_at=None, created_at=now, heartbeat_at=now
    )
    queue_job_on_commit("chat.turn_run", answer_id, queue=settings.CHAT_QUEUE)


def _plan_of(card: TriageCard, choice: str, own_idea: str) -> tuple[int, str]:
    if choice == OWN_IDEA:
        idea = normalise_untrusted(own_idea).strip()
        if not idea:
            raise ChangeRefused(gettext("My own idea: write your idea, or pick an option."))
        if len(idea) > MAX_IDEA_CHARS:
            raise ChangeRefused(
                gettext("My own idea: at most %(limit)s characters.") % {"limit": MAX_IDEA_CHARS}
            )
        return -1, idea
    try:
        index = int(choice)
        option = option_from_stored(card.options[index])
    except (ValueError, TypeError, IndexError, KeyError):
        raise ChangeRefused(gettext("Option: pick one of the options or My own idea.")) from None
    if index < 0:
        raise ChangeRefused(gettext("Option: pick one of the options or My own idea."))
    return index, option.as_plan()


def triage_proceed(
    *,
    user: User,
    card: TriageCard,
    choice: str,
    own_idea: str = "",
    rule_text: str = "",
    rule_target: str | None = None,
) -> TriageCard:
    """Proceed with selection: the turn runs with the chosen option (or the person's idea)
    as its plan. A Permanent rule is saved first, through the one rule write path; a
    refusal there keeps the card open (and the turn parked)."""
    if card.state != TriageCard.State.WAITING:
        raise ProposalClosed(gettext("This triage card was already answered."))
    chosen, plan = _plan_of(card, choice, own_idea)
    rule = None
    if rule_text.strip():
        if save_mode_for(user) == "never":
            raise NotAllowed(
                gettext(
                    "Permanent rule: you chose never to save to memory, so no rule is saved. "
                    "Remove the rule or change your save mode."
                )
            )
        rule = rule_remember(
            user=user, message=card.user_message, text=rule_text, target=rule_target
        )
    with transaction.atomic(durable=True):
        updated = TriageCard.objects.filter(pk=card.pk, state=TriageCard.State.WAITING).update(
            state=TriageCard.State.PROCEEDED,
            chosen=chosen,
            plan=plan,
            rule=rule,
            decided_at=timezone.now(),
        )
        if not updated:
            raise ProposalClosed(gettext("This triage card was already answered."))
        _resume_on_commit(card.answer_id)
        _push_on_commit(card.user_id, card.answer_id)
    card.refresh_from_db()
    return card


def triage_sweep() -> int:
    """Cards nobody answered within their wait: the turn runs as asked. A card whose
    answer the person stopped ends too, and its answer is stored as stopped without a
    turn. Returns how many cards ended."""
    waiting = TriageCard.objects.filter(state=TriageCard.State.WAITING).select_related("answer")
    now = timezone.now()
    ended = [
        (card, TriageCard.State.EXPIRED)
        if card.expires_at is None or card.expires_at <= now
        else (card, TriageCard.State.STOPPED)
        for card in waiting
        if card.expires_at is None or card.expires_at <= now or stop_requested(card.answer)
    ]
    count = 0
    for card, state in ended:
        with transaction.atomic(durable=True):
            if not TriageCard.objects.filter(pk=card.pk, state=TriageCard.State.WAITING).update(
                state=state, decided_at=timezone.now()
            ):
                continue  # answered meanwhile
            if state == TriageCard.State.EXPIRED:
                _resume_on_commit(card.answer_id)
                _push_on_commit(card.user_id, card.answer_id)
        if state == TriageCard.State.STOPPED:
            message_finish(message=card.answer, state=Message.State.STOPPED, only_if_streaming=True)
        count += 1
    return count


__all__ = ["triage_mode", "triage_proceed", "triage_sweep", "triage_turn_start"]
