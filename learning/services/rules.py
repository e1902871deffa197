"""Rule learning (M13): the check after an answer, the detection job, and the card's actions."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext

from accounts.models import User
from addons.services import host_skill_create, host_skill_forget_unused
from chat.models import Conversation, Message
from chat.questions import AnswerRefused
from host import model_client as client
from host.core.secret_guard import find_secret, mask_outbound
from host.core.untrusted import normalise_untrusted
from host.errors import ChangeRefused, NotAllowed, ProposalClosed, Refusal, SecretRefused
from host.outbound import OutboundRefused
from host.queue import queue_job_on_commit
from host.secret_text import secret_refusal
from learning.core.detection import detection_messages, parse_detection
from learning.core.rule_filter import check
from learning.models import LearningDay, RuleSuggestion
from learning.rule_routing import RuleTarget, route_rule, skills_allowed, target_from_choice
from learning.selectors import learning_off_reason, rule_detection_off_reason, undo_open
from learning.services.model_call import model_call_once
from memory_addon.core import entries
from memory_addon.core.operations import Operation
from memory_addon.models import ChangeSet
from memory_addon.services.changes import change_set_apply, change_set_undo
from memory_addon.services.locks import memory_lock
from memory_addon.services.proposals import plan_writes
from memory_addon.services.scopes import (
    ensure_agent_scope,
    ensure_channel_scope,
    ensure_user_scope,
)
from memory_addon.services.skill_rules import skill_rule_append

logger = logging.getLogger(__name__)


def _day_locked(user_id: int) -> LearningDay:
    today = timezone.localdate()
    LearningDay.objects.get_or_create(user_id=user_id, day=today)
    return LearningDay.objects.select_for_update().get(user_id=user_id, day=today)


def _question_of(answer: Message) -> Message | None:
    return (
        Message.objects.filter(
            conversation_id=answer.conversation_id, pk__lt=answer.pk, role=Message.Role.USER
        )
        .order_by("-pk")
        .first()
    )


def rule_check_after_answer(*, answer_id: int) -> RuleSuggestion | None:
    """After a complete answer: the local filter, then (within the daily limit) one job."""
    answer = Message.objects.select_related("conversation__owner").filter(pk=answer_id).first()
    if answer is None or answer.role != Message.Role.ASSISTANT:
        return None
    conversation = answer.conversation
    # The local filter first: most messages state no rule, and it costs no query.
    question = _question_of(answer)
    if question is None or not check(question.content).passes:
        return None
    if rule_detection_off_reason(conversation.owner, conversation):
        return None
    if RuleSuggestion.objects.filter(
        user_message=question, origin=RuleSuggestion.Origin.DETECTED
    ).exists():
        return None  # checked before: a postponed or rejected rule is not suggested again
    try:
        with transaction.atomic(durable=True):
            day = _day_locked(conversation.owner_id)
            if day.calls >= settings.LEARNING_MAX_CALLS_PER_DAY:
                return None
            day.calls += 1
            day.save(update_fields=["calls"])
            suggestion = RuleSuggestion.objects.create(
                user_id=conversation.owner_id,
                conversation=conversation,
                user_message=question,
                answer=answer,
                origin=RuleSuggestion.Origin.DETECTED,
                state=RuleSuggestion.State.DETECTING,
                cue=check(question.content).cue,
            )
            queue_job_on_commit("learning.rule_detect", suggestion.pk)
    except IntegrityError:
        return None  # a concurrent check of the same message or answer won
    return suggestion


def _end(suggestion_id: int, state: str, reason: str = "") -> None:
    RuleSuggestion.objects.filter(pk=suggestion_id).update(
        state=state, reason=reason[:300], decided_at=timezone.now()
    )


def rule_detect(*, suggestion_id: int) -> str:
    """The detection job: one bounded call with the masked message only. Returns the state."""
    claimed = RuleSuggestion.objects.filter(
        pk=suggestion_id, state=RuleSuggestion.State.DETECTING
    ).update(state=RuleSuggestion.State.RUNNING)
    if not claimed:
        return "skipped"
    suggestion = RuleSuggestion.objects.select_related(
        "user_message", "conversation__ai_profile", "conversation__agent", "user"
    ).get(pk=suggestion_id)
    conversation = suggestion.conversation
    reason = rule_detection_off_reason(suggestion.user, conversation)
    if reason:
        _end(suggestion_id, RuleSuggestion.State.DROPPED, reason)
        return RuleSuggestion.State.DROPPED
    text = suggestion.user_message.content
    if not check(text).passes or find_secret(text) is not None:
        _end(suggestion_id, RuleSuggestion.State.DROPPED, "The message did not pass the filter.")
        return RuleSuggestion.State.DROPPED
    profile = conversation.ai_profile
    if profile is None:
        _end(suggestion_id, RuleSuggestion.State.DROPPED, "The conversation has no AI profile.")
        return RuleSuggestion.State.DROPPED
    limit = float(settings.LEARNING_DETECT_TIMEOUT_SECONDS)
    messages = detection_messages(mask_outbound(text))
    try:
        result, took = model_call_once(profile=profile, messages=messages, limit=limit)
    except (client.ModelError, OutboundRefused) as error:
        _end(suggestion_id, RuleSuggestion.State.DROPPED, f"The detection call failed: {error}")
        return RuleSuggestion.State.DROPPED
    if result.stopped or took > limit:
        _end(
            suggestion_id,
            RuleSuggestion.State.DROPPED,
            f"The detection took longer than {int(limit)} seconds.",
        )
        return RuleSuggestion.State.DROPPED
    detection = parse_detection(result.content)
    if detection.kind == "none":
        _end(suggestion_id, RuleSuggestion.State.NO_RULE)
        return RuleSuggestion.State.NO_RULE
    if detection.kind == "malformed" or find_secret(detection.text) is not None:
        _end(
            suggestion_id,
            RuleSuggestion.State.DROPPED,
            detection.problem or "The rule looked like it held a secret.",
        )
        return RuleSuggestion.State.DROPPED
    return _show_card(suggestion_id, detection.text, about_agent=detection.target == "agent")


def _show_card(suggestion_id: int, text: str, *, about_agent: bool) -> str:
    with transaction.atomic(durable=True):
        suggestion = (
            RuleSuggestion.objects.select_for_update(of=("self",))
            .select_related("user")
            .get(pk=suggestion_id)
        )
        day = _day_locked(suggestion.user_id)
        if day.cards >= settings.LEARNING_MAX_CARDS_PER_DAY:
            suggestion.state = RuleSuggestion.State.DROPPED
            suggestion.reason = (
                f"Already {settings.LEARNING_MAX_CARDS_PER_DAY} rule cards today; "
                "no more are shown."
            )
            suggestion.save(update_fields=["state", "reason"])
            return RuleSuggestion.State.DROPPED
        day.cards += 1
        day.save(update_fields=["cards"])
        conversation = Conversation.objects.select_related("agent").get(
            pk=suggestion.conversation_id
        )
        suggestion.text = text
        suggestion.state = RuleSuggestion.State.PENDING
        target = route_rule(suggestion.user, text, conversation, about_agent=about_agent)
        _aim(suggestion, conversation, target)
        suggestion.save(update_fields=["text", "state", *_TARGET_FIELDS])
        _push_cards_on_commit(suggestion)
    return RuleSuggestion.State.PENDING


def _push_cards_on_commit(suggestion: RuleSuggestion) -> None:
    """Redraw the cards under the message on the person's open pages."""
    message_id = suggestion.answer_id or suggestion.user_message_id
    user_id = suggestion.user_id

    def push() -> None:
        from chat import events

        message = Message.objects.select_related("conversation").filter(pk=message_id).first()
        if message is None:
            return
        try:
            events.push_memory(user_id, message)
        except Exception:  # a page update never undoes the saved state
            logger.exception("Could not push the rule card of message %s", message_id)

    transaction.on_commit(push)


