"""Every write of the chat: conversations, sending, stop, retry, edit, the reaper."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone
from django.utils.translation import gettext, ngettext

from accounts.models import Agent, AIProfile, User
from chat.models import Conversation, Message
from chat.prompt import message_fits, room_for_prompt
from host.core.tokens import estimate_tokens
from host.errors import ChangeRefused
from host.queue import queue_job_on_commit
from knowledge.models import Store
from knowledge.selectors import stores_readable_by
from memory_addon.turns import RunKind

logger = logging.getLogger(__name__)
TITLE_CHARS = 60
MAX_MESSAGE_CHARS = 32_000


class ChatRefused(ChangeRefused):
    """A chat action the current state does not allow; the message is for people."""


class AnswersBusy(ChatRefused):
    """The person already has CHAT_MAX_ANSWERS_IN_FLIGHT answers being written."""

    status = 429


def _title_from(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"


def _owned_profile(user: User, profile_id: int | None) -> AIProfile | None:
    """The person's profile that is to answer: every path that picks a conversation's or a
    schedule's model (page, htmx, REST, the header) goes through here."""
    if not profile_id:
        return None
    profile = AIProfile.objects.filter(pk=profile_id, owner=user).first()
    if profile is None:
        raise ChatRefused(gettext("No such AI profile."))
    if profile.role == AIProfile.Role.EMBEDDING:
        raise ChatRefused(gettext("An embedding profile cannot answer in a chat."))
    return profile


def _owned_agent(user: User, agent_id: int | None) -> Agent | None:
    if not agent_id:
        return None
    agent = Agent.objects.filter(pk=agent_id, owner=user).first()
    if agent is None:
        raise ChatRefused(gettext("No such agent."))
    return agent


def _owned_stores(user: User, store_ids: list[int]) -> list[Store]:
    stores = list(stores_readable_by(user).filter(pk__in=store_ids))
    if len(stores) != len(set(store_ids)):
        raise ChatRefused(gettext("No such collection."))
    return stores


def default_profile(user: User) -> AIProfile | None:
    rows = AIProfile.objects.filter(owner=user).exclude(role=AIProfile.Role.EMBEDDING)
    return rows.order_by("-is_default", "name").first()


def conversation_create(
    *,
    user: User,
    profile_id: int | None = None,
    agent_id: int | None = None,
    store_ids: list[int] | None = None,
    memory_on: bool = True,
    title: str = "",
    run_kind: RunKind = "interactive",
    temporary: bool = False,
) -> Conversation:
    """A new conversation. temporary (M22): memory_on is then its "reads memory" choice,
    and starting any conversation closes the person's open temporary ones (they left)."""
    profile = _owned_profile(user, profile_id) or default_profile(user)
    if profile is None:
        raise ChatRefused(
            gettext("Add an AI profile under Settings before you start a conversation.")
        )
    if temporary and run_kind != "interactive":
        raise ChatRefused(gettext("Only a conversation with a person can be temporary."))
    with transaction.atomic(durable=True):
        _temporary_close_all(user)
        conversation = Conversation.objects.create(
            owner=user,
            ai_profile=profile,
            agent=_owned_agent(user, agent_id),
            memory_on=memory_on,
            title=title[:200],
            run_kind=run_kind,
            temporary=temporary,
        )
        conversation.stores.set(_owned_stores(user, store_ids or []))
    return conversation


def _temporary_close(rows: QuerySet[Conversation]) -> int:
    """Closed temporary conversations are deleted at once; one whose answer is still
    being written is stopped and marked closed (hidden everywhere), and the purge
    deletes it once the answer ended, so no row goes from under a worker. A parked
    answer (M19) has no worker and goes at once. Returns how many were deleted."""
    # Locked first: a message sent meanwhile waits, and is then deleted with them.
    ids = list(rows.filter(temporary=True).select_for_update().values_list("pk", flat=True))
    streaming = Message.objects.filter(conversation_id__in=ids, state=Message.State.STREAMING)
    for message in streaming:
        stop_request(message)
    running = set(streaming.values_list("conversation_id", flat=True))
    Conversation.objects.filter(pk__in=running, closed_at__isnull=True).update(
        closed_at=timezone.now()
    )
    _, per_model = Conversation.objects.filter(pk__in=set(ids) - running).delete()
    return per_model.get(Conversation._meta.label, 0)


def _temporary_close_all(user: User) -> None:
    _temporary_close(Conversation.objects.filter(owner=user, closed_at__isnull=True))


