from __future__ import annotations

from collections.abc import Callable

import pytest

from accounts.models import AIProfile
from chat.models import Conversation, Message
from tests.conftest import start_chat_worker, wait_for_worker
from tests.factories import AIProfileFactory, UserFactory


@pytest.fixture
def person():
    return UserFactory()


@pytest.fixture
def signed_in(client, person):
    """The test client signed in as `person`."""
    client.force_login(person)
    return client


@pytest.fixture
def profile(person, fake_openai) -> AIProfile:
    return AIProfileFactory(
        owner=person, base_url=fake_openai.base_url, model="fake-model", is_default=True
    )


@pytest.fixture
def conversation(person, profile) -> Conversation:
    return Conversation.objects.create(owner=person, ai_profile=profile, title="Test chat")


@pytest.fixture
def ask(conversation) -> Callable[..., Message]:
    """The person's message and an answer placeholder, as message_send stores them,
    without putting a job on the queue: the test runs the turn itself."""

    def make(text: str, conv: Conversation | None = None) -> Message:
        conv = conv or conversation
        Message.objects.create(conversation=conv, role=Message.Role.USER, content=text)
        return Message.objects.create(
            conversation=conv,
            role=Message.Role.ASSISTANT,
            state=Message.State.STREAMING,
            model=conv.ai_profile.model if conv.ai_profile else "",
        )

    return make


__all__ = ["start_chat_worker", "wait_for_worker"]
