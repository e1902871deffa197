"""Reads of the chat: owner-checked access, the list, and messages with their memory cards."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db.models import Exists, OuterRef, QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404

from accounts.models import Agent, AIProfile, User
from chat.models import Conversation, Message, Question, Schedule
from chat.search import conversation_citations, conversations_search
from chat.under_messages import under_messages
from host.core.markdown import render_markdown
from knowledge.models import Store
from knowledge.selectors import stores_readable_by
from memory_addon.models import ChangeSet, Proposal
from memory_addon.selectors import ProposalRow, proposals_with_diffs
from memory_addon.services.policy import Policy


def conversation_for_user(user: User, conversation_id: int) -> Conversation:
    """The one owner check for a conversation; a foreign or missing id is a 404, and so
    is an ended temporary chat (M22) that waits for the purge."""
    try:
        conversation = Conversation.objects.select_related("ai_profile", "agent").get(
            pk=conversation_id, owner=user, closed_at__isnull=True
        )
    except (Conversation.DoesNotExist, ValueError, TypeError):
        raise Http404("No such conversation.") from None
    conversation.owner = user  # known already: no second read of the person
    return conversation


def message_for_user(user: User, message_id: int) -> Message:
    try:
        return Message.objects.select_related("conversation").get(
            pk=message_id, conversation__owner=user
        )
    except (Message.DoesNotExist, ValueError, TypeError):
        raise Http404("No such message.") from None


def conversations_for_user(user: User) -> QuerySet[Conversation]:
    """Newest first. Temporary chats (M22) are never listed nor found."""
    return Conversation.objects.filter(owner=user, temporary=False).order_by("-updated_at", "-id")


def conversations_listed(user: User, query: str, limit: int) -> list[Conversation]:
    """The conversation list: newest first, or for a query the past-chat search's best
    matches first, by words or meaning (B10)."""
    if not query.strip():
        return list(conversations_for_user(user)[:limit])
    return [hit.conversation for hit in conversations_search(user, query, limit=limit)]


def profiles_for_user(user: User) -> list[AIProfile]:
    return list(
        AIProfile.objects.filter(owner=user)
        .exclude(role=AIProfile.Role.EMBEDDING)
        .order_by("-is_default", "name")
    )


def agents_for_user(user: User) -> list[Agent]:
    return list(Agent.objects.filter(owner=user).order_by("name"))


def stores_for_user(user: User) -> list[Store]:
    return list(stores_readable_by(user).order_by("name"))


@dataclass
class MessageView:
    message: Message
    html: str
    proposals: list[ProposalRow] = field(default_factory=list)
    saved: list[ChangeSet] = field(default_factory=list)
    decided: list[Proposal] = field(default_factory=list)
    # Rule learning (M13): cards under an answer, "Remember as rule…" under own messages.
    rules: Sequence[object] = field(default_factory=list)
    learning_reason: str = ""
    rule_choices: Sequence[object] = ()
    questions: list[Question] = field(default_factory=list)  # M19, in the order asked

    @property
    def pk(self) -> int:
        return int(self.message.pk)


def message_html(message: Message) -> str:
    markers = {int(c["n"]) for c in message.citations if "n" in c}
    if message.role == Message.Role.USER:
        return render_markdown(message.content)
    return render_markdown(
        message.content,
        anchor_prefix=f"cite-{message.pk}-",
        markers=markers,
        conversations=conversation_citations(message),
    )


def message_views(
    conversation: Conversation,
    messages: list[Message],
    policy: Policy | None = None,
    *,
    rule_cards: bool = True,
) -> list[MessageView]:
    """Messages with their proposals and automatic saves; a fixed number of queries.

    policy: the owner's policy when the caller read it already. rule_cards=False when
    none can exist yet (an answer being written: learning looks at it once it is done)."""
    refs = [str(m.pk) for m in messages if m.role == Message.Role.ASSISTANT]
    ref = str(conversation.pk)
    # Proposals and automatic saves come from tool calls: an answer without any (most,
    # and every answer still streaming) has none to look up.
    if not any(m.tool_calls for m in messages if m.role == Message.Role.ASSISTANT):
        refs = []
    proposals: list[Proposal] = []
    saved: list[ChangeSet] = []
    if refs:
        proposals = list(
            Proposal.objects.filter(
                user_id=conversation.owner_id, conversation_ref=ref, message_ref__in=refs
            )
            .select_related("scope__agent", "scope__binding")
            .order_by("created_at", "id")
        )
        saved = list(
            ChangeSet.objects.filter(
                user_id=conversation.owner_id,
                conversation_ref=ref,
                message_ref__in=refs,
                origin=ChangeSet.Origin.AUTOMATIC,
            )
            .annotate(is_undone=Exists(ChangeSet.objects.filter(undoes=OuterRef("pk"))))
            # "Saved to memory" names the notes (from the changes) and the scope's folder.
            .select_related("scope__agent", "scope__binding")
            .prefetch_related("changes")
            .order_by("created_at", "id")
        )
    pending = proposals_with_diffs([p for p in proposals if p.state == Proposal.State.PENDING])
    ref_of = {p.pk: p.message_ref for p in proposals}
    # Learning fills this in (chat/under_messages.py): the chat never imports it.
    learning = under_messages(conversation, messages, policy, with_cards=rule_cards)
    asked: dict[int, list[Question]] = {}
    # Only an answer that called tools can have asked.
    answer_ids = [m.pk for m in messages if m.role == Message.Role.ASSISTANT and m.tool_calls]
    if answer_ids:
        for question in Question.objects.filter(message_id__in=answer_ids):
            asked.setdefault(question.message_id, []).append(question)
    views = []
    for message in messages:
        key = str(message.pk)
        views.append(
            MessageView(
                message=message,
                html=message_html(message),
                proposals=[p for p in pending if ref_of.get(p["id"]) == key],
                saved=[c for c in saved if c.message_ref == key],
                decided=[
                    p
                    for p in proposals
                    if p.message_ref == key and p.state != Proposal.State.PENDING
                ],
                rules=learning.cards.get(message.pk, []),
                learning_reason=learning.off_reason,
                rule_choices=learning.choices,
                questions=asked.get(message.pk, []),
            )
        )
    return views


def message_view(
    message: Message, policy: Policy | None = None, *, rule_cards: bool = True
) -> MessageView:
    return message_views(message.conversation, [message], policy, rule_cards=rule_cards)[0]


def question_for_user(user: User, question_id: int) -> Question:
    """The one owner check for a question; a foreign or missing id is a 404."""
    try:
        return Question.objects.select_related("message__conversation__agent").get(
            pk=question_id, owner=user
        )
    except (Question.DoesNotExist, ValueError, TypeError):
        raise Http404("No such question.") from None


def questions_waiting_for(user: User) -> list[Question]:
    """Every question waiting for the person's answer, oldest first (the Inbox)."""
    return list(
        Question.objects.filter(
            owner=user,
            state=Question.State.WAITING,
            message__conversation__closed_at__isnull=True,
        ).select_related("message__conversation__agent")
    )


def schedule_for_user(user: User, schedule_id: int) -> Schedule:
    return get_object_or_404(Schedule, pk=schedule_id, owner=user)


def conversation_titles(refs: set[tuple[int, int]]) -> dict[str, str]:
    """Titles of conversations by id, each only for its (owner id, id) pair (one query)."""
    rows = Conversation.objects.filter(
        pk__in={pk for _, pk in refs}, owner_id__in={user for user, _ in refs}
    )
    return {str(c.pk): str(c) for c in rows if (c.owner_id, c.pk) in refs}
