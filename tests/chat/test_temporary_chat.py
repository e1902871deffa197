"""Temporary chats (M22): started from the page or REST, marked everywhere they show, never
listed, writing no memory from the model's tools, and gone once ended, left or old."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.conf import settings
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from accounts.services import messaging_binding_create
from addons.services import addon_setting_put
from bridges.services import bridge_conversation
from chat import services
from chat.models import Conversation, Message, Question
from chat.prompt import TEMPORARY_NOTE
from chat.runner import message_finish, turn_run
from chat.services import ChatRefused, stop_requested
from memory_addon.addons import MEMORY_ADDON, SAVE_MODE
from memory_addon.models import ChangeSet, MemoryFile, Proposal
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import ensure_user_scope
from memory_addon.turns import TEMPORARY_REFUSAL
from tests.chat.test_live import _cookie, _socket
from tests.conftest import Api

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("unconsumed_chat_queue"),
]

ADD_HOME = json.dumps({"action": "add", "text": "- home: lives in Rome -> home.md"})


@pytest.fixture
def api(client, person) -> Api:
    client.force_login(person)
    return Api(client)


@pytest.fixture
def temporary(person, profile) -> Conversation:
    return services.conversation_create(user=person, temporary=True)


def remember_my_home(fake_openai, ask, conversation: Conversation) -> Message:
    """The scripted model asks to save a note, then answers; the turn runs here."""
    fake_openai.chat_replies += [
        {"tool_calls": [{"id": "c1", "name": "propose_change", "arguments": ADD_HOME}]},
        {"content": "Noted."},
    ]
    answer = ask("Remember that I live in Rome", conversation)
    turn_run(message_id=answer.pk)
    answer.refresh_from_db()
    return answer


def nothing_written(person) -> bool:
    return not (
        Proposal.objects.filter(user=person).exists()
        or ChangeSet.objects.filter(user=person).exists()
        or MemoryFile.objects.filter(scope__owner=person).exists()
    )


def test_the_new_chat_form_starts_a_temporary_chat_marked_on_its_page(client, person, profile):
    client.force_login(person)
    form = client.get(reverse("chat")).content.decode()
    assert 'name="temporary"' in form and "Temporary chat" in form
    response = client.post(
        reverse("chat_new"), {"temporary": "on", "memory_on": "on", "text": "Just between us"}
    )
    conversation = Conversation.objects.get(owner=person)
    assert response.url == reverse("chat_conversation", args=[conversation.pk])
    assert conversation.temporary and conversation.memory_on
    page = client.get(response.url).content.decode()
    assert 'id="temporary-badge"' in page
    assert "it reads your memory but saves nothing to it" in page
    assert "End temporary chat" in page
    assert reverse("chat_delete", args=[conversation.pk]) not in page


def test_a_temporary_chat_that_reads_no_memory_says_so(client, person, profile):
    client.force_login(person)
    response = client.post(reverse("chat_new"), {"temporary": "on", "text": "Hi"})
    assert not Conversation.objects.get(owner=person).memory_on
    page = client.get(response.url).content.decode()
    assert "it neither reads nor saves memory" in page


def test_rest_starts_a_temporary_chat_and_every_answer_carries_the_flag(api, person, profile):
    created = api.post("/api/chat/conversations", {"temporary": True})
    assert created.status_code == 201 and created.json()["temporary"] is True
    conversation_id = created.json()["id"]
    detail = api.get(f"/api/chat/conversations/{conversation_id}").json()
    assert detail["conversation"]["temporary"] is True
    ordinary = api.post("/api/chat/conversations", {})
    assert ordinary.json()["temporary"] is False


def test_rest_refuses_a_temporary_flag_that_is_not_a_boolean_naming_the_field(api, profile):
    response = api.post("/api/chat/conversations", {"temporary": "perhaps"})
    assert response.status_code == 422
    assert "temporary" in json.dumps(response.json())
    assert not Conversation.objects.exists()


def test_a_temporary_chat_is_never_listed_nor_found_by_search(
    client, api, person, profile, temporary, conversation
):
    Message.objects.create(conversation=temporary, role="user", content="secret garden plans")
    Message.objects.create(conversation=conversation, role="user", content="garden plans")
    page = client.get(reverse("chat")).content.decode()
    assert reverse("chat_conversation", args=[conversation.pk]) in page
    assert reverse("chat_conversation", args=[temporary.pk]) not in page
    found = client.get(reverse("chat"), {"q": "garden"}).content.decode()
    assert reverse("chat_conversation", args=[temporary.pk]) not in found
    for url in ("/api/chat/conversations", "/api/chat/conversations?q=secret"):
        assert temporary.pk not in [row["id"] for row in api.get(url).json()]


@pytest.mark.parametrize("save_mode", ["ask", "auto"])
def test_the_models_memory_change_is_refused_and_nothing_is_written(
    fake_openai, client, person, ask, temporary, save_mode
):
    addon_setting_put(user=person, addon=MEMORY_ADDON, key=SAVE_MODE, value=save_mode)
    answer = remember_my_home(fake_openai, ask, temporary)
    assert answer.state == Message.State.COMPLETE
    call = answer.tool_calls[0]
    assert call["name"] == "propose_change" and call["ok"] is False
    assert TEMPORARY_REFUSAL in call["result"]
    assert nothing_written(person)
    client.force_login(person)
    page = client.get(reverse("chat_conversation", args=[temporary.pk])).content.decode()
    assert TEMPORARY_REFUSAL in page  # the refused call, under the answer
    assert "proposal-card" not in page and "Remember as rule" not in page


def test_the_model_is_offered_no_writing_tool_and_told_the_chat_saves_nothing(
    fake_openai, person, ask, temporary
):
    file_write(
        user=person,
        scope=ensure_user_scope(person),
        path="index.md",
        content="- diet: vegetarian -> diet.md\n",
        base_sha256="",
    )
    fake_openai.chat_replies.append({"content": "Vegetables, then."})
    turn_run(message_id=ask("What should I cook?", temporary).pk)
    request = fake_openai.chat_requests[-1]
    offered = {tool["function"]["name"] for tool in request["tools"]}
    assert "propose_change" not in offered and "revert_change" not in offered
    assert {"context_read", "list_memory"} <= offered
    assert TEMPORARY_NOTE in request["messages"][0]["content"]  # the instructions say so
    assert "vegetarian" in fake_openai.prompt()  # it reads memory


def test_a_temporary_chat_without_memory_reads_none(fake_openai, person, ask, profile):
    file_write(
        user=person,
        scope=ensure_user_scope(person),
        path="index.md",
        content="- diet: vegetarian -> diet.md\n",
        base_sha256="",
    )
    chat = services.conversation_create(user=person, temporary=True, memory_on=False)
    fake_openai.chat_replies.append({"content": "Anything you like."})
    turn_run(message_id=ask("What should I cook?", chat).pk)
    assert "vegetarian" not in fake_openai.prompt()


def test_ending_on_the_page_deletes_the_chat_and_its_messages(client, person, temporary):
    Message.objects.create(conversation=temporary, role="user", content="Hi")
    client.force_login(person)
    response = client.post(reverse("chat_temporary_end", args=[temporary.pk]), follow=True)
    assert "The temporary chat was ended and deleted." in response.content.decode()
    assert not Conversation.objects.filter(pk=temporary.pk).exists()
    assert not Message.objects.filter(conversation_id=temporary.pk).exists()


def test_ending_over_rest_deletes_it_and_an_ordinary_chat_cannot_be_ended(
    api, temporary, conversation
):
    assert api.post(f"/api/chat/conversations/{temporary.pk}/end").status_code == 204
    assert not Conversation.objects.filter(pk=temporary.pk).exists()
    refused = api.post(f"/api/chat/conversations/{conversation.pk}/end")
    assert refused.status_code == 400
    assert "Only a temporary chat can be ended" in refused.json()["detail"]
    assert Conversation.objects.filter(pk=conversation.pk).exists()


@pytest.mark.parametrize("entry", ["page", "rest"])
def test_starting_another_conversation_deletes_the_open_temporary_one(
    client, api, person, temporary, conversation, entry
):
    if entry == "page":
        client.post(reverse("chat_new"), {"text": "Something else"})
    else:
        assert api.post("/api/chat/conversations", {}).status_code == 201
    assert not Conversation.objects.filter(pk=temporary.pk).exists()
    assert Conversation.objects.filter(pk=conversation.pk).exists()  # ordinary ones stay


def test_ending_while_an_answer_is_written_stops_it_and_the_purge_deletes_it_afterwards(
    client, api, person, ask, temporary
):
    answer = ask("Write me a long story", temporary)
    services.temporary_conversation_end(conversation=temporary)
    assert stop_requested(answer)
    temporary.refresh_from_db()
    assert temporary.closed_at is not None  # hidden, not deleted under the worker
    assert api.get(f"/api/chat/conversations/{temporary.pk}").status_code == 404
    client.force_login(person)
    assert client.get(reverse("chat_conversation", args=[temporary.pk])).status_code == 404
    assert services.temporary_conversations_purge() == 0  # still answering
    message_finish(message=answer, state=Message.State.STOPPED, only_if_streaming=True)
    assert services.temporary_conversations_purge() == 1
    assert not Conversation.objects.filter(pk=temporary.pk).exists()


def test_an_ended_chat_that_still_answers_takes_no_new_message(person, ask, temporary):
    ask("First", temporary)
    services.temporary_conversation_end(conversation=temporary)
    temporary.refresh_from_db()
    with pytest.raises(ChatRefused, match="was ended"):
        services.message_send(user=person, conversation=temporary, text="More")


def test_the_purge_deletes_temporary_chats_past_the_keep_time_and_nothing_else(
    settings, person, profile, temporary, conversation
):
    settings.CHAT_TEMPORARY_KEEP_HOURS = 24
    old = timezone.now() - timedelta(hours=25)
    Conversation.objects.filter(pk__in=[temporary.pk, conversation.pk]).update(created_at=old)
    # A second, recent temporary chat (started over REST it would close the first one).
    recent = Conversation.objects.create(owner=person, ai_profile=profile, temporary=True)
    assert services.temporary_conversations_purge() == 1
    assert set(Conversation.objects.values_list("pk", flat=True)) == {conversation.pk, recent.pk}


def test_the_purge_runs_as_a_beat_job():
    from config.celery import app

    jobs = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert "chat.temporary_purge" in jobs
    assert "chat.temporary_purge" in app.tasks


def test_a_messaging_apps_conversation_is_never_temporary(person, profile):
    binding, _ = messaging_binding_create(owner=person, bridge="standard", external_id="phone")
    conversation = bridge_conversation(binding)
    assert conversation.temporary is False
    with pytest.raises(IntegrityError), transaction.atomic():
        Conversation.objects.filter(pk=conversation.pk).update(temporary=True)


def test_a_scheduled_run_cannot_be_temporary(person, profile):
    with pytest.raises(ChatRefused, match="Only a conversation with a person"):
        services.conversation_create(user=person, temporary=True, run_kind="scheduled")
    assert not Conversation.objects.exists()


def test_the_export_says_it_is_a_temporary_chat(client, person, temporary):
    Message.objects.create(conversation=temporary, role="user", content="Hi")
    client.force_login(person)
    response = client.get(reverse("chat_export", args=[temporary.pk]))
    text = b"".join(response.streaming_content if response.streaming else [response.content])
    assert "- Temporary chat: nothing from it was saved to memory" in text.decode()


def test_live_pushed_answers_keep_the_temporary_badge(fake_openai, person, ask, temporary):
    fake_openai.chat_replies.append({"content": "Quietly."})
    answer = ask("Hi", temporary)
    cookie = _cookie(person)

    async def scenario() -> list[str]:
        socket = await _socket(cookie)
        try:
            await sync_to_async(turn_run)(message_id=answer.pk)
            received = []
            while True:
                fragment = await socket.receive_from(timeout=5)
                received.append(fragment)
                if 'data-state="complete"' in fragment:
                    return received
        finally:
            await socket.disconnect()

    received = async_to_sync(scenario)()
    messages = [f for f in received if f.startswith(f'<article id="message-{answer.pk}"')]
    assert messages and all('data-temporary="true"' in f for f in messages)
    assert 'class="badge temporary"' in messages[-1]


def test_the_temporary_chat_page_reads_in_german(client, person, temporary):
    client.force_login(person)
    url = reverse("chat_conversation", args=[temporary.pk])
    page = client.get(url, headers={"accept-language": "de-DE,de;q=0.9"}).text
    assert ">Vorübergehend</span>" in page and "Vorübergehenden Chat beenden" in page
    assert "Er liest Ihr Gedächtnis, speichert aber nichts darin" in page
    assert "End temporary chat" not in page


def test_a_question_waiting_in_a_temporary_chat_is_marked_in_the_inbox(client, person, temporary):
    Message.objects.create(conversation=temporary, role="user", content="Plan my trip")
    answer = Message.objects.create(
        conversation=temporary, role="assistant", state=Message.State.WAITING
    )
    Question.objects.create(
        owner=person,
        message=answer,
        number=1,
        call_id="q1",
        text="Train or plane?",
        why="Only you know.",
        options=["Train", "Plane"],
        expires_at=timezone.now() + timedelta(minutes=10),
    )
    client.force_login(person)
    inbox = client.get(reverse("inbox")).content.decode()
    assert "Train or plane?" in inbox and 'class="badge temporary"' in inbox
    assert "Permanent rule" not in inbox
    services.temporary_conversation_end(conversation=temporary)  # a parked answer has no worker
    assert not Conversation.objects.filter(pk=temporary.pk).exists()
    assert "Train or plane?" not in client.get(reverse("inbox")).content.decode()


@pytest.mark.parametrize(
    "action",
    [
        lambda person, chat: services.message_send(user=person, conversation=chat, text="More"),
        lambda person, chat: services.answer_regenerate(user=person, conversation=chat),
        lambda person, chat: services.last_message_edit(user=person, conversation=chat, text="x"),
    ],
    ids=["send", "regenerate", "edit"],
)
def test_a_chat_ended_in_another_tab_refuses_what_this_tab_sends(person, temporary, action):
    Message.objects.create(conversation=temporary, role="user", content="Hi")
    services.temporary_conversation_end(conversation=Conversation.objects.get(pk=temporary.pk))
    with pytest.raises(ChatRefused, match="deleted meanwhile"):
        action(person, temporary)  # this tab's copy, read before the chat was ended
    assert not Message.objects.exists()
