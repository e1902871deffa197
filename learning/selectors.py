"""Reads of the learning app: owner-checked access and the rule cards under messages."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import ClassVar

from django.conf import settings
from django.db.models import Q
from django.http import Http404, HttpRequest
from django.shortcuts import get_object_or_404
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext

from accounts.models import User
from chat.models import Conversation, Message
from chat.under_messages import UnderMessages
from learning.core.triage import Option, option_from_stored
from learning.models import CleanupJob, RuleSuggestion, TriageCard
from learning.rule_routing import RuleTarget, TargetChoice, target_choices
from memory_addon.models import MemoryScope, ReferenceFile
from memory_addon.services.policy import Policy, kill_switch_on, policy_for
from memory_addon.services.scopes import INDEX_PATH, scope_folder
from memory_addon.services.skill_rules import skill_note_path
from memory_addon.services.user_settings import learning_suggests_for, save_mode_for
from memory_addon.turns import TEMPORARY_REFUSAL


def learning_off_reason(
    user: User, conversation: Conversation | None = None, policy: Policy | None = None
) -> str:
    """Empty when rules may be learned and saved for this person (and chat), else why not.

    Every rule path (cards, detection, "Remember as rule…", the question and triage
    cards' Permanent rule) asks this with its conversation."""
    if conversation is not None and conversation.temporary:
        return gettext(TEMPORARY_REFUSAL)
    if kill_switch_on():
        return "Rule learning is off on this server (MEMORY_AI_MEMORY=off)."
    policy = policy or policy_for(user)
    if not policy.learning:
        return f"{policy.organization_name or 'Your organization'} has turned rule learning off."
    if policy.memory_mode == "off":
        return "Your organization has turned memory off, so no rules are learned."
    if policy.memory_mode == "read_only":
        return "Your organization made memory read-only, so no rules can be saved."
    if not policy.addon_enabled:
        return "The Short memory add-on is disabled, so no rules are learned."
    if conversation is not None and not conversation.memory_on:
        return "Memory is off for this conversation, so no rules are learned in it."
    if conversation is not None and conversation.run_kind != "interactive":
        return "Scheduled and background runs learn no rules."
    return ""


def rule_detection_off_reason(
    user: User, conversation: Conversation | None = None, policy: Policy | None = None
) -> str:
    """Empty when the host may look for rules and show their cards, else why not.

    Save mode "never" means the assistant suggests nothing to save (M9, M13): no
    detection and no card. The person's own "Remember as rule…" stays theirs to use.
    """
    reason = learning_off_reason(user, conversation, policy)
    if reason:
        return reason
    if save_mode_for(user) == "never":
        return "You chose never to save to memory, so no rules are suggested."
    if not learning_suggests_for(user):
        return "You turned rule learning off, so no rules are suggested."
    return ""


def suggestion_for_user(user: User, suggestion_id: int) -> RuleSuggestion:
    """The one owner check for a rule card; a foreign or missing id is a 404."""
    try:
        return RuleSuggestion.objects.select_related("agent", "change_set").get(
            pk=suggestion_id, user=user
        )
    except (RuleSuggestion.DoesNotExist, ValueError, TypeError):
        raise Http404("No such rule card.") from None


def target_file(suggestion: RuleSuggestion) -> str:
    """The file a rule goes to, for the card's preview (a pure read: no scope is created)."""
    target = suggestion.target
    if target in (RuleSuggestion.Target.SKILL, RuleSuggestion.Target.NEW_SKILL):
        path = skill_note_path(suggestion.skill_addon, suggestion.skill_name)
        return f"{scope_folder(MemoryScope(kind=MemoryScope.Kind.USER))}/{path}"
    if target == RuleSuggestion.Target.AGENT and suggestion.agent is not None:
        scope = MemoryScope(kind=MemoryScope.Kind.AGENT, agent=suggestion.agent)
    elif target == RuleSuggestion.Target.CONVERSATION and suggestion.conversation.binding:
        scope = MemoryScope(kind=MemoryScope.Kind.CHANNEL, binding=suggestion.conversation.binding)
    else:
        scope = MemoryScope(kind=MemoryScope.Kind.USER)
    return f"{scope_folder(scope)}/{INDEX_PATH}"


def target_label(suggestion: RuleSuggestion) -> str:
    if suggestion.target == RuleSuggestion.Target.SKILL:
        return gettext("the learned rules of the skill %(title)s") % {
            "title": suggestion.skill_title
        }
    if suggestion.target == RuleSuggestion.Target.NEW_SKILL:
        return gettext("a new skill, %(title)s, that starts with this rule") % {
            "title": suggestion.skill_title
        }
    if suggestion.target == RuleSuggestion.Target.AGENT and suggestion.agent is not None:
        return gettext("Memory of %(agent)s") % {"agent": suggestion.agent.name}
    if suggestion.target == RuleSuggestion.Target.CONVERSATION:
        return gettext("This conversation's memory")
    return gettext("Your memory")


def undo_open(suggestion: RuleSuggestion) -> bool:
    return (
        suggestion.state == RuleSuggestion.State.SAVED
        and suggestion.saved_at is not None
        and timezone.now() - suggestion.saved_at
        <= timedelta(seconds=settings.LEARNING_UNDO_SECONDS)
    )


@dataclass(frozen=True)
class RuleCard:
    template: ClassVar[str] = "learning/_rule_card.html"
    suggestion: RuleSuggestion
    file: str  # where the rule goes, as the Files page shows it
    label: str
    undo_open: bool
    undo_until: str  # ISO time after which the page hides Undo
    choices: Sequence[TargetChoice] = ()  # Save to, for a card that waits
    chosen: str = ""

    @property
    def pk(self) -> int:
        return int(self.suggestion.pk)


def rule_cards_for(user_id: int, message_ids: list[int]) -> dict[int, list[RuleCard]]:
    """Cards under answers (detected) and notices under own messages (manual): one query."""
    if not message_ids:
        return {}
    now = timezone.now()
    shown = Q(state__in=[RuleSuggestion.State.PENDING, RuleSuggestion.State.SAVED]) | Q(
        state=RuleSuggestion.State.POSTPONED, ask_again_at__lte=now
    )
    shown |= Q(state=RuleSuggestion.State.UNDONE)
    detected = Q(origin=RuleSuggestion.Origin.DETECTED, answer_id__in=message_ids)
    rows = (
        RuleSuggestion.objects.filter(user_id=user_id)
        .filter(
            (detected & shown)
            | Q(
                origin=RuleSuggestion.Origin.MANUAL,
                user_message_id__in=message_ids,
                state__in=[RuleSuggestion.State.SAVED, RuleSuggestion.State.UNDONE],
            )
        )
        .select_related("agent", "conversation__binding")
    )
    cards: dict[int, list[RuleCard]] = {}
    for row in rows:
        key = row.answer_id if row.origin == RuleSuggestion.Origin.DETECTED else row.user_message_id
        if key is None:
            continue
        until = (
            row.saved_at + timedelta(seconds=settings.LEARNING_UNDO_SECONDS)
            if row.saved_at
            else now
        )
        cards.setdefault(key, []).append(
            RuleCard(row, target_file(row), target_label(row), undo_open(row), until.isoformat())
        )
    return cards


@dataclass(frozen=True)
class TriageView:
    """A triage card under its answer (M20): the waiting card, or its one-line outcome."""

    template: ClassVar[str] = "learning/_triage_card.html"
    card: TriageCard
    options: Sequence[tuple[int, Option]]  # numbered as stored, the recommended first
    choices: Sequence[TargetChoice] = ()  # Save to of the Permanent rule
    wait_minutes: int = 10
    rule_offered: bool = True  # no Permanent rule in a temporary chat (M22)

    @property
    def pk(self) -> int:
        return int(self.card.pk)

    @property
    def chosen_title(self) -> str:
        chosen = self.card.chosen
        return next((o.title for n, o in self.options if n == chosen), "")


def triage_for_user(user: User, card_id: int) -> TriageCard:
    """The one owner check for a triage card; a foreign or missing id is a 404."""
    try:
        return TriageCard.objects.select_related("user_message", "conversation").get(
            pk=card_id, user=user
        )
    except (TriageCard.DoesNotExist, ValueError, TypeError):
        raise Http404("No such triage card.") from None


def triage_inbox_section(request: HttpRequest, user: User) -> str:
    """Triage cards that wait for the person, as an Inbox section (registered in
    learning/apps.py)."""
    rows = (
        TriageCard.objects.filter(
            user=user, state=TriageCard.State.WAITING, conversation__closed_at__isnull=True
        )
        .select_related("conversation")
        .order_by("created_at")
    )
    waiting = [
        {
            "text": gettext("A triage card waits in “%(title)s”.") % {"title": row.conversation},
            "url": f"{reverse('chat_conversation', args=[row.conversation_id])}"
            f"#triage-card-{row.pk}",
            "temporary": row.conversation.temporary,
        }
        for row in rows
    ]
    if not waiting:
        return ""
    return render_to_string("learning/_inbox_triage.html", {"waiting": waiting}, request)


def triage_cards_for(
    conversation: Conversation, message_ids: list[int]
) -> dict[int, list[TriageView]]:
    """The triage cards of these answers that show something (one query, and the Save to
    choices once for a waiting card)."""
    rows = TriageCard.objects.filter(
        user_id=conversation.owner_id, answer_id__in=message_ids
    ).exclude(state=TriageCard.State.SIMPLE)
    cards: dict[int, list[TriageView]] = {}
    for row in rows:
        choices: list[TargetChoice] = []
        if row.state == TriageCard.State.WAITING and not conversation.temporary:
            fits = TargetChoice("", gettext("Where it fits (first fit wins)"))
            anywhere = RuleTarget(RuleSuggestion.Target.USER)
            choices = [fits, *target_choices(conversation.owner, conversation, "", anywhere)]
        options = [(n, option_from_stored(o)) for n, o in enumerate(row.options)]
        wait = max(1, settings.TRIAGE_CARD_WAIT_SECONDS // 60)
        cards.setdefault(row.answer_id, []).append(
            TriageView(row, options, choices, wait, rule_offered=not conversation.temporary)
        )
    return cards


def rules_under_messages(
    conversation: Conversation,
    messages: Sequence[Message],
    policy: Policy | None,
    *,
    with_cards: bool,
) -> UnderMessages:
    """The rule cards and the off reason the chat shows under its messages (registered in
    learning/apps.py). with_cards=False when none can exist yet (an answer being written)."""
    learning_reason = learning_off_reason(conversation.owner, conversation, policy)
    cards = rule_cards_for(conversation.owner_id, [m.pk for m in messages]) if with_cards else {}
    detected = any(
        c.suggestion.origin == RuleSuggestion.Origin.DETECTED for row in cards.values() for c in row
    )
    if detected and (
        learning_reason or rule_detection_off_reason(conversation.owner, conversation, policy)
    ):
        # A card that waits from before stays silent while detection is off (M13).
        cards = {
            key: [c for c in row if c.suggestion.origin != RuleSuggestion.Origin.DETECTED]
            for key, row in cards.items()
        }
    choices: list[TargetChoice] = []
    if not learning_reason and any(m.role == Message.Role.USER for m in messages):
        # "Remember as rule…" under each own message: where it fits, or a target picked.
        fits = TargetChoice("", gettext("Where it fits (first fit wins)"))
        anywhere = RuleTarget(RuleSuggestion.Target.USER)
        choices = [
            fits,
            *target_choices(conversation.owner, conversation, "", anywhere, policy),
        ]
    with_choices = _with_choices(conversation, cards, policy)
    shown: dict[int, list[object]] = {key: list(row) for key, row in with_choices.items()}
    # Triage cards are not rule learning: they show whatever learning's state, and also
    # under an answer being written (a parked turn waits under its card).
    answers = [m.pk for m in messages if m.role == Message.Role.ASSISTANT]
    for key, row in triage_cards_for(conversation, answers).items():
        shown.setdefault(key, []).extend(row)
    return UnderMessages(cards=shown, off_reason=learning_reason, choices=choices)


def _with_choices(
    conversation: Conversation, cards: dict[int, list[RuleCard]], policy: Policy | None
) -> dict[int, list[RuleCard]]:
    """A waiting card offers Save to: where the router sent the rule, and the others."""
    waiting = (RuleSuggestion.State.PENDING, RuleSuggestion.State.POSTPONED)
    for row in cards.values():
        for index, card in enumerate(row):
            s = card.suggestion
            if s.state not in waiting:
                continue
            routed = RuleTarget(s.target, s.skill_addon, s.skill_name, s.skill_title)
            row[index] = replace(
                card,
                choices=target_choices(conversation.owner, conversation, s.text, routed, policy),
                chosen=routed.choice,
            )
    return cards


def reference_for_user(user: User, reference_id: int) -> ReferenceFile:
    return get_object_or_404(ReferenceFile, pk=reference_id, owner=user)


def cleanup_job_for_user(user: User, job_id: int) -> CleanupJob:
    return get_object_or_404(CleanupJob.objects.select_related("scope"), pk=job_id, user=user)