def _clean_rule(text: str) -> str:
    try:
        return entries.validate_entry_text(" ".join(normalise_untrusted(text).split()))
    except entries.EntryRefused as error:
        raise ChangeRefused(str(error)) from error


_TARGET_FIELDS = ("target", "agent", "skill_addon", "skill_name", "skill_title")


def _aim(suggestion: RuleSuggestion, conversation: Conversation, target: RuleTarget) -> None:
    suggestion.target = target.kind
    suggestion.agent = conversation.agent if target.kind == RuleSuggestion.Target.AGENT else None
    suggestion.skill_addon = target.skill_addon
    suggestion.skill_name = target.skill_name
    suggestion.skill_title = target.skill_title


def _target(user: User, conversation: Conversation, text: str, choice: str | None) -> RuleTarget:
    """The Save to choice, checked; none given: where the router sends the rule."""
    if choice is None or not choice.strip():
        return route_rule(user, text, conversation)
    return target_from_choice(user, conversation, choice)


_SKILL_TARGETS = (RuleSuggestion.Target.SKILL, RuleSuggestion.Target.NEW_SKILL)


def _save(
    user: User, suggestion: RuleSuggestion, conversation: Conversation, text: str, origin: str
) -> ChangeSet:
    finding = find_secret(text)
    if finding:
        raise SecretRefused(
            gettext("The rule: %(reason)s") % {"reason": secret_refusal(finding)}, kind=finding.kind
        )
    conversation_ref = str(suggestion.conversation_id)
    message_ref = str(suggestion.answer_id or suggestion.user_message_id)
    target = suggestion.target
    if target in _SKILL_TARGETS:
        if target == RuleSuggestion.Target.NEW_SKILL:
            host_skill_create(
                user=user,
                name=suggestion.skill_name,
                title=suggestion.skill_title,
                by_assistant=True,
            )
        return skill_rule_append(
            user=user,
            addon_id=suggestion.skill_addon,
            skill=suggestion.skill_name,
            title=suggestion.skill_title,
            text=text,
            origin=origin,
            source=ChangeSet.Source.LEARNING,
            conversation_ref=conversation_ref,
            message_ref=message_ref,
        )
    if target == RuleSuggestion.Target.AGENT and suggestion.agent is not None:
        scope = ensure_agent_scope(suggestion.agent)
    elif target == RuleSuggestion.Target.CONVERSATION and conversation.binding is not None:
        scope = ensure_channel_scope(conversation.binding, conversation.chat_key)
    else:
        scope = ensure_user_scope(user)
    op: Operation = {
        "action": "add",
        "text": text,
        "entry_id": entries.new_entry_id(),
        "created": timezone.localdate().isoformat(),
    }
    writes, bases = plan_writes(scope, op, origin="learning", source=ChangeSet.Source.LEARNING)
    return change_set_apply(
        user=user,
        scope=scope,
        writes=writes,
        origin=origin,
        source=ChangeSet.Source.LEARNING,
        machine=True,
        base_hashes=bases,
        summary=f"Rule: {text}",
        conversation_ref=conversation_ref,
        message_ref=message_ref,
        agent=suggestion.agent,
    )


