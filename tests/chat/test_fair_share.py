"""One person's answers in flight are limited, so their flood never takes everyone's threads;
answers back and outgoing events run on a queue and pool of their own."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.urls import reverse

from accounts.models import MessagingBinding
from bridges.models import InboundMessage
from bridges.services import binding_create, inbound_process
from chat.models import Conversation, Message
from chat.services import AnswersBusy, answer_regenerate, conversation_create, message_send
from config.management.commands.serve import Command
from tests.factories import AIProfileFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def three_in_flight(person, profile, django_capture_on_commit_callbacks) -> list[Conversation]:
    conversations = [conversation_create(user=person, title=f"Chat {n}") for n in range(3)]
    with django_capture_on_commit_callbacks(execute=False):
        for conversation in conversations:
            message_send(user=person, conversation=conversation, text="Hello")
    return conversations


def test_a_fourth_answer_in_flight_is_refused_with_a_wait_message(
    person, three_in_flight, django_capture_on_commit_callbacks
):
    assert settings.CHAT_MAX_ANSWERS_IN_FLIGHT == 3
    fourth = conversation_create(user=person, title="Chat 4")
    with (
        django_capture_on_commit_callbacks(execute=False),
        pytest.raises(AnswersBusy, match="3 answers of yours are still being written"),
    ):
        message_send(user=person, conversation=fourth, text="Hello")
    # Nothing of the refused send was stored.
    assert not fourth.messages.exists()


def test_another_person_still_sends_while_one_person_has_every_slot(
    three_in_flight, fake_openai, django_capture_on_commit_callbacks
):
    other = UserFactory()
    AIProfileFactory(owner=other, base_url=fake_openai.base_url, is_default=True)
    conversation = conversation_create(user=other)
    with django_capture_on_commit_callbacks(execute=False):
        answer = message_send(user=other, conversation=conversation, text="Hi")
    assert answer.state == Message.State.STREAMING


def test_a_finished_answer_frees_its_slot(
    person, three_in_flight, django_capture_on_commit_callbacks
):
    Message.objects.filter(conversation=three_in_flight[0], role=Message.Role.ASSISTANT).update(
        state=Message.State.COMPLETE
    )
    fourth = conversation_create(user=person)
    with django_capture_on_commit_callbacks(execute=False):
        message_send(user=person, conversation=fourth, text="Now it fits")
    # Regenerating in a busy conversation is still refused by the per-conversation rule;
    # in the finished one the slot is taken again, so the limit holds there too.
    with (
        django_capture_on_commit_callbacks(execute=False),
        pytest.raises(AnswersBusy),
    ):
        answer_regenerate(user=person, conversation=three_in_flight[0])


def test_the_page_and_the_api_say_to_wait(client, person, three_in_flight):
    fourth = conversation_create(user=person)
    client.force_login(person)
    page = client.post(
        reverse("chat_send", args=[fourth.pk]), {"text": "Hello"}, headers={"HX-Request": "true"}
    )
    assert page.status_code < 500
    assert "still being written" in page.content.decode()
    api = client.post(
        f"/api/chat/conversations/{fourth.pk}/messages",
        {"text": "Hello"},
        content_type="application/json",
    )
    assert api.status_code == 429
    assert "wait for one to finish" in api.json()["detail"]
    assert not fourth.messages.exists()


def test_a_bridge_message_waits_in_the_queue_while_its_persons_slots_are_full(
    person, three_in_flight, monkeypatch
):
    binding, _ = binding_create(owner=person, kind=MessagingBinding.Kind.STANDARD, title="Group")
    inbound = InboundMessage.objects.create(
        binding=binding, webhook_id="msg_busy", kind="message", text="Hi"
    )
    queued: list[tuple[str, tuple[object, ...], dict[str, object]]] = []
    monkeypatch.setattr(
        "bridges.services.queue_job",
        lambda name, *args, **options: queued.append((name, args, options)),
    )
    inbound_process(inbound_id=inbound.pk)
    inbound.refresh_from_db()
    assert inbound.state == InboundMessage.State.RECEIVED and inbound.answer_id is None
    assert [(name, args) for name, args, _ in queued] == [
        ("bridges.inbound_process", (inbound.pk,))
    ]
    assert queued[0][2]["countdown"] > 0


def test_answers_back_and_events_never_share_the_chat_workers_threads():
    routes = settings.CELERY_TASK_ROUTES
    assert settings.DELIVERY_QUEUE != settings.CHAT_QUEUE
    for task in ("bridges.callback_send", "bridges.endpoint_deliver"):
        assert routes[task] == {"queue": settings.DELIVERY_QUEUE}
    assert routes["chat.turn_run"] == {"queue": settings.CHAT_QUEUE}
    options = {
        "web_workers": 1,
        "host": "127.0.0.1",
        "port": 8000,
        "no_worker": False,
        "worker_concurrency": 1,
        "chat_concurrency": 20,
    }
    commands = {name: argv for name, argv, _ in Command()._commands(options, {})}
    chat_queue = commands["chat worker"][commands["chat worker"].index("-Q") + 1]
    assert chat_queue == settings.CHAT_QUEUE
    delivery = commands["delivery worker"]
    assert delivery[delivery.index("-Q") + 1] == settings.DELIVERY_QUEUE
    assert delivery[delivery.index("--pool") + 1] == "threads"
    assert (
        int(delivery[delivery.index("--concurrency") + 1]) == settings.DELIVERY_WORKER_CONCURRENCY
    )
