from __future__ import annotations

import pytest

from chat.models import Message
from tests.chat.conftest import ask, conversation, person, profile

__all__ = ["answered", "ask", "conversation", "person", "profile"]


@pytest.fixture
def answered(conversation):
    """The person's message and a complete answer to it, as a finished turn leaves them."""

    def make(text: str, conv=None):
        conv = conv or conversation
        question = Message.objects.create(conversation=conv, role=Message.Role.USER, content=text)
        answer = Message.objects.create(
            conversation=conv,
            role=Message.Role.ASSISTANT,
            state=Message.State.COMPLETE,
            content="Understood.",
        )
        return question, answer

    return make
