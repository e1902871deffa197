"""The offline demo model (B8) answers through the product's chat: a real llama.cpp server
(accounts/demo_server.py, as `make demo-model` starts it) with SmolLM2-135M-Instruct."""

from __future__ import annotations

import contextlib
import json
import re
import signal
import subprocess
import sys
import urllib.request

import psutil
import pytest

from accounts.demo_server import PARALLEL, READY
from accounts.management.commands.demo_model import (
    DEMO_CONTEXT,
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

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    port = free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with log.open("w") as log_file:
        server = subprocess.Popen(
            llama_server_command(demo_model_file(), port=port),
            stdout=subprocess.PIPE,
            stderr=log_file,
            text=True,
        )
    assert server.stdout is not None
    ready = server.stdout.readline()  # one line once it listens, or nothing if it died
    assert ready.startswith(READY), log.read_text()[-2000:]
    yield port
    server.terminate()
    # Stopped, or ended by its own stop deadline (accounts/demo_server.py).
    assert server.wait(timeout=30) in (0, -signal.SIGALRM)


QUESTIONS = ["Where do I live?", "Which city is my home?", "What city do I live in?"]


def answered(person, profile, question: str) -> Message:
    conversation = Conversation.objects.create(owner=person, ai_profile=profile)
    Message.objects.create(conversation=conversation, role=Message.Role.USER, content=question)
    answer = Message.objects.create(
        conversation=conversation,
        role=Message.Role.ASSISTANT,
        state=Message.State.STREAMING,
        model=profile.model,
    )
    turn_run(message_id=answer.pk)
    answer.refresh_from_db()
    return answer


def test_the_demo_model_answers_from_memory_through_the_chat(llama_server):
    """A 135M model is right about four times in ten on unseen questions (docs/benchmarks.md,
    "Demo model"): of three plain questions about one note, two must name the place."""
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
    answers = [answered(person, profile, question) for question in QUESTIONS]
    for answer in answers:
        assert answer.state == Message.State.COMPLETE, answer.error
        assert answer.content.strip() and answer.first_token_at and answer.finished_at
        assert answer.sent_along["tools"] is False  # the small model gets the memory block only
    on_topic = [a.content for a in answers if re.search(r"\brom(e|a|an)?\b", a.content.casefold())]
    assert len(on_topic) >= 2, [a.content for a in answers]


def test_the_demo_server_writes_several_answers_at_once(llama_server):
    """One person's long answer must not make everyone else's time out."""
    with urllib.request.urlopen(f"http://127.0.0.1:{llama_server}/props", timeout=10) as reply:
        props = json.load(reply)
    assert props["total_slots"] == PARALLEL
    assert props["default_generation_settings"]["n_ctx"] >= DEMO_CONTEXT


def test_the_demo_server_stops_when_whoever_started_it_dies(tmp_path):
    """A killed test run or command leaves no model server holding a port."""
    port = free_port()
    starter = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys; "
            f"p = subprocess.Popen({llama_server_command(demo_model_file(), port=port)!r}, "
            "stdout=subprocess.PIPE, text=True); "
            "print(p.pid, p.stdout.readline().split()[0], flush=True); "
            "import time; time.sleep(600)",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert starter.stdout is not None
    server_pid, ready = starter.stdout.readline().split()
    assert ready == READY
    starter.kill()
    starter.wait(timeout=30)
    with contextlib.suppress(psutil.NoSuchProcess):  # already gone
        psutil.Process(int(server_pid)).wait(timeout=30)  # raises if it outlives its starter