def rule_save(
    *, user: User, suggestion: RuleSuggestion, text: str, target: str | None = None
) -> RuleSuggestion:
    """Save the (edited) rule of a card as one change set; Undo stays open for 30 seconds.

    target: the card's Save to choice; None lets the router decide for the saved text.
    """
    cleaned = _clean_rule(text)
    with transaction.atomic(durable=True):
        memory_lock(user.pk)
        locked = RuleSuggestion.objects.select_for_update().get(pk=suggestion.pk, user=user)
        if locked.state not in (RuleSuggestion.State.PENDING, RuleSuggestion.State.POSTPONED):
            raise ProposalClosed(f"This rule card is already {locked.get_state_display().lower()}.")
        conversation = Conversation.objects.select_related("agent", "binding").get(
            pk=locked.conversation_id
        )
        reason = rule_detection_off_reason(user, conversation)
        if reason:
            raise NotAllowed(reason)
        if target is not None and target.strip():
            _aim(locked, conversation, target_from_choice(user, conversation, target))
        elif locked.target in _SKILL_TARGETS and not skills_allowed(user):
            # Skills were allowed when the card was shown, not any more: memory instead.
            _aim(locked, conversation, RuleTarget(RuleSuggestion.Target.USER))
        change_set = _save(user, locked, conversation, cleaned, ChangeSet.Origin.ASSISTANT)
        now = timezone.now()
        locked.text, locked.change_set = cleaned, change_set
        locked.state = RuleSuggestion.State.SAVED
        locked.saved_at = locked.decided_at = now
        locked.save(
            update_fields=[
                "text",
                "state",
                "change_set",
                "saved_at",
                "decided_at",
                *_TARGET_FIELDS,
            ]
        )
        _push_cards_on_commit(locked)
    return locked


