"""Questions during a run (M19) over REST: the same service and refusals as the card."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from chat.models import Conversation, Message, Question
from learning.models import RuleSuggestion
from memory_addon.models import ChangeSet
from tests.conftest import Api
from tests.factories import UserFactory

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("unconsumed_chat_queue"),
]


@pytest.fixture
def question(conversation: Conversation) -> Question:
    Message.objects.create(conversation=conversation, role="user", content="Plan my trip")
    answer = Message.objects.create(
        conversation=conversation, role="assistant", state=Message.State.WAITING
    )
    return Question.objects.create(
        owner=conversation.owner,
        message=answer,
        number=1,
        call_id="q1",
        text="Train or plane?",
        why="Only you know.",
        options=["Train", "Plane"],
        expires_at=timezone.now() + timedelta(minutes=10),
    )


@pytest.fixture
def api(client, person) -> Api:
    client.force_login(person)
    return Api(client)


def answer_url(question: Question) -> str:
    return f"/api/chat/questions/{question.pk}/answer"


def test_waiting_questions_are_listed_and_answered(api, question):
    (listed,) = api.get("/api/chat/questions").json()
    assert listed["id"] == question.pk and listed["options"] == ["Train", "Plane"]
    response = api.post(answer_url(question), {"choice": "Plane", "other": "window seat"})
    assert response.status_code == 200
    assert response.json()["answer"] == "Plane — window seat"
    assert Message.objects.get(pk=question.message_id).state == Message.State.STREAMING
    assert api.get("/api/chat/questions").json() == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "choice"),
        ({"choice": "Boat"}, "choice"),
        ({"choice": "Train", "rule": "My password is Sonnenblume-42-Hut"}, "rule"),
        ({"choice": "Train", "rule": "Go by train.", "save_to": "agent"}, "save_to"),
        ({"choice": "Train", "rule": "Go by train.", "save_to": "everyone"}, "save_to"),
        ({"choice": "Train", "rule": "Go by train.", "save_to": "skill:x/else"}, "save_to"),
    ],
    ids=["nothing", "not an option", "secret in the rule", "no agent", "unknown", "no skill"],
)
def test_a_refused_answer_is_a_400_naming_the_field_and_saves_nothing(api, question, body, field):
    before = ChangeSet.objects.count()
    response = api.post(answer_url(question), body)
    assert response.status_code == 400
    assert response.json()["field"] == field and response.json()["detail"]
    question.refresh_from_db()
    assert question.state == Question.State.WAITING
    assert ChangeSet.objects.count() == before


def test_a_second_answer_is_a_409(api, question):
    assert api.post(answer_url(question), {"choice": "Train"}).status_code == 200
    assert api.post(answer_url(question), {"choice": "Plane"}).status_code == 409


def test_a_rule_without_save_to_goes_where_the_router_sends_it(api, question):
    rule = "Always use type hints in Python code."
    response = api.post(answer_url(question), {"choice": "Train", "rule": rule})
    assert response.status_code == 200
    # A known language without a skill: a new skill made by the assistant starts with it.
    saved = RuleSuggestion.objects.get(answer_id=question.message_id)
    assert saved.target == RuleSuggestion.Target.NEW_SKILL and saved.skill_name == "python"


def test_someone_elses_question_is_a_404(client, question):
    client.force_login(UserFactory())
    assert Api(client).post(answer_url(question), {"choice": "Train"}).status_code == 404
