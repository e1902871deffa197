"""A write that committed is answered as done even when the job broker is away: a 500
after the save made retrying clients store the same note or message twice."""

from __future__ import annotations

import pytest
from celery import Celery
from kombu.exceptions import OperationalError

from bridges.models import EventEndpoint, OutboxEvent
from bridges.services import endpoint_create
from chat.models import Conversation, Message
from memory_addon.models import ChangeSet
from tests.factories import AIProfileFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def broker_down(monkeypatch) -> list[str]:
    tried: list[str] = []

    def refuse(self: Celery, name: str, *args: object, **kwargs: object) -> None:
        tried.append(name)
        raise OperationalError("Error 111 connecting to the broker. Connection refused.")

    monkeypatch.setattr(Celery, "send_task", refuse)
    return tried


def test_a_note_added_while_the_broker_is_down_is_saved_once_and_answered_201(
    api, scope, user, broker_down
):
    endpoint_create(owner=user, url="http://127.0.0.1:9/hook", event_types=["memory.changed"])
    response = api.post(f"/api/memory/scopes/{scope.pk}/notes", {"text": "likes green tea"})
    assert response.status_code == 201, response.content
    # The outgoing event was stored in the outbox; only its prompt sender was lost, and
    # the bridges sweep sends it once the broker is back.
    assert broker_down == ["bridges.endpoint_deliver"]
    assert OutboxEvent.objects.filter(endpoint__in=EventEndpoint.objects.all()).count() == 1
    assert ChangeSet.objects.filter(scope=scope).count() == 1


def test_a_chat_message_sent_while_the_broker_is_down_is_stored_and_answered_202(
    client, user, broker_down
):
    profile = AIProfileFactory(owner=user, is_default=True)
    conversation = Conversation.objects.create(owner=user, ai_profile=profile)
    client.force_login(user)
    response = client.post(
        f"/api/chat/conversations/{conversation.pk}/messages",
        {"text": "Hello"},
        content_type="application/json",
    )
    assert response.status_code == 202, response.content
    assert broker_down == ["chat.turn_run"]
    # The answer waits as queued; the chat reaper tells the person if no worker takes it.
    assert list(conversation.messages.values_list("role", "state")) == [
        (Message.Role.USER, Message.State.COMPLETE),
        (Message.Role.ASSISTANT, Message.State.STREAMING),
    ]
