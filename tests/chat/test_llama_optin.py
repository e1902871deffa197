"""Opt-in: one chat turn against a real llama.cpp server with the demo model (B8).

Not part of `make test`. Run it after `make demo-model`:
`make test PYTEST_ARGS="--run-llama tests/chat/test_llama_optin.py"`.
"""

from __future__ import annotations

import subprocess

import pytest

from accounts.management.commands.demo_model import (
    demo_model_file,
    demo_profile_register,
    llama_server_command,
)
from chat.models import Conversation, Message
from chat.runner import turn_run
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import ensure_user_scope
from tests.conftest import free_port
from tests.factories import UserFactory

pytestmark = [pytest.mark.llama, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def llama_server():
    port = free_port()
    server = subprocess.Popen(
        llama_server_command(demo_model_file(), port=port),
        stderr=subprocess.PIPE,
        text=True,
    )
    assert server.stderr is not None
    for line in server.stderr:  # uvicorn says when it listens: that is the readiness signal
        if "Uvicorn running on" in line:
            break
    else:
        raise AssertionError("llama.cpp's server exited before it was ready")
    yield port
    server.terminate()
    server.wait(timeout=30)


@pytest.mark.parametrize("attempt", range(3))  # a sampling model: on topic each time
def test_one_turn_streams_an_on_topic_answer_from_the_demo_model(llama_server, attempt):
    person = UserFactory()
    file_write(
        user=person,
        scope=ensure_user_scope(person),
        path="index.md",
        content="- home: lives in Rome\n",
        base_sha256="",
    )
    profile = demo_profile_register(user=person, port=llama_server)
    assert profile.supports_tools is False and profile.is_default
    conversation = Conversation.objects.create(owner=person, ai_profile=profile)
    Message.objects.create(
        conversation=conversation, role=Message.Role.USER, content="Where do I live?"
    )
    answer = Message.objects.create(
        conversation=conversation,
        role=Message.Role.ASSISTANT,
        state=Message.State.STREAMING,
        model=profile.model,
    )
    turn_run(message_id=answer.pk)
    answer.refresh_from_db()
    assert answer.state == Message.State.COMPLETE, answer.error
    assert "rome" in answer.content.casefold(), answer.content  # from memory, on topic
    assert answer.first_token_at and answer.finished_at
    assert answer.sent_along["tools"] is False  # the small model gets the memory block only
