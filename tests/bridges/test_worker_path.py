"""A bridge message through the real chat worker: webhook → queued turn → signed answer."""

from __future__ import annotations

import pytest

from bridges.models import InboundMessage
from scripts.sample_bridge import send_message

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_chat_worker_answers_a_bridge_message_once(
    chat_worker, fake_openai, webhook_url, bound, receiver
):
    fake_openai.chat_replies.append({"content": "Answered by the worker."})
    accepted = send_message(webhook_url, bound[1], "Hello from the group", msg_id="msg_w1")
    assert accepted.status_code == 202
    assert receiver.wait_for(1, timeout=60)
    answer = receiver.received[0]
    assert answer["text"] == "Answered by the worker."
    assert answer["in_reply_to"] == "msg_w1"
    # The same message again (a bridge retry) is acknowledged and never answered twice.
    again = send_message(webhook_url, bound[1], "Hello from the group", msg_id="msg_w1")
    assert again.status_code == 200 and again.json()["duplicate"] is True
    row = InboundMessage.objects.get()
    assert row.state == InboundMessage.State.ANSWERED
    assert row.callback_state == InboundMessage.Callback.DELIVERED
    assert receiver.ids.count(receiver.ids[0]) == 1 and len(receiver.received) == 1
