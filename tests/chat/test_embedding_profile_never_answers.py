"""An embedding profile never becomes the model that answers: the same refusal on the new
chat form, the conversation's settings, the header, REST and a schedule (one check in
chat/services.py every path goes through)."""

from __future__ import annotations

import json

import pytest

from accounts.models import AIProfile
from chat.models import Conversation, Schedule
from tests.chat.test_header_attach_edit import HTMX
from tests.factories import AIProfileFactory

pytestmark = pytest.mark.django_db

REFUSAL = "An embedding profile cannot answer in a chat."


@pytest.fixture
def embedding(person):
    return AIProfileFactory(owner=person, name="Vectors", role=AIProfile.Role.EMBEDDING)


def test_rest_refuses_a_new_conversation_on_an_embedding_profile(signed_in, person, embedding):
    before = Conversation.objects.filter(owner=person).count()
    response = signed_in.post(
        "/api/chat/conversations",
        data=json.dumps({"profile_id": embedding.pk}),
        content_type="application/json",
    )
    assert response.status_code == 400, response.content
    assert REFUSAL in response.content.decode()
    assert Conversation.objects.filter(owner=person).count() == before


def test_the_new_chat_form_refuses_an_embedding_profile(signed_in, person, profile, embedding):
    before = Conversation.objects.filter(owner=person).count()
    response = signed_in.post("/chat/new/", {"text": "Hello", "profile": embedding.pk}, follow=True)
    assert REFUSAL in response.content.decode()
    assert Conversation.objects.filter(owner=person).count() == before


@pytest.mark.parametrize("headers", [HTMX, {}], ids=["htmx", "plain-form"])
def test_the_settings_form_keeps_the_answering_profile(
    signed_in, conversation, profile, embedding, headers
):
    response = signed_in.post(
        f"/chat/{conversation.pk}/settings/",
        {"profile": embedding.pk, "memory_on": "on"},
        follow=True,
        **headers,
    )
    assert REFUSAL in response.content.decode()
    conversation.refresh_from_db()
    assert conversation.ai_profile_id == profile.pk


def test_a_schedule_refuses_an_embedding_profile(signed_in, person, embedding):
    response = signed_in.post(
        "/chat/schedules/",
        {"name": "Daily", "prompt": "Summarise", "profile": embedding.pk, "every_minutes": 60},
        follow=True,
    )
    assert REFUSAL in response.content.decode()
    assert not Schedule.objects.filter(owner=person).exists()
