"""B9: the chat keeps its prompt prefix stable from turn to turn, so a provider's prompt
cache holds: the same system prompt, the host context pinned at index 1, changes as a
reminder after the history, excerpts right before the current message."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chat.models import Message, PinnedContext
from chat.pinning import CONTEXT_LEAD
from chat.prompt import SYSTEM
from chat.runner import turn_run
from host.core.tokens import estimate_tokens
from knowledge.models import Chunk, Document, Source
from knowledge.services import store_create
from memory_addon.models import MemoryFile
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import ensure_user_scope

pytestmark = pytest.mark.django_db(transaction=True)

TEA = "- tea: likes green tea -> tea.md"
BIKE = "- bike: rides a blue bike to work -> bike.md"
CAT = "- cat: has a cat called Miso -> cat.md"


def _index(person: Any, *lines: str) -> None:
    file_write(
        user=person,
        scope=ensure_user_scope(person),
        path="index.md",
        content="".join(f"{line}\n" for line in lines),
        base_sha256=None,
    )


@pytest.fixture
def turn(fake_openai, ask):
    def run(text: str) -> tuple[list[dict[str, Any]], Message]:
        answer = ask(text)
        turn_run(message_id=answer.pk)
        answer.refresh_from_db()
        assert answer.state == Message.State.COMPLETE, answer.error
        return fake_openai.chat_requests[-1]["messages"], answer

    return run


@pytest.fixture
def handbook(person, conversation):
    store = store_create(owner=person, name="Handbook", provider="none")
    source = Source.objects.create(
        store=store, kind=Source.Kind.UPLOAD, path="/uploads/x", chunk_count=1
    )
    document = Document.objects.create(
        source=source, path="guide/tea.md", sha256="x", format="markdown", size=10
    )
    Chunk.objects.create(
        document=document,
        store=store,
        source=source,
        ordinal=0,
        text="Green tea is brewed at 80 degrees for two minutes.",
        token_count=12,
    )
    conversation.stores.add(store)
    return store


def _history(messages: list[dict[str, Any]], turns_before: int) -> list[dict[str, Any]]:
    """The stored history: after the system prompt and the host context."""
    return messages[2 : 2 + 2 * turns_before]


def test_the_prompt_prefix_stays_byte_identical_while_memory_changes(
    turn, person, handbook, settings
):
    settings.MEMORY_DELTA_MAX_TOKENS = 40
    _index(person, TEA)
    first, answer = turn("How do I brew green tea?")
    system, pinned = first[0], first[1]
    assert system == {"role": "system", "content": SYSTEM}
    assert pinned["role"] == "user" and pinned["content"].startswith(CONTEXT_LEAD)
    assert "<memory>" in pinned["content"] and "likes green tea" in pinned["content"]
    assert "<retrieved_context" in first[-2]["content"] and "[R1]" in first[-2]["content"]
    assert answer.sent_along["pinned"]["state"] == "pinned"

    # A note is added: the same bytes at index 1, the new line as a reminder after the
    # history and before the excerpts and the current message.
    _index(person, TEA, BIKE)
    second, answer = turn("How long does green tea brew?")
    assert second[:2] == [system, pinned]
    assert _history(second, 1) == [
        {"role": "user", "content": "How do I brew green tea?"},
        {"role": "assistant", "content": "ok"},
    ]
    reminder, excerpts, current = second[4:]
    assert reminder["role"] == "user" and reminder["content"].startswith("<memory_update>")
    assert f"+ {BIKE}" in reminder["content"] and "green tea ->" not in reminder["content"]
    assert "<retrieved_context" in excerpts["content"]
    assert current == {"role": "user", "content": "How long does green tea brew?"}
    assert answer.sent_along["pinned"] == {
        "state": "reminded",
        "hash": PinnedContext.objects.get().sha256,
        "reminder": reminder["content"],
    }

    # A note is removed: the context is pinned anew without it, and no reminder quotes it.
    _index(person, BIKE)
    third, answer = turn("Thanks, and the bike?")
    assert third[0] == system and third[1] != pinned
    assert "likes green tea" not in json.dumps(third)
    assert BIKE in third[1]["content"]
    assert not any("<memory_update>" in m["content"] for m in third)
    assert answer.sent_along["pinned"]["state"] == "repinned"
    assert answer.sent_along["pinned"]["reminder"] == ""
    repinned = third[1]

    # A small addition is a reminder against the new pin.
    _index(person, BIKE, CAT)
    fourth, answer = turn("Does my cat like green tea?")
    assert fourth[:2] == [system, repinned]
    assert f"+ {CAT}" in fourth[-3]["content"]
    assert answer.sent_along["pinned"]["state"] == "reminded"

    # Past the bound (MEMORY_DELTA_MAX_TOKENS) the new context is pinned once, no reminder.
    big = [f"- trip{i}: a long note about a trip to place number {i} -> trip{i}.md" for i in (1, 2)]
    _index(person, BIKE, CAT, *big)
    fifth, answer = turn("Where did I travel?")
    assert fifth[0] == system and fifth[1] != repinned
    assert all(line in fifth[1]["content"] for line in big)
    assert not any("<memory_update>" in m["content"] for m in fifth)
    assert answer.sent_along["pinned"]["state"] == "repinned"
    sixth, answer = turn("Anything else?")
    assert sixth[:2] == fifth[:2]
    assert answer.sent_along["pinned"]["state"] == "unchanged"


@pytest.mark.parametrize("switch", ["conversation", "kill_switch"])
def test_with_memory_off_no_memory_message_and_no_reminder_go(
    turn, person, conversation, settings, switch
):
    _index(person, TEA)
    turn("Hello")
    _index(person, TEA, BIKE)
    if switch == "kill_switch":
        settings.MEMORY_AI_MEMORY = "off"
    else:
        conversation.memory_on = False
        conversation.save()
    messages, answer = turn("Hello again")
    sent = json.dumps(messages)
    assert "<memory" not in sent and CONTEXT_LEAD not in sent
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert answer.sent_along["pinned"]["state"] == "off"


def test_history_trimming_leaves_room_for_the_host_context_the_reminder_and_the_excerpts(
    turn, fake_openai, person, conversation, profile, handbook
):
    profile.context_window = 2048
    profile.save()
    _index(person, TEA)
    turn("First question about tea")
    for i in range(30):
        Message.objects.create(conversation=conversation, role="user", content=f"q{i} " * 40)
        Message.objects.create(conversation=conversation, role="assistant", content=f"a{i} " * 40)
    _index(person, TEA, BIKE)
    messages, answer = turn("How do I brew green tea?")
    assert answer.sent_along["pinned"]["state"] == "reminded"
    assert answer.sent_along["history"]["trimmed"] > 0
    reserve = min(1024, profile.context_window // 4)
    used = sum(estimate_tokens(m["content"]) + 4 for m in messages)
    tools = estimate_tokens(json.dumps(fake_openai.chat_requests[-1]["tools"]))
    assert used + tools <= profile.context_window - reserve
    assert messages[-3]["content"].startswith("<memory_update>")  # none of it was cut


def _send(client, via: str, conversation_id: int, text: str) -> None:
    if via == "page":
        response = client.post(
            f"/chat/{conversation_id}/send/", {"text": text}, headers={"HX-Request": "true"}
        )
    else:
        response = client.post(
            f"/api/chat/conversations/{conversation_id}/messages",
            {"text": text},
            content_type="application/json",
        )
    assert response.status_code < 300, response.content


@pytest.mark.parametrize("via", ["page", "api"])
def test_turns_sent_from_the_page_or_the_api_keep_the_prefix(
    via, client, fake_openai, person, conversation, unconsumed_chat_queue
):
    client.force_login(person)
    requests = []
    for text, lines in (("One", (TEA,)), ("Two", (TEA, BIKE))):
        _index(person, *lines)
        _send(client, via, conversation.pk, text)
        answer = Message.objects.filter(conversation=conversation, role="assistant").latest("pk")
        turn_run(message_id=answer.pk)
        requests.append(fake_openai.chat_requests[-1]["messages"])
    first, second = requests
    assert second[:2] == first[:2] and first[0]["content"] == SYSTEM
    assert f"+ {BIKE}" in second[-2]["content"]
    assert second[-1] == {"role": "user", "content": "Two"}


def test_a_context_pinned_for_a_local_model_is_pinned_anew_for_a_remote_one(
    turn, fake_openai, person, profile
):
    password = "Hunter2Secret99"
    profile.runs_locally = True
    profile.save(update_fields=["runs_locally"])
    # A note that holds a secret from before the guard: sent verbatim to a local model.
    MemoryFile.objects.create(
        scope=ensure_user_scope(person),
        path="index.md",
        content=f"- wifi: the password is {password}\n",
        sha256="x",
    )
    local, _ = turn("Hello")
    assert password in local[1]["content"]
    profile.runs_locally = False
    profile.save(update_fields=["runs_locally"])
    remote, answer = turn("Hello again")
    assert answer.sent_along["pinned"]["state"] == "repinned"
    assert "the password is [masked]" in remote[1]["content"]
    assert password not in PinnedContext.objects.get().text
