"""B9 over a messaging bridge: turns that arrive through the webhook keep the same
system prompt and pinned context, and a new conversation note comes as a reminder."""

from __future__ import annotations

import pytest

from chat.prompt import SYSTEM
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import ensure_channel_scope
from scripts.sample_bridge import send_message

pytestmark = pytest.mark.django_db(transaction=True)

CAT = "- pets: the family has a cat -> pets.md"
DOG = "- dog: the family has a dog too -> dog.md"


def _notes(bound, *lines: str) -> None:
    file_write(
        user=bound[0].owner,
        scope=ensure_channel_scope(bound[0]),
        path="index.md",
        content="".join(f"{line}\n" for line in lines),
        base_sha256=None,
    )


def test_bridge_turns_keep_the_prefix_and_get_a_reminder(fake_openai, webhook_url, bound, work):
    _notes(bound, CAT)
    assert send_message(webhook_url, bound[1], "Hello", msg_id="m1").status_code == 202
    work()
    first = fake_openai.chat_requests[-1]["messages"]
    _notes(bound, CAT, DOG)
    assert send_message(webhook_url, bound[1], "And now?", msg_id="m2").status_code == 202
    work()
    second = fake_openai.chat_requests[-1]["messages"]
    assert first[0] == {"role": "system", "content": SYSTEM}
    assert second[:2] == first[:2] and CAT in first[1]["content"]
    assert f"+ {DOG}" in second[-2]["content"]
    assert second[-1]["content"] == "And now?"
