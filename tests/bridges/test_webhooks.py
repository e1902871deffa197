"""The inbound webhook and the answer back, over real HTTP both ways.

The app runs under uvicorn (live_asgi_server); the sample bridge script signs and posts,
and its CallbackReceiver plays the bridge's callback endpoint. The test plays the chat
worker by running the queued turn itself.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from datetime import timedelta
from types import SimpleNamespace

import httpx
import pytest
from django.utils import timezone

from accounts.models import MessagingBinding
from addons.services import addon_setting_put
from bridges.models import InboundMessage
from bridges.services import binding_create, binding_rotate_secret, callback_send
from bridges.signing import sign_headers
from chat.models import Message
from memory_addon.addons import MEMORY_ADDON, SAVE_MODE
from memory_addon.models import MemoryFile, Proposal
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import ensure_channel_scope
from scripts.sample_bridge import send_message

pytestmark = pytest.mark.django_db(transaction=True)

ADD_NOTE = json.dumps(
    {"scope": "conversation", "action": "add", "text": "- train: takes the train on Mondays"}
)


def deliver(row: InboundMessage) -> bool:
    return callback_send(inbound_id=row.pk)


def test_a_signed_message_is_answered_and_the_answer_comes_back_signed(
    fake_openai, webhook_url, bound, receiver, work
):
    fake_openai.chat_replies.append({"content": "Hello from the host."})
    response = send_message(webhook_url, bound[1], "Hi there", msg_id="msg_first")
    assert response.status_code == 202
    assert response.json() == {"accepted": True, "id": "msg_first", "duplicate": False}
    (row,) = work()
    assert row.state == InboundMessage.State.ANSWERED
    assert fake_openai.chat_requests[-1]["messages"][-1] == {"role": "user", "content": "Hi there"}
    assert deliver(row)
    assert receiver.wait_for(1)
    answer = receiver.received[0]
    assert answer["text"] == "Hello from the host."
    assert answer["in_reply_to"] == "msg_first" and answer["ok"] is True
    assert receiver.rejected == 0
    row.refresh_from_db()
    assert row.callback_state == InboundMessage.Callback.DELIVERED


@pytest.mark.parametrize(
    "tamper",
    ["wrong_secret", "no_signature", "changed_body", "garbage_signature"],
)
def test_a_bad_or_missing_signature_is_401_and_stores_nothing(webhook_url, bound, tamper):
    secret = bound[1]
    body = json.dumps({"text": "hello"}).encode()
    if tamper == "wrong_secret":
        response = send_message(webhook_url, "whsec_" + "A" * 32, "hello")
    elif tamper == "changed_body":
        headers = sign_headers(secret, msg_id="m1", body=body)  # signed for another body
        response = httpx.post(webhook_url, content=b'{"text": "changed"}', headers=headers)
    elif tamper == "garbage_signature":
        headers = {
            "webhook-id": "m1",
            "webhook-timestamp": str(int(time.time())),
            "webhook-signature": "v1,%%%not-base64 v2 nocomma",
        }
        response = httpx.post(webhook_url, content=body, headers=headers)
    else:
        response = httpx.post(webhook_url, content=body, headers={"webhook-id": "m1"})
    assert response.status_code == 401
    assert "error" in response.json()
    assert not InboundMessage.objects.exists()


@pytest.mark.parametrize("offset", [-301, 301])
def test_a_timestamp_301_seconds_away_is_refused(webhook_url, bound, offset, monkeypatch):
    now = int(time.time())
    # The server's clock stands still: on a busy machine the request can take a second,
    # and a stamp 301 s ahead would then be only 300 s ahead when it is checked.
    monkeypatch.setattr("bridges.signing.time", SimpleNamespace(time=lambda: float(now)))
    response = send_message(webhook_url, bound[1], "hello", timestamp=now + offset)
    assert response.status_code == 401
    assert "300 seconds" in response.json()["error"]
    assert not InboundMessage.objects.exists()


def test_a_replayed_webhook_id_is_one_message_and_one_answer(
    fake_openai, webhook_url, bound, receiver, work
):
    fake_openai.chat_replies.append({"content": "Once."})
    first = send_message(webhook_url, bound[1], "Hi", msg_id="msg_same")
    again = send_message(webhook_url, bound[1], "Hi", msg_id="msg_same")
    assert first.status_code == 202
    assert again.status_code == 200 and again.json()["duplicate"] is True
    assert InboundMessage.objects.count() == 1
    (row,) = work()
    assert deliver(row)
    assert not deliver(row)  # acknowledged: never sent again
    replay = send_message(webhook_url, bound[1], "Hi", msg_id="msg_same")
    assert replay.status_code == 200
    assert work() == []
    assert receiver.wait_for(1)
    assert len(receiver.received) == 1 and receiver.attempts == 1
    assert len(fake_openai.chat_requests) == 1


def test_a_body_of_one_mib_and_one_byte_is_413(webhook_url, bound, settings):
    limit = settings.BRIDGE_MAX_BODY_BYTES
    assert limit == 1_048_576
    prefix, suffix = b'{"text": "', b'"}'
    body = prefix + b"a" * (limit + 1 - len(prefix) - len(suffix)) + suffix
    assert len(body) == limit + 1
    response = send_message(webhook_url, bound[1], "", body=body)
    assert response.status_code == 413
    assert not InboundMessage.objects.exists()


def test_a_disabled_binding_is_403_and_stores_nothing(webhook_url, bound):
    MessagingBinding.objects.filter(pk=bound[0].pk).update(enabled=False)
    response = send_message(webhook_url, bound[1], "hello")
    assert response.status_code == 403
    assert not InboundMessage.objects.exists()


def test_a_rotated_secret_keeps_the_old_one_only_for_the_grace_period(webhook_url, bound):
    binding, old = bound
    new = binding_rotate_secret(binding=binding)
    assert new != old
    assert send_message(webhook_url, new, "with the new one").status_code == 202
    assert send_message(webhook_url, old, "still in the grace period").status_code == 202
    MessagingBinding.objects.filter(pk=binding.pk).update(
        previous_secret_expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert send_message(webhook_url, old, "after the grace period").status_code == 401
    assert InboundMessage.objects.count() == 2


def test_during_a_rotation_answers_verify_with_the_old_and_the_new_secret(
    fake_openai, webhook_url, bound, receiver, work
):
    binding, old = bound
    receiver.secrets[:] = [old]  # the bridge has not switched yet
    new = binding_rotate_secret(binding=binding)
    fake_openai.chat_replies.extend([{"content": "First."}, {"content": "Second."}])
    assert send_message(webhook_url, new, "one").status_code == 202
    (row,) = work()
    assert deliver(row) and receiver.wait_for(1)
    assert receiver.rejected == 0
    # The bridge switched and the grace period ended: the new secret alone signs.
    receiver.secrets[:] = [new]
    MessagingBinding.objects.filter(pk=binding.pk).update(
        previous_secret_expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert send_message(webhook_url, new, "two").status_code == 202
    (second,) = work()
    assert deliver(second) and receiver.wait_for(2)
    assert receiver.rejected == 0
    assert [answer["text"] for answer in receiver.received] == ["First.", "Second."]


def test_bad_bodies_are_a_clear_400(webhook_url, bound):
    for body in [b"not json", b"[1, 2]", b'{"text": 5}', b'{"text": "   "}']:
        response = send_message(webhook_url, bound[1], "", body=body)
        assert response.status_code == 400, body
        assert response.json()["error"]
    assert not InboundMessage.objects.exists()


def test_an_unknown_binding_address_is_404(live_asgi_server):
    url = f"{live_asgi_server.url}/bridges/in/00000000-0000-0000-0000-000000000000/"
    assert httpx.post(url, content=b"{}").status_code == 404


def test_the_rate_limit_answers_429_with_retry_after(webhook_url, bound, settings):
    settings.BRIDGE_RATE_LIMIT_PER_MINUTE = 2
    codes = [send_message(webhook_url, bound[1], f"m{n}").status_code for n in range(3)]
    if codes[-1] != 429:  # the minute turned between the requests: once more
        codes = [send_message(webhook_url, bound[1], f"n{n}").status_code for n in range(3)]
    assert codes[-1] == 429
    response = send_message(webhook_url, bound[1], "again")
    assert response.status_code == 429
    assert int(response.headers["Retry-After"]) >= 1
    assert "messages a minute" in response.json()["error"]


def test_telegram_updates_are_verified_by_the_secret_token(
    live_asgi_server, person, profile, fake_openai, work
):
    binding, secret = binding_create(owner=person, kind="telegram", title="TG")
    url = f"{live_asgi_server.url}/bridges/in/{binding.public_id}/"
    update = {
        "update_id": 77,
        "message": {"text": "Hallo", "chat": {"id": 5}, "from": {"id": 8, "first_name": "Ada"}},
    }
    header = "X-Telegram-Bot-Api-Secret-Token"
    assert httpx.post(url, json=update).status_code == 401
    assert httpx.post(url, json=update, headers={header: secret + "x"}).status_code == 401
    assert httpx.post(url, json=update, headers={header: secret}).status_code == 202
    assert httpx.post(url, json=update, headers={header: secret}).status_code == 200
    for bad_id in (10**4000, -5):  # a 4000-digit id once made the stored id overflow (500)
        huge = {"update_id": bad_id, "message": {"text": "x", "chat": {"id": 5}}}
        assert httpx.post(url, json=huge, headers={header: secret}).status_code == 400
    sticker = {"update_id": 78, "message": {"sticker": {}}}
    assert httpx.post(url, json=sticker, headers={header: secret}).json()["ignored"] is True
    (row,) = InboundMessage.objects.all()
    assert (row.webhook_id, row.text, row.sender) == ("tg_77", "Hallo", "Ada")
    assert (row.sender_id, row.chat_id) == ("8", "5")


def _slack_post(url: str, secret: str, payload: dict, *, offset: int = 0) -> httpx.Response:
    body = json.dumps(payload).encode()
    stamp = str(int(time.time()) + offset)
    digest = hmac.new(secret.encode(), b"v0:" + stamp.encode() + b":" + body, hashlib.sha256)
    headers = {
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": "v0=" + digest.hexdigest(),
        "Content-Type": "application/json",
    }
    return httpx.post(url, content=body, headers=headers)


def test_slack_challenge_and_events_are_verified_by_the_v0_signature(
    live_asgi_server, person, profile
):
    slack_secret = "8f742231b10e8888abcd99yyyzzz85a5"
    binding, _ = binding_create(owner=person, kind="slack", title="Slack", secret=slack_secret)
    url = f"{live_asgi_server.url}/bridges/in/{binding.public_id}/"
    challenge = {"type": "url_verification", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3g"}
    answer = _slack_post(url, slack_secret, challenge)
    assert answer.status_code == 200 and answer.json() == {"challenge": challenge["challenge"]}
    assert _slack_post(url, "not-the-secret", challenge).status_code == 401
    event = {
        "type": "event_callback",
        "event_id": "Ev123",
        "event": {"type": "message", "text": "Hi from Slack", "user": "U1", "channel": "C1"},
    }
    assert _slack_post(url, slack_secret, event, offset=-301).status_code == 401
    assert _slack_post(url, slack_secret, event).status_code == 202
    assert _slack_post(url, slack_secret, event).status_code == 200  # Slack's retry
    bot = {**event, "event_id": "Ev124", "event": {**event["event"], "bot_id": "B1"}}
    assert _slack_post(url, slack_secret, bot).json()["ignored"] is True
    (row,) = InboundMessage.objects.all()
    assert (row.webhook_id, row.text, row.sender) == ("Ev123", "Hi from Slack", "U1")


def test_a_slack_bindings_answers_verify_with_its_whsec_secret(
    live_asgi_server, person, profile, fake_openai, receiver, work
):
    slack_secret = "8f742231b10e8888abcd99yyyzzz85a5"
    binding, secret = binding_create(
        owner=person,
        kind="slack",
        title="Slack",
        secret=slack_secret,
        callback_url=receiver.url,
    )
    assert secret.startswith("whsec_")
    receiver.secrets[:] = [secret]
    url = f"{live_asgi_server.url}/bridges/in/{binding.public_id}/"
    event = {
        "type": "event_callback",
        "event_id": "Ev200",
        "event": {"type": "message", "text": "Hi from Slack", "user": "U1", "channel": "C1"},
    }
    fake_openai.chat_replies.append({"content": "Hello, Slack."})
    assert _slack_post(url, slack_secret, event).status_code == 202
    (row,) = work()
    assert deliver(row) and receiver.wait_for(1)
    assert receiver.rejected == 0 and receiver.received[0]["text"] == "Hello, Slack."


def test_a_memory_change_from_a_binding_waits_in_the_inbox_even_in_auto_mode(
    fake_openai, webhook_url, bound, person, receiver, work
):
    addon_setting_put(user=person, addon=MEMORY_ADDON, key=SAVE_MODE, value="auto")
    fake_openai.chat_replies += [
        {"tool_calls": [{"id": "c1", "name": "propose_change", "arguments": ADD_NOTE}]},
        {"content": "Noted."},
    ]
    assert send_message(webhook_url, bound[1], "I take the train on Mondays").status_code == 202
    (row,) = work()
    proposal = Proposal.objects.get(user=person)
    assert proposal.state == Proposal.State.PENDING
    assert proposal.source == "bridge"
    assert proposal.scope == ensure_channel_scope(bound[0])
    assert not MemoryFile.objects.filter(scope__owner=person, content__contains="train").exists()
    assert deliver(row)
    assert receiver.wait_for(1)
    text = receiver.received[0]["text"]
    assert text.startswith("Noted.") and "Inbox" in text
    assert receiver.received[0]["proposals"] == 1


def test_another_conversations_notes_never_appear_in_the_block(
    fake_openai, webhook_url, bound, person, work
):
    other, _ = binding_create(owner=person, kind="standard", title="Work chat")
    file_write(
        user=person,
        scope=ensure_channel_scope(bound[0]),
        path="index.md",
        content="- pets: the family has a cat -> pets.md\n",
        base_sha256="",
    )
    file_write(
        user=person,
        scope=ensure_channel_scope(other),
        path="index.md",
        content="- project: codename bluebird -> project.md\n",
        base_sha256="",
    )
    assert send_message(webhook_url, bound[1], "What do you know?").status_code == 202
    work()
    sent = fake_openai.prompt()
    assert "the family has a cat" in sent
    assert "bluebird" not in sent


def test_a_callback_receiver_down_for_a_while_then_up_gets_the_answer_exactly_once(
    fake_openai, fast_retries, webhook_url, bound, receiver, work
):
    fake_openai.chat_replies.append({"content": "Eventually."})
    receiver.status = 503
    assert send_message(webhook_url, bound[1], "Are you there?").status_code == 202
    (row,) = work()
    deadline = time.monotonic() + 20
    while receiver.attempts < 3 and time.monotonic() < deadline:
        deliver(row)
    row.refresh_from_db()
    assert receiver.attempts >= 3 and receiver.received == []
    assert row.callback_state == InboundMessage.Callback.PENDING
    assert "503" in row.callback_error
    receiver.status = 200
    while not deliver(row) and time.monotonic() < deadline:
        pass
    assert receiver.wait_for(1)
    for _ in range(3):
        assert not deliver(row)
    assert len(receiver.received) == 1
    assert receiver.received[0]["text"] == "Eventually."
    row.refresh_from_db()
    assert row.callback_state == InboundMessage.Callback.DELIVERED


def test_a_callback_that_keeps_failing_past_the_window_is_marked_failed(
    fake_openai, fast_retries, webhook_url, bound, receiver, work
):
    fast_retries.WEBHOOK_RETRY_WINDOW_SECONDS = 0
    receiver.status = 500
    send_message(webhook_url, bound[1], "hello")
    (row,) = work()
    deliver(row)
    row.refresh_from_db()
    assert row.callback_state == InboundMessage.Callback.FAILED
    assert "500" in row.callback_error


def test_a_secret_in_a_bridge_message_reaches_the_model_masked_and_is_stored_as_sent(
    fake_openai, webhook_url, bound, work
):
    text = f"the password is Hunter2Secret99 and the bridge secret is {bound[1]}"
    assert send_message(webhook_url, bound[1], text, msg_id="msg_secret").status_code == 202
    assert len(work()) == 1
    sent = fake_openai.chat_requests[-1]["messages"][-1]["content"]
    assert "Hunter2Secret99" not in sent and bound[1] not in sent
    assert sent.startswith("the password is [masked]")
    assert Message.objects.filter(conversation__binding=bound[0], role="user", content=text)
