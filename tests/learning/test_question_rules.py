"""The permanent rule of an answered question (M19): saved only with the answer, as one
change set through the rule-save path, undoable, in the audit; refused like every rule."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from addons.services import addon_setting_put
from chat.models import Conversation, Message, Question
from learning.models import RuleSuggestion
from memory_addon.models import ChangeSet, MemoryFile
from memory_addon.services.scopes import ensure_agent_scope, ensure_user_scope
from tests.factories import AgentFactory

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("unconsumed_chat_queue"),
]

RULE = "Always plan trips by train."


def waiting_question(conversation: Conversation) -> Question:
    Message.objects.create(conversation=conversation, role="user", content="Plan my trip")
    answer = Message.objects.create(
        conversation=conversation,
        role="assistant",
        state=Message.State.WAITING,
        tool_calls=[{"round": 1, "id": "q1", "name": "ask_person", "ok": True, "result": ""}],
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


def post_answer(client, question: Question, **fields: str):
    data = {"choice": "Train", "other": "", "rule": RULE, "save_to": "user", **fields}
    url = reverse("chat_question_answer", args=[question.pk])
    return client.post(url, data, HTTP_HX_REQUEST="true")


def index_text(person) -> str:
    row = MemoryFile.objects.filter(scope=ensure_user_scope(person), path="index.md").first()
    return row.content if row else ""


def test_the_rule_is_one_undoable_change_set_in_the_audit(client, person, conversation):
    client.force_login(person)
    question = waiting_question(conversation)
    before = ChangeSet.objects.count()
    response = post_answer(client, question)
    assert response.status_code == 200
    assert "You answered: Train" in response.content.decode()
    assert ChangeSet.objects.count() == before + 1
    change_set = ChangeSet.objects.latest("pk")
    assert change_set.summary == f"Rule: {RULE}"
    assert RULE in index_text(person)
    question.refresh_from_db()
    assert question.state == Question.State.ANSWERED and question.rule == RULE
    # The person's own change is in the scope's history (the audit page lists the
    # changes saved without asking) ...
    history = client.get(reverse("memory_history", args=[ensure_user_scope(person).pk]))
    (change,) = change_set.changes.all()
    assert f'id="version-{change.pk}"' in history.content.decode()
    # ... and the rule notice under the person's message undoes it, as for every rule.
    suggestion = RuleSuggestion.objects.get(change_set=change_set)
    assert suggestion.state == RuleSuggestion.State.SAVED
    client.post(reverse("learning_rule_undo", args=[suggestion.pk]))
    assert RULE not in index_text(person)


def test_the_rule_goes_to_the_agents_memory_when_saved_there(client, person, profile):
    agent = AgentFactory(owner=person, memory_allowed=True)
    conversation = Conversation.objects.create(owner=person, ai_profile=profile, agent=agent)
    client.force_login(person)
    question = waiting_question(conversation)
    assert post_answer(client, question, save_to="agent").status_code == 200
    assert RULE in MemoryFile.objects.get(scope=ensure_agent_scope(agent)).content
    assert RULE not in index_text(person)


def refuse_by_never(settings, person) -> None:
    addon_setting_put(user=person, addon="memory", key="save-mode", value="never")


def refuse_by_kill_switch(settings, person) -> None:
    settings.MEMORY_AI_MEMORY = "off"


@pytest.mark.parametrize(
    ("refuse", "rule", "named"),
    [
        (refuse_by_never, RULE, "never to save"),
        (refuse_by_kill_switch, RULE, "MEMORY_AI_MEMORY=off"),
        (None, "Log in with the password Sonnenblume-42-Hut on the booking site", "The rule:"),
    ],
    ids=["save mode never", "kill switch", "secret guard"],
)
def test_a_refused_rule_keeps_the_card_open_and_names_the_rule_field(
    client, person, conversation, settings, refuse, rule, named
):
    if refuse:
        refuse(settings, person)
    client.force_login(person)
    question = waiting_question(conversation)
    before = ChangeSet.objects.count()
    response = post_answer(client, question, rule=rule)
    body = response.content.decode()
    assert response.status_code == 200
    assert f'id="question-{question.pk}-rule-error"' in body and named in body
    assert 'aria-invalid="true"' in body
    assert rule in body  # what was typed is kept
    question.refresh_from_db()
    assert question.state == Question.State.WAITING  # not answered: nothing went on
    assert ChangeSet.objects.count() == before
    assert Message.objects.get(pk=question.message_id).state == Message.State.WAITING
