"""One conversation per external chat, and the answer back into that chat, end to end.

The platform (a small Telegram Bot API or Slack Web API server, local, real HTTP) sends
its update to the host's webhook under uvicorn; the test plays the chat worker and the
delivery worker (the turn with the fake model, then the signed callback); the sample
bridge's relay verifies the callback with standardwebhooks and posts the answer back to
the platform, which must receive it in the chat and thread the message came from.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.apps import apps
from django.utils import timezone

from accounts.models import MessagingBinding
from bridges.models import InboundMessage
from bridges.services import binding_create, binding_rotate_secret, callback_send
from chat.models import Conversation
from memory_addon.models import Proposal
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import ensure_channel_scope
from scripts.sample_bridge import SlackRelay, TelegramRelay, send_message
from tests.bridges.fake_platforms import FakeSlack, FakeTelegram

pytestmark = pytest.mark.django_db(transaction=True)

BOT_TOKEN = "123456:ABC-test-token"
SLACK_BOT_TOKEN = "xoxb-test-token"
SLACK_SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"


@pytest.fixture
def telegram() -> Iterator[FakeTelegram]:
    platform = FakeTelegram(BOT_TOKEN).start()
    yield platform
    platform.stop()


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    platform = FakeSlack(SLACK_BOT_TOKEN).start()
    yield platform
    platform.stop()


def _deliver_all() -> None:
    for row in InboundMessage.objects.filter(callback_state=InboundMessage.Callback.PENDING):
        assert callback_send(inbound_id=row.pk)


def _tg_update(update_id: int, chat: int, text: str, *, thread: int | None = None) -> dict:
    message: dict = {
        "message_id": update_id,
        "chat": {"id": chat, "type": "supergroup"},
        "from": {"id": 9000 + update_id, "first_name": "Ada"},
        "text": text,
    }
    if thread is not None:
        message["message_thread_id"] = thread
    return {"update_id": update_id, "message": message}


def test_two_telegram_chats_get_two_conversations_and_each_answer_reaches_its_own_chat(
    live_asgi_server, person, profile, fake_openai, telegram, work
):
    relay = TelegramRelay("", bot_token=BOT_TOKEN, api=telegram.api).start()
    try:
        binding, secret = binding_create(
            owner=person, kind="telegram", title="Bot", callback_url=relay.url
        )
        relay.secrets[:] = [secret]
        webhook = f"{live_asgi_server.url}/bridges/in/{binding.public_id}/"
        fake_openai.chat_replies += [
            {"content": "Answer for the family."},
            {"content": "Answer for the topic."},
            {"content": "Family again."},
        ]
        for update in (
            _tg_update(1, -1001, "Hello family"),
            _tg_update(2, -2002, "Hello topic", thread=7),
            _tg_update(3, -1001, "Again"),
        ):
            assert telegram.send_update(webhook, secret, update).status_code == 202
            work()  # one at a time: the model's replies are taken in order
        _deliver_all()
        assert telegram.wait_for(3)
    finally:
        relay.stop()
    assert telegram.refused == 0 and relay.rejected == 0
    by_text = {message["text"]: message for message in telegram.posted}
    assert by_text["Answer for the family."] == {
        "chat_id": "-1001",
        "text": "Answer for the family.",
    }
    assert by_text["Answer for the topic."] == {
        "chat_id": "-2002",
        "message_thread_id": 7,
        "text": "Answer for the topic.",
    }
    assert by_text["Family again."]["chat_id"] == "-1001"
    conversations = Conversation.objects.filter(binding=binding)
    assert sorted(conversations.values_list("external_chat", "external_thread")) == [
        ("-1001", ""),
        ("-2002", "7"),
    ]
    family = conversations.get(external_chat="-1001")
    assert [m.content for m in family.messages.filter(role="user")] == ["Hello family", "Again"]
    # The model saw only this chat's history when answering "Again".
    history = [m["content"] for m in fake_openai.chat_requests[-1]["messages"][1:]]
    assert "Hello topic" not in history and "Hello family" in history
    row = InboundMessage.objects.get(webhook_id="tg_2")
    assert (row.sender, row.sender_id, row.chat_id, row.thread_id) == ("Ada", "9002", "-2002", "7")


def test_slack_channels_and_threads_get_their_own_conversations_and_answers_land_in_them(
    live_asgi_server, person, profile, fake_openai, slack, work
):
    relay = SlackRelay("", bot_token=SLACK_BOT_TOKEN, api=slack.api).start()
    try:
        binding, secret = binding_create(
            owner=person,
            kind="slack",
            title="Team",
            secret=SLACK_SIGNING_SECRET,
            callback_url=relay.url,
        )
        assert secret.startswith("whsec_")  # answers are signed the Standard Webhooks way
        relay.secrets[:] = [secret]
        webhook = f"{live_asgi_server.url}/bridges/in/{binding.public_id}/"
        fake_openai.chat_replies += [{"content": "In general."}, {"content": "In the thread."}]
        events = [
            ("Ev1", {"channel": "C1", "user": "U1", "text": "hi", "ts": "1.1"}),
            (
                "Ev2",
                {"channel": "C1", "user": "U2", "text": "in a thread", "thread_ts": "1.1"},
            ),
        ]
        for event_id, event in events:
            payload = {
                "type": "event_callback",
                "event_id": event_id,
                "event": {"type": "message", **event},
            }
            response = slack.send_event(webhook, SLACK_SIGNING_SECRET, payload)
            assert response.status_code == 202
            work()
        _deliver_all()
        assert slack.wait_for(2)
    finally:
        relay.stop()
    assert slack.refused == 0
    assert sorted(slack.posted, key=lambda m: m["text"]) == [
        {"channel": "C1", "text": "In general."},
        {"channel": "C1", "text": "In the thread.", "thread_ts": "1.1"},
    ]
    assert Conversation.objects.filter(binding=binding).count() == 2
    row = InboundMessage.objects.get(webhook_id="Ev2")
    assert (row.sender_id, row.chat_id, row.thread_id) == ("U2", "C1", "1.1")


def test_the_standard_bridge_names_its_chat_and_thread_and_the_answer_names_them_back(
    fake_openai, webhook_url, bound, receiver, work
):
    fake_openai.chat_replies += [{"content": "One."}, {"content": "Two."}]
    body = {"text": "hi", "sender": "Ada", "sender_id": 42, "chat_id": "room-1", "thread_id": "t9"}
    raw = json.dumps(body).encode()
    assert send_message(webhook_url, bound[1], "", msg_id="m1", body=raw).status_code == 202
    assert send_message(webhook_url, bound[1], "no chat", msg_id="m2").status_code == 202
    work()
    _deliver_all()
    assert receiver.wait_for(2)
    answers = {answer["in_reply_to"]: answer for answer in receiver.received}
    assert (answers["m1"]["chat_id"], answers["m1"]["thread_id"]) == ("room-1", "t9")
    assert (answers["m2"]["chat_id"], answers["m2"]["thread_id"]) == (None, None)
    row = InboundMessage.objects.get(webhook_id="m1")
    assert (row.sender_id, row.chat_id, row.thread_id) == ("42", "room-1", "t9")


def test_a_message_without_a_chat_id_goes_to_the_bindings_existing_conversation(
    fake_openai, webhook_url, bound, person, profile, work
):
    existing = Conversation.objects.create(
        owner=person, ai_profile=profile, binding=bound[0], title="From before chats"
    )
    assert send_message(webhook_url, bound[1], "plain", msg_id="m1").status_code == 202
    assert (
        send_message(webhook_url, bound[1], "named", msg_id="m2", chat_id="c2").status_code == 202
    )
    work()
    assert [m.content for m in existing.messages.filter(role="user")] == ["plain"]
    other = Conversation.objects.get(binding=bound[0], external_chat="c2")
    assert [m.content for m in other.messages.filter(role="user")] == ["named"]


def test_one_chats_conversation_notes_never_reach_another_chat_and_its_proposals_stay_in_it(
    fake_openai, webhook_url, bound, person, work
):
    binding = bound[0]
    file_write(
        user=person,
        scope=ensure_channel_scope(binding, "family"),
        path="index.md",
        content="- pets: the family has a cat -> pets.md\n",
        base_sha256="",
    )
    add = json.dumps({"scope": "conversation", "action": "add", "text": "- work: ships Fridays"})
    fake_openai.chat_replies += [
        {"tool_calls": [{"id": "c1", "name": "propose_change", "arguments": add}]},
        {"content": "Noted."},
        {"content": "Hello family."},
    ]
    assert (
        send_message(webhook_url, bound[1], "Remember", msg_id="w1", chat_id="work").status_code
        == 202
    )
    work()
    work_block = fake_openai.prompt(0)
    assert "the family has a cat" not in work_block
    proposal = Proposal.objects.get(user=person)
    assert proposal.scope == ensure_channel_scope(binding, "work")
    assert (
        send_message(webhook_url, bound[1], "Hi", msg_id="f1", chat_id="family").status_code == 202
    )
    work()
    assert "the family has a cat" in fake_openai.prompt()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"text": "x", "chat_id": ["a"]}, "chat_id"),
        ({"text": "x", "chat_id": "a" * 201}, "chat_id"),
        ({"text": "x", "chat_id": "a\nb"}, "chat_id"),
        ({"text": "x", "chat_id": True}, "chat_id"),
        ({"text": "x", "thread_id": "t"}, "chat_id"),
        ({"text": "x", "chat_id": "a", "thread_id": {"x": 1}}, "thread_id"),
        ({"text": "x", "sender_id": 10**250}, "sender_id"),
    ],
)
def test_a_bad_chat_thread_or_sender_id_is_a_400_naming_the_field(webhook_url, bound, body, field):
    raw = json.dumps(body).encode()
    response = send_message(webhook_url, bound[1], "", body=raw)
    assert response.status_code == 400
    assert f'"{field}"' in response.json()["error"]
    assert not InboundMessage.objects.exists()


def test_a_telegram_message_without_its_chat_is_a_400_naming_it(
    live_asgi_server, person, profile, telegram
):
    binding, secret = binding_create(owner=person, kind="telegram", title="Bot")
    webhook = f"{live_asgi_server.url}/bridges/in/{binding.public_id}/"
    update = {"update_id": 5, "message": {"text": "no chat"}}
    response = telegram.send_update(webhook, secret, update)
    assert response.status_code == 400 and "message.chat.id" in response.json()["error"]


def test_a_rotated_slack_binding_still_verifies_slack_and_its_answers_carry_both_signatures(
    live_asgi_server, person, profile, fake_openai, slack, work
):
    relay = SlackRelay("", bot_token=SLACK_BOT_TOKEN, api=slack.api).start()
    try:
        binding, old = binding_create(
            owner=person,
            kind="slack",
            title="Team",
            secret=SLACK_SIGNING_SECRET,
            callback_url=relay.url,
        )
        relay.secrets[:] = [old]  # the relay has not switched yet
        new = binding_rotate_secret(binding=binding)
        webhook = f"{live_asgi_server.url}/bridges/in/{binding.public_id}/"
        fake_openai.chat_replies += [{"content": "Still here."}, {"content": "Switched."}]
        event = {"type": "message", "channel": "C9", "user": "U1", "text": "hi"}
        payload = {"type": "event_callback", "event_id": "Ev1", "event": event}
        # Slack keeps signing with its own signing secret: rotation did not touch it.
        assert slack.send_event(webhook, SLACK_SIGNING_SECRET, payload).status_code == 202
        work()
        _deliver_all()
        assert slack.wait_for(1) and relay.rejected == 0
        relay.secrets[:] = [new]
        MessagingBinding.objects.filter(pk=binding.pk).update(
            previous_secret_expires_at=timezone.now() - timedelta(seconds=1)
        )
        payload = {**payload, "event_id": "Ev2"}
        assert slack.send_event(webhook, SLACK_SIGNING_SECRET, payload).status_code == 202
        work()
        _deliver_all()
        assert slack.wait_for(2) and relay.rejected == 0
    finally:
        relay.stop()
    assert [m["text"] for m in slack.posted] == ["Still here.", "Switched."]


def test_a_slack_binding_from_before_whsec_answers_keeps_verifying_slack_after_the_migration(
    live_asgi_server, person, profile, fake_openai, receiver, slack, work
):
    binding, _ = binding_create(
        owner=person,
        kind="slack",
        title="Old",
        secret=SLACK_SIGNING_SECRET,
        callback_url=receiver.url,
    )
    # As such a binding was stored: Slack's signing secret was its only secret.
    binding.webhook_secret = SLACK_SIGNING_SECRET
    binding.save(update_fields=["webhook_secret_encrypted"])
    MessagingBinding.objects.filter(pk=binding.pk).update(platform_secret_encrypted="")
    migration = importlib.import_module("accounts.migrations.0007_binding_platform_secret")
    migration.keep_slack_signing_secrets(apps, None)
    binding.refresh_from_db()
    assert binding.platform_secret == SLACK_SIGNING_SECRET
    receiver.secrets[:] = [SLACK_SIGNING_SECRET.encode()]  # what its relay verified with
    webhook = f"{live_asgi_server.url}/bridges/in/{binding.public_id}/"
    event = {"type": "message", "channel": "C1", "user": "U1", "text": "hi"}
    payload = {"type": "event_callback", "event_id": "Ev1", "event": event}
    assert slack.send_event(webhook, SLACK_SIGNING_SECRET, payload).status_code == 202
    work()
    _deliver_all()
    assert receiver.wait_for(1) and receiver.rejected == 0
    # Its first rotation gives it a whsec_ secret; Slack's requests still verify.
    assert binding_rotate_secret(binding=binding).startswith("whsec_")
    payload = {**payload, "event_id": "Ev2"}
    assert slack.send_event(webhook, SLACK_SIGNING_SECRET, payload).status_code == 202