def temporary_conversation_end(*, conversation: Conversation) -> None:
    """ "End temporary chat": the conversation and its messages are gone."""
    if not conversation.temporary:
        raise ChatRefused(gettext("Only a temporary chat can be ended; delete this one instead."))
    with transaction.atomic(durable=True):
        _temporary_close(Conversation.objects.filter(pk=conversation.pk))


def temporary_conversations_purge() -> int:
    """The beat job: temporary conversations closed, or started more than
    CHAT_TEMPORARY_KEEP_HOURS ago, are deleted once no answer of theirs runs."""
    started_before = timezone.now() - timedelta(hours=settings.CHAT_TEMPORARY_KEEP_HOURS)
    due = Conversation.objects.filter(temporary=True).filter(
        Q(closed_at__isnull=False) | Q(created_at__lt=started_before)
    )
    with transaction.atomic(durable=True):
        return _temporary_close(due)


def conversation_update(
    *,
    user: User,
    conversation: Conversation,
    profile_id: int | None,
    agent_id: int | None,
    store_ids: list[int] | None,
    memory_on: bool,
) -> Conversation:
    """The pickers: profile, agent, collections and memory apply from the next turn on.
    No profile id keeps the profile, and store_ids None keeps the collections (the
    header changes those one at a time)."""
    with transaction.atomic(durable=True):
        conversation.ai_profile = _owned_profile(user, profile_id) or conversation.ai_profile
        conversation.agent = _owned_agent(user, agent_id)
        conversation.memory_on = memory_on
        conversation.save(update_fields=["ai_profile", "agent", "memory_on", "updated_at"])
        if store_ids is not None:
            conversation.stores.set(_owned_stores(user, store_ids))
    return conversation


# The header's pickers. A change while an answer is written is allowed: the runner read
# the profile and collections when the answer started, so the change counts from the next.


def conversation_profile_set(
    *, user: User, conversation: Conversation, profile_id: int | None
) -> Conversation:
    profile = _owned_profile(user, profile_id)
    if profile is None:
        raise ChatRefused(gettext("Choose an AI profile."))
    conversation.ai_profile = profile
    conversation.save(update_fields=["ai_profile", "updated_at"])
    return conversation


def conversation_store_add(
    *, user: User, conversation: Conversation, store_id: int | None
) -> Store:
    if not store_id:
        raise ChatRefused(gettext("Choose a collection to add."))
    (store,) = _owned_stores(user, [store_id])
    conversation.stores.add(store)
    conversation.save(update_fields=["updated_at"])
    return store


def conversation_store_remove(*, conversation: Conversation, store_id: int) -> None:
    """Detach a collection; the collection itself stays as it is."""
    if not conversation.stores.filter(pk=store_id).exists():
        raise ChatRefused(gettext("That collection is not attached to this conversation."))
    conversation.stores.remove(store_id)
    conversation.save(update_fields=["updated_at"])


def conversation_rename(*, conversation: Conversation, title: str) -> Conversation:
    title = " ".join(title.split())[:200]
    if not title:
        raise ChatRefused(gettext("A title cannot be empty."))
    conversation.title = title
    conversation.save(update_fields=["title", "updated_at"])
    return conversation


def conversation_delete(*, conversation: Conversation) -> None:
    with transaction.atomic(durable=True):
        for message in conversation.messages.filter(state=Message.State.STREAMING):
            stop_request(message)
        conversation.delete()


def _enqueue_on_commit(message: Message) -> None:
    queue_job_on_commit("chat.turn_run", message.pk, queue=settings.CHAT_QUEUE)


def answers_in_flight(user_id: int) -> int:
    """Answers of this person's conversations that a worker is writing or about to."""
    return Message.objects.filter(
        conversation__owner_id=user_id, state=Message.State.STREAMING
    ).count()


def _check_fair_share(user_id: int) -> None:
    # The person's row is the lock: two sends in two conversations cannot both pass.
    list(User.objects.select_for_update().filter(pk=user_id).values_list("pk"))
    limit = settings.CHAT_MAX_ANSWERS_IN_FLIGHT
    if answers_in_flight(user_id) >= limit:
        raise AnswersBusy(
            ngettext(
                "%(count)s answer of yours is still being written; wait for it to finish "
                "(or stop it), then send again.",
                "%(count)s answers of yours are still being written; wait for one to finish "
                "(or stop it), then send again.",
                limit,
            )
            % {"count": limit}
        )


def _locked_idle(user: User, conversation: Conversation) -> Conversation:
    """The conversation's row, locked, once no answer of it is being written. A temporary
    chat may be deleted between the page's read and this lock (ended in another tab)."""
    locked = Conversation.objects.select_for_update().filter(pk=conversation.pk, owner=user).first()
    if locked is None:
        raise ChatRefused(gettext("This conversation was deleted meanwhile."))
    _check_idle(locked)
    return locked