def rule_remember(
    *, user: User, message: Message, text: str, target: str | None = None
) -> RuleSuggestion:
    """ "Remember as rule…" on one of the person's own messages: no AI call, saved at once.

    target: the form's Save to choice; None lets the router decide."""
    if message.role != Message.Role.USER or message.conversation.owner_id != user.pk:
        raise ChangeRefused(gettext("Only your own messages can be remembered as a rule."))
    cleaned = _clean_rule(text)
    conversation = Conversation.objects.select_related("agent", "binding").get(
        pk=message.conversation_id
    )
    with transaction.atomic(durable=True):
        memory_lock(user.pk)
        reason = learning_off_reason(user, conversation)
        if reason:
            raise NotAllowed(reason)
        suggestion = RuleSuggestion(
            user=user,
            conversation=conversation,
            user_message=message,
            origin=RuleSuggestion.Origin.MANUAL,
            state=RuleSuggestion.State.SAVED,
            text=cleaned,
        )
        _aim(suggestion, conversation, _target(user, conversation, cleaned, target))
        suggestion.change_set = _save(
            user, suggestion, conversation, cleaned, ChangeSet.Origin.PERSON
        )
        suggestion.saved_at = suggestion.decided_at = timezone.now()
        suggestion.save()
        _push_cards_on_commit(suggestion)
    return suggestion


def rule_from_question(
    *, user: User, conversation: Conversation, message: Message, text: str, to: str
) -> RuleSuggestion:
    """The permanent rule of an answered question (M19), saved inside the answer's own
    transaction under the rules every saved rule follows, where the Save to choice says
    (none: where the router sends it, M21); Undo as for a rule card."""
    cleaned = _clean_rule(text)
    memory_lock(user.pk)
    reason = rule_detection_off_reason(user, conversation)
    if reason:
        raise NotAllowed(reason)
    asked = _question_of(message)
    if asked is None:
        raise ChangeRefused(gettext("There is no message this rule belongs to."))
    suggestion = RuleSuggestion(
        user=user,
        conversation=conversation,
        user_message=asked,
        answer=message,
        origin=RuleSuggestion.Origin.MANUAL,
        state=RuleSuggestion.State.SAVED,
        text=cleaned,
    )
    try:
        target = _target(user, conversation, cleaned, to)
    except Refusal as refusal:
        raise AnswerRefused(refusal.message, field="save_to") from refusal
    _aim(suggestion, conversation, target)
    suggestion.change_set = _save(user, suggestion, conversation, cleaned, ChangeSet.Origin.PERSON)
    suggestion.saved_at = suggestion.decided_at = timezone.now()
    suggestion.save()
    _push_cards_on_commit(suggestion)
    return suggestion


def rule_undo(*, user: User, suggestion: RuleSuggestion) -> RuleSuggestion:
    """Remove a just-saved rule again (within 30 seconds), through the change-set undo."""
    if not undo_open(suggestion) or suggestion.change_set is None:
        raise ProposalClosed(
            f"Undo is offered for {settings.LEARNING_UNDO_SECONDS} seconds after Save; "
            "remove the rule in the Memory tab instead."
        )
    change_set_undo(user=user, change_set=suggestion.change_set, source=ChangeSet.Source.LEARNING)
    if suggestion.target == RuleSuggestion.Target.NEW_SKILL:
        host_skill_forget_unused(user=user, name=suggestion.skill_name)
    RuleSuggestion.objects.filter(pk=suggestion.pk, state=RuleSuggestion.State.SAVED).update(
        state=RuleSuggestion.State.UNDONE
    )
    suggestion.state = RuleSuggestion.State.UNDONE
    _push_cards_on_commit(suggestion)
    return suggestion


def rule_postpone(*, user: User, suggestion: RuleSuggestion) -> RuleSuggestion:
    """Not now: the card comes back under the answer after 7 days."""
    return _decide(
        user,
        suggestion,
        RuleSuggestion.State.POSTPONED,
        ask_again_at=timezone.now() + timedelta(days=settings.LEARNING_ASK_AGAIN_DAYS),
    )


def rule_never(*, user: User, suggestion: RuleSuggestion) -> RuleSuggestion:
    return _decide(user, suggestion, RuleSuggestion.State.NEVER)


def _decide(
    user: User, suggestion: RuleSuggestion, state: str, *, ask_again_at: datetime | None = None
) -> RuleSuggestion:
    with transaction.atomic(durable=True):
        locked = RuleSuggestion.objects.select_for_update().get(pk=suggestion.pk, user=user)
        if locked.state not in (RuleSuggestion.State.PENDING, RuleSuggestion.State.POSTPONED):
            raise ProposalClosed(f"This rule card is already {locked.get_state_display().lower()}.")
        RuleSuggestion.objects.filter(pk=locked.pk).update(
            state=state, ask_again_at=ask_again_at, decided_at=timezone.now()
        )
        locked.refresh_from_db()
        _push_cards_on_commit(locked)
    return locked


__all__ = [
    "learning_off_reason",
    "rule_check_after_answer",
    "rule_detect",
    "rule_never",
    "rule_postpone",
    "rule_remember",
    "rule_save",
    "rule_undo",
]
