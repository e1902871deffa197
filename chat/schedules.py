"""Scheduled runs (H9): a prompt answered in the background, written as a conversation.

Such runs are Turn(run_kind="scheduled"): the memory tools refuse to save notes, and
retrieval searches only collections that opted in to autonomous runs.
"""

from __future__ import annotations

from datetime import datetime, time, timedelta

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from accounts.models import User
from chat.models import Conversation, Message, Schedule
from chat.services import (
    ChatRefused,
    _answer_placeholder,
    _enqueue_on_commit,
    _owned_agent,
    _owned_profile,
    _owned_stores,
    checked_fits,
)

MIN_EVERY_MINUTES = 5


def next_run(*, every_minutes: int | None, daily_at: time | None, after: datetime) -> datetime:
    if every_minutes:
        return after + timedelta(minutes=every_minutes)
    if daily_at is None:
        raise ChatRefused(gettext("Choose an interval in minutes or a daily time."))
    candidate = datetime.combine(after.date(), daily_at, tzinfo=after.tzinfo)
    return candidate if candidate > after else candidate + timedelta(days=1)


def schedule_create(
    *,
    user: User,
    name: str,
    prompt: str,
    profile_id: int | None,
    agent_id: int | None = None,
    store_ids: list[int] | None = None,
    every_minutes: int | None = None,
    daily_at: time | None = None,
) -> Schedule:
    name, prompt = name.strip(), prompt.strip()
    if not name or not prompt:
        raise ChatRefused(gettext("A schedule needs a name and a prompt."))
    if every_minutes is not None and every_minutes < MIN_EVERY_MINUTES:
        raise ChatRefused(
            gettext("Runs can be at most every %(minutes)s minutes.")
            % {"minutes": MIN_EVERY_MINUTES}
        )
    profile = _owned_profile(user, profile_id)
    if profile is None:
        raise ChatRefused(gettext("Choose an AI profile for the schedule."))
    checked_fits(profile, prompt)
    with transaction.atomic(durable=True):
        schedule = Schedule.objects.create(
            owner=user,
            name=name[:120],
            prompt=prompt,
            ai_profile=profile,
            agent=_owned_agent(user, agent_id),
            every_minutes=every_minutes,
            daily_at=daily_at,
            next_run_at=next_run(
                every_minutes=every_minutes, daily_at=daily_at, after=timezone.now()
            ),
        )
        schedule.stores.set(_owned_stores(user, store_ids or []))
    return schedule


def schedule_delete(*, schedule: Schedule) -> None:
    schedule.delete()


def schedule_run(*, schedule: Schedule) -> Message:
    """Start one run now: a new conversation with the prompt, answered in the background."""
    now = timezone.now()
    with transaction.atomic(durable=True):
        conversation = Conversation.objects.create(
            owner=schedule.owner,
            ai_profile=schedule.ai_profile,
            agent=schedule.agent,
            title=f"{schedule.name} · {now:%Y-%m-%d %H:%M} UTC"[:200],
            run_kind="scheduled",
        )
        conversation.stores.set(list(schedule.stores.all()))
        Message.objects.create(
            conversation=conversation, role=Message.Role.USER, content=schedule.prompt
        )
        answer = _answer_placeholder(conversation)
        Schedule.objects.filter(pk=schedule.pk).update(
            last_run_at=now, last_conversation=conversation
        )
        _enqueue_on_commit(answer)
    return answer


def schedules_due() -> int:
    """Start every due run once: each schedule is claimed by moving its next run first."""
    now = timezone.now()
    started = 0
    for schedule in Schedule.objects.filter(enabled=True, next_run_at__lte=now).select_related(
        "ai_profile", "agent", "owner"
    ):
        following = next_run(
            every_minutes=schedule.every_minutes, daily_at=schedule.daily_at, after=now
        )
        claimed = Schedule.objects.filter(pk=schedule.pk, next_run_at=schedule.next_run_at).update(
            next_run_at=following
        )
        if claimed:
            schedule_run(schedule=schedule)
            started += 1
    return started


__all__ = [
    "next_run",
    "schedule_create",
    "schedule_delete",
    "schedule_run",
    "schedules_due",
]