def _check_idle(conversation: Conversation) -> None:
    if conversation.closed_at is not None:
        raise ChatRefused(gettext("This temporary chat was ended; start a new conversation."))
    if conversation.messages.filter(state=Message.State.STREAMING).exists():
        raise ChatRefused(
            gettext("An answer is still being written; wait for it or stop it first.")
        )
    _check_fair_share(conversation.owner_id)


def _answer_placeholder(conversation: Conversation) -> Message:
    now = timezone.now()
    profile = conversation.ai_profile
    return Message.objects.create(
        conversation=conversation,
        role=Message.Role.ASSISTANT,
        state=Message.State.STREAMING,
        model=profile.model if profile else "",
        heartbeat_at=now,
    )


def _checked_text(text: str) -> str:
    text = text.strip()
    if not text:
        raise ChatRefused(gettext("Write a message first."))
    if len(text) > MAX_MESSAGE_CHARS:
        raise ChatRefused(
            gettext("A message can have at most %(limit)s characters.")
            % {"limit": MAX_MESSAGE_CHARS}
        )
    return text


def checked_fits(profile: AIProfile | None, text: str) -> None:
    """Refused before it is stored: a message longer than the model can read at all.
    A path that stores without asking (a bridge's message) fails at the turn instead
    (chat/prompt.py, prepare)."""
    if profile is not None and not message_fits(profile.context_window, text):
        raise ChatRefused(
            gettext(
                "This message is too long for %(model)s: it reads at most about %(room)s "
                "tokens, and this message alone is about %(size)s. Shorten it, attach it "
                "as a file, or pick a model with a larger context window."
            )
            % {
                "model": profile.name,
                "room": f"{room_for_prompt(profile.context_window):,}",
                "size": f"{estimate_tokens(text):,}",
            }
        )


def _send_locked(locked: Conversation, text: str) -> Message:
    """The person's message and its answer to be written, in the caller's transaction."""
    checked_fits(locked.ai_profile, text)
    Message.objects.create(conversation=locked, role=Message.Role.USER, content=text)
    if not locked.title:
        locked.title = _title_from(text)
    locked.save(update_fields=["title", "updated_at"])
    answer = _answer_placeholder(locked)
    _enqueue_on_commit(answer)
    return answer


def message_send(*, user: User, conversation: Conversation, text: str) -> Message:
    """Store the person's message and an answer to be written; returns the answer."""
    text = _checked_text(text)
    if conversation.ai_profile is None:
        raise ChatRefused(gettext("This conversation has no AI profile; pick one first."))
    with transaction.atomic(durable=True):
        locked = _locked_idle(user, conversation)
        answer = _send_locked(locked, text)
    conversation.title = locked.title
    return answer


def _last_messages(conversation: Conversation) -> tuple[Message | None, Message | None]:
    last_user = conversation.messages.filter(role=Message.Role.USER).order_by("-created_at", "-id")
    user_message = last_user.first()
    answer = None
    if user_message is not None:
        answer = (
            conversation.messages.filter(role=Message.Role.ASSISTANT, pk__gt=user_message.pk)
            .order_by("-id")
            .first()
        )
    return user_message, answer


def answer_regenerate(*, user: User, conversation: Conversation) -> Message:
    """Write the last answer again (also the Retry of a failed one)."""
    with transaction.atomic(durable=True):
        locked = _locked_idle(user, conversation)
        user_message, answer = _last_messages(locked)
        if user_message is None:
            raise ChatRefused(gettext("There is no message to answer yet."))
        checked_fits(locked.ai_profile, user_message.content)  # the model may have changed
        if answer is not None:
            answer.delete()
        locked.save(update_fields=["updated_at"])
        new_answer = _answer_placeholder(locked)
        _enqueue_on_commit(new_answer)
    return new_answer


def last_message_edit(*, user: User, conversation: Conversation, text: str) -> Message:
    """Change the person's last message and answer it again."""
    text = _checked_text(text)
    with transaction.atomic(durable=True):
        locked = _locked_idle(user, conversation)
        checked_fits(locked.ai_profile, text)
        user_message, _ = _last_messages(locked)
        if user_message is None:
            raise ChatRefused(gettext("There is no message to edit."))
        locked.messages.filter(pk__gt=user_message.pk).delete()
        user_message.content = text
        user_message.save(update_fields=["content"])
        locked.save(update_fields=["updated_at"])
        answer = _answer_placeholder(locked)
        _enqueue_on_commit(answer)
    return answer


