"""Scheduled runs (H9): started once when due, cannot save notes, opt-in retrieval only."""

from __future__ import annotations

import json
from datetime import UTC, datetime, time, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from chat.models import Conversation, Message, Schedule
from chat.runner import turn_run
from chat.schedules import next_run, schedule_create, schedules_due
from knowledge.models import Chunk, Document, Source
from knowledge.services import store_create
from memory_addon.models import Proposal
from tests.factories import AIProfileFactory, UserFactory

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("unconsumed_chat_queue"),
]


def add_chunk(store, path: str, text: str) -> None:
    source = Source.objects.create(
        store=store, kind=Source.Kind.UPLOAD, path=f"/u/{path}", chunk_count=1
    )
    document = Document.objects.create(source=source, path=path, sha256="x", format="text", size=1)
    Chunk.objects.create(
        document=document, store=store, source=source, ordinal=0, text=text, token_count=5
    )


def due_schedule(person, profile, **kwargs) -> Schedule:
    schedule = schedule_create(
        user=person,
        name="Morning",
        prompt="Summarize the alpaca notes",
        profile_id=profile.pk,
        every_minutes=60,
        **kwargs,
    )
    Schedule.objects.filter(pk=schedule.pk).update(
        next_run_at=timezone.now() - timedelta(minutes=1)
    )
    return schedule


def test_a_due_schedule_starts_one_run_and_moves_its_next_run(person, profile):
    schedule = due_schedule(person, profile)
    assert schedules_due() == 1
    assert schedules_due() == 0
    schedule.refresh_from_db()
    assert schedule.next_run_at > timezone.now() + timedelta(minutes=58)
    conversation = Conversation.objects.get(owner=person)
    assert conversation.run_kind == "scheduled"
    assert schedule.last_conversation == conversation
    roles = list(conversation.messages.values_list("role", "state"))
    assert roles == [("user", "complete"), ("assistant", "streaming")]


def test_a_scheduled_run_cannot_save_notes_and_the_tool_says_so(fake_openai, person, profile):
    due_schedule(person, profile)
    schedules_due()
    answer = Message.objects.get(role="assistant")
    fake_openai.chat_replies += [
        {
            "tool_calls": [
                {
                    "name": "propose_change",
                    "arguments": json.dumps({"action": "add", "text": "- x: y"}),
                }
            ]
        },
        {"content": "I cannot save notes in a scheduled run."},
    ]
    turn_run(message_id=answer.pk)
    answer.refresh_from_db()
    assert answer.state == Message.State.COMPLETE
    assert answer.tool_calls[0]["ok"] is False
    assert "Scheduled and background runs cannot save notes" in answer.tool_calls[0]["result"]
    assert not Proposal.objects.exists()


def test_a_scheduled_run_searches_only_collections_that_opted_in(fake_openai, person, profile):
    opted = store_create(owner=person, name="Shared", provider="none", autonomous_opt_in=True)
    private = store_create(owner=person, name="Private", provider="none")
    add_chunk(opted, "alpacas.md", "Alpaca notes: alpacas hum when calm.")
    add_chunk(private, "diary.md", "Alpaca notes from my private diary.")
    due_schedule(person, profile, store_ids=[opted.pk, private.pk])
    schedules_due()
    answer = Message.objects.get(role="assistant")
    turn_run(message_id=answer.pk)
    answer.refresh_from_db()
    sent = fake_openai.prompt()
    assert "alpacas hum" in sent and "private diary" not in sent
    assert [c["path"] for c in answer.citations] == ["alpacas.md"]
    assert answer.sent_along["retrieval"]["skipped_stores"] == ["Private"]


def test_daily_runs_are_next_at_that_time():
    after = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
    assert next_run(every_minutes=None, daily_at=time(7, 30), after=after) == datetime(
        2026, 11, 30, 7, 30, tzinfo=UTC
    )
    assert next_run(every_minutes=None, daily_at=time(19, 0), after=after) == datetime(
        2026, 11, 29, 19, 0, tzinfo=UTC
    )


def test_the_schedules_page_creates_and_another_users_schedule_answers_404(client, person, profile):
    client.force_login(person)
    response = client.post(
        reverse("chat_schedules"),
        {"name": "Weekly", "prompt": "Plan my week", "profile": profile.pk, "daily_at": "07:00"},
    )
    assert response.status_code == 302
    schedule = Schedule.objects.get(owner=person)
    assert schedule.daily_at == time(7, 0)
    assert b"Weekly" in client.get(reverse("chat_schedules")).content
    other = UserFactory()
    foreign = schedule_create(
        user=other,
        name="Theirs",
        prompt="x",
        profile_id=AIProfileFactory(owner=other).pk,
        every_minutes=60,
    )
    assert client.post(reverse("chat_schedule_run", args=[foreign.pk])).status_code == 404
    assert client.post(reverse("chat_schedule_delete", args=[foreign.pk])).status_code == 404
    assert Schedule.objects.filter(pk=foreign.pk).exists()