def message_edit(*, user: User, message: Message, text: str) -> Message:
    """Edit one of the person's messages and answer it; returns the answer.

    The last message is changed in place (last_message_edit). An earlier one starts a
    new conversation instead: a copy of the history before it, then the edited text as
    its next turn, with edited_from naming the original, which stays untouched. A copy
    keeps every later turn of the original readable, and needs no branch switcher.
    """
    text = _checked_text(text)
    original = message.conversation
    if message.role != Message.Role.USER or original.owner_id != user.pk:
        raise ChatRefused(gettext("Only your own messages can be edited."))
    last_user, _ = _last_messages(original)
    if last_user is not None and last_user.pk == message.pk:
        return last_message_edit(user=user, conversation=original, text=text)
    if original.temporary:
        # A copy would be a second temporary chat, and starting one ends the first.
        raise ChatRefused(gettext("In a temporary chat only your last message can be edited."))
    if original.closed_at is not None:
        raise ChatRefused(gettext("This temporary chat was ended; start a new conversation."))
    if original.ai_profile is None:
        raise ChatRefused(gettext("This conversation has no AI profile; pick one first."))
    with transaction.atomic(durable=True):
        # The person's row is the lock: edits go one at a time.
        list(User.objects.select_for_update().filter(pk=user.pk).values_list("pk"))
        repeated = _same_edit_just_made(original, message, text)
        if repeated is not None:  # a second click of the same edit: its answer, once
            return repeated
        _check_fair_share(user.pk)
        _temporary_close_all(user)
        copy = Conversation.objects.create(
            owner=user,
            ai_profile=original.ai_profile,
            agent=original.agent,
            memory_on=original.memory_on,
            title=(gettext("%(title)s (edited)") % {"title": str(original)})[:200],
            edited_from=original,
        )
        # Only collections the person may still read come along.
        copy.stores.set(
            _owned_stores(
                user,
                list(
                    stores_readable_by(user)
                    .filter(pk__in=original.stores.values("pk"))
                    .values_list("pk", flat=True)
                ),
            )
        )
        earlier = original.messages.filter(
            Q(created_at__lt=message.created_at)
            | Q(created_at=message.created_at, pk__lt=message.pk)
        ).order_by("created_at", "id")
        copied = Message.objects.bulk_create(
            Message(
                conversation=copy,
                role=row.role,
                content=row.content,
                tool_calls=row.tool_calls,
                model=row.model,
                usage=row.usage,
                # An answer parked or being written in the original is not in the copy.
                state=row.state if row.state in _SETTLED else Message.State.STOPPED,
                error=row.error,
                sent_along=row.sent_along,
                citations=row.citations,
                started_at=row.started_at,
                first_token_at=row.first_token_at,
                finished_at=row.finished_at,
            )
            for row in earlier
        )
        # The copied turns keep their own times (created_at is set on insert).
        for row, original_row in zip(copied, earlier, strict=True):
            row.created_at = original_row.created_at
        Message.objects.bulk_update(copied, ["created_at"])
        return _send_locked(copy, text)


# A second submit of the same edit within this long is the same edit (a double click,
# a form sent again): it gets the first one's answer instead of a second copy.
SAME_EDIT_SECONDS = 30


def _same_edit_just_made(original: Conversation, message: Message, text: str) -> Message | None:
    since = timezone.now() - timedelta(seconds=SAME_EDIT_SECONDS)
    earlier = original.messages.filter(
        Q(created_at__lt=message.created_at) | Q(created_at=message.created_at, pk__lt=message.pk)
    ).count()
    for copy in Conversation.objects.filter(edited_from=original, created_at__gte=since):
        turns = list(copy.messages.order_by("created_at", "id")[earlier : earlier + 2])
        if len(turns) == 2 and turns[0].role == Message.Role.USER and turns[0].content == text:
            return turns[1]
    return None


_SETTLED = (Message.State.COMPLETE, Message.State.FAILED, Message.State.STOPPED)


def _stop_key(message: Message) -> str:
    # The creation time makes the key unique even where ids restart (a rebuilt database).
    return f"chat:stop:{int(message.pk)}:{message.created_at.timestamp():.6f}"


def stop_request(message: Message) -> None:
    """Ask the worker writing this answer to stop; it checks between chunks."""
    cache.set(_stop_key(message), "1", timeout=3600)


def stop_requested(message: Message) -> bool:
    return bool(cache.get(_stop_key(message)))


def message_stop(*, message: Message) -> None:
    if message.state == Message.State.STREAMING:
        stop_request(message)
