"""The chat pages and API: owner checks, list and search, rename, delete, export, states."""

from __future__ import annotations

import pytest
import yaml
from django.conf import settings
from django.urls import reverse

from chat.models import Conversation, Message
from chat.services import (
    ChatRefused,
    answer_regenerate,
    conversation_create,
    last_message_edit,
    message_send,
)
from host.core.markdown import render_markdown
from tests.conftest import ROOT
from tests.factories import AIProfileFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def client_for(client):
    def sign_in(user):
        client.force_login(user)
        return client

    return sign_in


@pytest.fixture
def stranger_conversation():
    other = UserFactory()
    profile = AIProfileFactory(owner=other)
    conversation = Conversation.objects.create(owner=other, ai_profile=profile, title="Private")
    message = Message.objects.create(conversation=conversation, role="user", content="my secret")
    return conversation, message


@pytest.mark.parametrize(
    "name",
    [
        "chat_conversation",
        "chat_export",
        "chat_delete",
    ],
)
def test_another_users_conversation_pages_answer_404(
    client_for, person, stranger_conversation, name
):
    conversation, _ = stranger_conversation
    response = client_for(person).get(reverse(name, args=[conversation.pk]))
    assert response.status_code == 404


@pytest.mark.parametrize(
    "name",
    [
        "chat_send",
        "chat_regenerate",
        "chat_edit_last",
        "chat_settings",
        "chat_rename",
        "chat_delete",
    ],
)
def test_another_users_conversation_actions_answer_404_and_change_nothing(
    client_for, person, stranger_conversation, name
):
    conversation, _ = stranger_conversation
    response = client_for(person).post(
        reverse(name, args=[conversation.pk]), {"text": "hijack", "title": "hijack"}
    )
    assert response.status_code == 404
    conversation.refresh_from_db()
    assert conversation.title == "Private"
    assert conversation.messages.count() == 1


def test_another_users_messages_answer_404(client_for, person, stranger_conversation):
    _, message = stranger_conversation
    signed_in = client_for(person)
    assert signed_in.get(reverse("chat_message", args=[message.pk])).status_code == 404
    assert signed_in.post(reverse("chat_stop", args=[message.pk])).status_code == 404


def test_another_users_conversation_answers_404_in_the_api(
    client_for, person, stranger_conversation
):
    conversation, message = stranger_conversation
    signed_in = client_for(person)
    assert signed_in.get(f"/api/chat/conversations/{conversation.pk}").status_code == 404
    assert signed_in.get(f"/api/chat/messages/{message.pk}").status_code == 404
    response = signed_in.post(
        f"/api/chat/conversations/{conversation.pk}/messages",
        {"text": "x"},
        content_type="application/json",
    )
    assert response.status_code == 404
    assert signed_in.delete(f"/api/chat/conversations/{conversation.pk}").status_code == 404
    assert Conversation.objects.filter(pk=conversation.pk).exists()
    listed = signed_in.get("/api/chat/conversations").json()
    assert conversation.pk not in [row["id"] for row in listed]


def test_without_an_ai_profile_the_page_says_how_to_add_one(client_for, person):
    response = client_for(person).get(reverse("chat"))
    assert response.status_code == 200
    assert b"No AI profile yet" in response.content
    assert reverse("accounts:settings").encode() in response.content


def test_the_list_is_newest_first_and_search_finds_title_and_text(client_for, person, profile):
    from datetime import timedelta

    from django.utils import timezone

    older = conversation_create(user=person, title="Trip to Lisbon")
    newer = conversation_create(user=person, title="Groceries")
    Message.objects.create(conversation=older, role="user", content="pastel de nata recipe")
    now = timezone.now()
    Conversation.objects.filter(pk=older.pk).update(updated_at=now - timedelta(days=1))
    Conversation.objects.filter(pk=newer.pk).update(updated_at=now)
    signed_in = client_for(person)
    page = signed_in.get(reverse("chat")).content.decode()
    assert page.index("Groceries") < page.index("Trip to Lisbon")
    found = signed_in.get(reverse("chat"), {"q": "nata"}).content.decode()
    assert "Trip to Lisbon" in found and "Groceries" not in found
    found = signed_in.get(reverse("chat"), {"q": "grocer"}).content.decode()
    assert "Groceries" in found and "Trip to Lisbon" not in found


def test_the_first_message_names_the_conversation_and_rename_changes_it(
    client_for, person, profile, django_capture_on_commit_callbacks
):
    conversation = conversation_create(user=person)
    with django_capture_on_commit_callbacks(execute=False):
        message_send(
            user=person, conversation=conversation, text="How do I bake sourdough bread at home?"
        )
    conversation.refresh_from_db()
    assert conversation.title == "How do I bake sourdough bread at home?"
    response = client_for(person).post(
        reverse("chat_rename", args=[conversation.pk]), {"title": "Bread"}
    )
    assert response.status_code == 302
    conversation.refresh_from_db()
    assert conversation.title == "Bread"


def test_sending_while_an_answer_is_written_is_refused(
    person, profile, django_capture_on_commit_callbacks
):
    conversation = conversation_create(user=person)
    with django_capture_on_commit_callbacks(execute=False):
        message_send(user=person, conversation=conversation, text="One")
        with pytest.raises(Exception, match="still being written"):
            message_send(user=person, conversation=conversation, text="Two")


def test_delete_asks_first_then_deletes(client_for, person, profile):
    conversation = conversation_create(user=person, title="Old")
    signed_in = client_for(person)
    confirm = signed_in.get(reverse("chat_delete", args=[conversation.pk]))
    assert b"Delete \xe2\x80\x9cOld\xe2\x80\x9d?" in confirm.content
    assert Conversation.objects.filter(pk=conversation.pk).exists()
    signed_in.post(reverse("chat_delete", args=[conversation.pk]))
    assert not Conversation.objects.filter(pk=conversation.pk).exists()


def test_export_is_markdown_with_the_messages(client_for, person, profile):
    conversation = conversation_create(user=person, title="Plans")
    Message.objects.create(conversation=conversation, role="user", content="What now?")
    Message.objects.create(
        conversation=conversation,
        role="assistant",
        content="Read [R1].",
        citations=[{"n": 1, "marker": "[R1]", "path": "notes/plan.md", "page": None}],
    )
    response = client_for(person).get(reverse("chat_export", args=[conversation.pk]))
    assert response["Content-Type"].startswith("text/markdown")
    text = response.content.decode()
    assert text.startswith("# Plans")
    assert "## You\n\nWhat now?" in text and "## Assistant\n\nRead [R1]." in text
    assert "- [R1] notes/plan.md" in text


def test_a_deleted_conversation_takes_its_kept_export_with_it(
    client_for, person, profile, settings, tmp_path
):
    """An export is kept in the exports storage until the next one of its kind; deleting
    the conversation left its transcript there until the whole account went."""
    from host import filestore
    from host.leftovers import leftovers_clear

    exports = {"BACKEND": "django.core.files.storage.FileSystemStorage"}
    settings.STORAGES = {
        **settings.STORAGES,
        "exports": {**exports, "OPTIONS": {"location": tmp_path}},
    }

    going, staying = (conversation_create(user=person, title=t) for t in ("Going", "Staying"))
    client = client_for(person)
    for conversation in (going, staying):
        Message.objects.create(conversation=conversation, role="user", content="Kept text")
        assert client.get(reverse("chat_export", args=[conversation.pk])).status_code == 200
    folder = filestore.local_folder(filestore.exports())
    assert folder is not None
    kept = folder / filestore.exports_folder(person.pk)
    assert len(list(kept.iterdir())) == 2

    assert client.delete(f"/api/chat/conversations/{going.pk}").status_code == 204
    assert leftovers_clear() == 1  # what the worker's sweep runs after the commit
    assert [p.name.split("-")[1] for p in kept.iterdir()] == [str(staying.pk)]


def test_an_export_written_while_its_conversation_is_deleted_is_not_kept(
    client_for, person, profile, settings, tmp_path, monkeypatch
):
    """The delete's sweep may run before the export's file exists: the export checks
    the conversation once its file is kept, and drops it if the row is gone."""
    from chat import views as chat_views

    exports = {"BACKEND": "django.core.files.storage.FileSystemStorage"}
    settings.STORAGES = {
        **settings.STORAGES,
        "exports": {**exports, "OPTIONS": {"location": tmp_path}},
    }
    conversation = conversation_create(user=person, title="Going")
    Message.objects.create(conversation=conversation, role="user", content="Kept text")
    real = chat_views.conversation_markdown

    def deleted_meanwhile(exported):
        text = real(exported)
        Conversation.objects.filter(pk=exported.pk).delete()  # another request's delete
        return text

    monkeypatch.setattr(chat_views, "conversation_markdown", deleted_meanwhile)
    response = client_for(person).get(reverse("chat_export", args=[conversation.pk]))
    assert response.status_code == 404
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_a_failed_answer_shows_its_reason_and_retry(client_for, person, profile):
    conversation = conversation_create(user=person, title="T")
    Message.objects.create(conversation=conversation, role="user", content="Hi")
    Message.objects.create(
        conversation=conversation,
        role="assistant",
        state="failed",
        content="Half",
        error="The AI server at http://x/v1 is unreachable (ConnectError).",
    )
    page = client_for(person).get(reverse("chat_conversation", args=[conversation.pk]))
    html = page.content.decode()
    assert "is unreachable" in html and ">Retry</button>" in html
    assert 'data-state="failed"' in html


def test_memory_off_and_no_tools_are_said_on_the_page(client_for, person):
    profile = AIProfileFactory(owner=person, supports_tools=False)
    conversation = conversation_create(user=person, profile_id=profile.pk, memory_on=False)
    html = client_for(person).get(reverse("chat_conversation", args=[conversation.pk])).content
    assert b"Memory is off for this conversation" in html
    assert b"proposals are unavailable" in html


def test_answers_are_rendered_without_raw_html_scripts_or_javascript_links():
    html = render_markdown(
        "Hi <script>alert(1)</script> <img src=x onerror=alert(1)> "
        "[click](javascript:alert(1)) [ok](https://example.org)\n\n```\ncode\n```"
    )
    assert "<script" not in html and "<img" not in html
    assert "javascript:" not in html.replace("[click](javascript:alert(1))", "")
    assert 'href="https://example.org"' in html
    assert "<pre><code>code\n</code></pre>" in html


def test_citation_markers_link_to_their_excerpt_only_when_the_excerpt_exists():
    html = render_markdown("See [R1] and [R7].", anchor_prefix="cite-3-", markers={1})
    assert '<a href="#cite-3-1"' in html
    assert "[R7]" in html and "#cite-3-7" not in html


def test_chat_jobs_have_their_own_queue_and_a_thread_pool_worker_in_compose():
    assert settings.CELERY_TASK_ROUTES["chat.turn_run"] == {"queue": settings.CHAT_QUEUE}
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    command = " ".join(compose["services"]["chat-worker"]["command"])
    assert "-Q $${CHAT_QUEUE:-chat}" in command and "--pool threads" in command
    assert "-Q celery" in " ".join(compose["services"]["worker"]["command"])  # indexing


def test_regenerate_replaces_the_last_answer_with_a_new_one(
    person, profile, django_capture_on_commit_callbacks
):
    conversation = conversation_create(user=person)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        first = message_send(user=person, conversation=conversation, text="Hi")
    assert len(callbacks) == 1  # the turn is queued once the message is stored
    Message.objects.filter(pk=first.pk).update(state="complete", content="Old answer")
    with django_capture_on_commit_callbacks(execute=False):
        second = answer_regenerate(user=person, conversation=conversation)
    assert not Message.objects.filter(pk=first.pk).exists()
    assert list(conversation.messages.values_list("role", "state")) == [
        ("user", "complete"),
        ("assistant", "streaming"),
    ]
    assert second.pk != first.pk


def test_edit_last_message_changes_it_and_answers_again(
    person, profile, django_capture_on_commit_callbacks
):
    conversation = conversation_create(user=person)
    with django_capture_on_commit_callbacks(execute=False):
        first = message_send(user=person, conversation=conversation, text="Waht is 2+2?")
    Message.objects.filter(pk=first.pk).update(state="complete", content="Unclear.")
    with django_capture_on_commit_callbacks(execute=False):
        last_message_edit(user=person, conversation=conversation, text="What is 2+2?")
    rows = list(conversation.messages.values_list("role", "content", "state"))
    assert rows == [("user", "What is 2+2?", "complete"), ("assistant", "", "streaming")]


def test_the_edit_last_form_resends_the_edited_message(
    client_for, person, profile, django_capture_on_commit_callbacks
):
    conversation = conversation_create(user=person)
    with django_capture_on_commit_callbacks(execute=False):
        answer = message_send(user=person, conversation=conversation, text="Helo")
    Message.objects.filter(pk=answer.pk).update(state="failed", error="x")
    signed_in = client_for(person)
    page = signed_in.get(reverse("chat_conversation", args=[conversation.pk])).content.decode()
    assert "Edit your last message" in page and ">Helo</textarea>" in page
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = signed_in.post(
            reverse("chat_edit_last", args=[conversation.pk]), {"text": "Hello"}
        )
    assert response.status_code == 302 and len(queued) == 1
    assert conversation.messages.get(role="user").content == "Hello"


def test_a_streaming_answer_whose_worker_went_quiet_says_so(client_for, person, profile):
    from datetime import timedelta

    from django.utils import timezone

    conversation = conversation_create(user=person)
    Message.objects.create(conversation=conversation, role="user", content="Hi")
    Message.objects.create(
        conversation=conversation,
        role="assistant",
        state="streaming",
        started_at=timezone.now() - timedelta(minutes=2),
        heartbeat_at=timezone.now() - timedelta(minutes=1),
    )
    html = client_for(person).get(reverse("chat_conversation", args=[conversation.pk])).content
    assert b"has not moved for a while" in html


def test_the_pickers_change_profile_agent_collections_and_memory_for_the_next_answers(
    client_for, person, profile
):
    from knowledge.services import store_create
    from tests.factories import AgentFactory

    conversation = conversation_create(user=person)
    other_profile = AIProfileFactory(owner=person, name="Second", supports_tools=False)
    agent = AgentFactory(owner=person)
    store = store_create(owner=person, name="Docs", provider="none")
    signed_in = client_for(person)
    signed_in.post(
        reverse("chat_settings", args=[conversation.pk]),
        {"profile": other_profile.pk, "agent": agent.pk, "stores": [store.pk]},
    )
    conversation.refresh_from_db()
    assert conversation.ai_profile == other_profile and conversation.agent == agent
    assert list(conversation.stores.all()) == [store] and conversation.memory_on is False


def test_the_pickers_refuse_another_users_profile_agent_or_collection(client_for, person, profile):
    from knowledge.services import store_create
    from tests.factories import AgentFactory

    stranger = UserFactory()
    conversation = conversation_create(user=person)
    signed_in = client_for(person)
    for field, value in [
        ("profile", AIProfileFactory(owner=stranger).pk),
        ("agent", AgentFactory(owner=stranger).pk),
        ("stores", store_create(owner=stranger, name="Theirs", provider="none").pk),
    ]:
        signed_in.post(
            reverse("chat_settings", args=[conversation.pk]), {field: value, "memory_on": "on"}
        )
        conversation.refresh_from_db()
        assert conversation.ai_profile == profile and conversation.agent is None
        assert not conversation.stores.exists()


def test_the_page_says_when_older_messages_were_trimmed(client_for, person, profile):
    conversation = conversation_create(user=person)
    Message.objects.create(conversation=conversation, role="user", content="Hi")
    Message.objects.create(
        conversation=conversation,
        role="assistant",
        content="Hello",
        sent_along={
            "memory": {"items": [], "omitted": 0, "budget": 1500, "off": ""},
            "excerpts": [],
            "retrieval": {},
            "history": {"sent": 2, "trimmed": 3},
            "tools": True,
            "tools_note": "",
        },
    )
    html = client_for(person).get(reverse("chat_conversation", args=[conversation.pk])).content
    assert b"older messages trimmed" in html
    assert b"3 older messages did not fit the model" in html


def test_the_conversation_page_query_count_does_not_grow_with_messages(client_for, person, profile):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    conversation = conversation_create(user=person)
    signed_in = client_for(person)

    def add_turns(count: int) -> None:
        for number in range(count):
            Message.objects.create(conversation=conversation, role="user", content=f"q{number}")
            Message.objects.create(
                conversation=conversation,
                role="assistant",
                content=f"a{number} [R1]",
                citations=[{"n": 1, "marker": "[R1]", "path": "x.md", "page": None, "text": "t"}],
                sent_along={"memory": {"items": []}, "history": {}, "tools": True},
            )

    def count() -> int:
        url = reverse("chat_conversation", args=[conversation.pk])
        with CaptureQueriesContext(connection) as queries:
            assert signed_in.get(url).status_code == 200
        return len(queries)

    add_turns(2)
    few = count()
    add_turns(10)
    assert count() == few


def test_a_message_longer_than_the_model_can_read_is_refused_before_it_is_stored(
    client_for, person, profile, django_capture_on_commit_callbacks
):
    profile.context_window = 512  # 384 tokens for the prompt, 128 kept for the answer
    profile.save()
    conversation = conversation_create(user=person)
    signed_in = client_for(person)
    long_text = "All the minutes of the meeting, word for word. " * 80
    response = signed_in.post(
        f"/api/chat/conversations/{conversation.pk}/messages",
        {"text": long_text},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "too long for" in response.json()["detail"] and "384" in response.json()["detail"]
    assert not conversation.messages.exists()
    # Editing the last message into one that long is refused the same way.
    with django_capture_on_commit_callbacks(execute=False):
        message_send(user=person, conversation=conversation, text="Short question")
    conversation.messages.filter(role="assistant").update(state="complete", content="Answer.")
    with pytest.raises(ChatRefused, match="too long for"):
        last_message_edit(user=person, conversation=conversation, text=long_text)
    assert conversation.messages.get(role="user").content == "Short question"
    # The page says it in the person's language, and nothing is stored.
    conversation.messages.all().delete()
    german = signed_in.post(
        reverse("chat_send", args=[conversation.pk]),
        {"text": long_text},
        headers={"accept-language": "de", "hx-request": "true"},
    ).content.decode()
    assert "Diese Nachricht ist zu lang" in german and not conversation.messages.exists()


@pytest.mark.django_db(transaction=True)
def test_no_path_sends_a_model_a_message_longer_than_it_reads(person, profile, fake_openai):
    from chat.runner import turn_run
    from chat.schedules import schedule_create

    small = AIProfileFactory(owner=person, base_url=fake_openai.base_url, context_window=512)
    long_text = "All the minutes of the meeting, word for word. " * 80
    # A schedule with that prompt is refused when it is made.
    with pytest.raises(ChatRefused, match="too long for"):
        schedule_create(
            user=person, name="Minutes", prompt=long_text, profile_id=small.pk, every_minutes=60
        )
    # Sent to a large model, then the chat moves to the small one: regenerate is refused.
    conversation = conversation_create(user=person, profile_id=profile.pk)
    answer = message_send(user=person, conversation=conversation, text=long_text)
    turn_run(message_id=answer.pk)
    conversation.ai_profile = small
    conversation.save()
    with pytest.raises(ChatRefused, match="too long for"):
        answer_regenerate(user=person, conversation=conversation)
    # A message stored without asking (a bridge's) fails at its turn, the model unasked.
    Message.objects.filter(conversation=conversation, role="assistant").delete()
    asked = len(fake_openai.chat_requests)
    stored = Message.objects.create(
        conversation=conversation, role="assistant", state=Message.State.STREAMING
    )
    turn_run(message_id=stored.pk)
    stored.refresh_from_db()
    assert stored.state == Message.State.FAILED and "too long for" in stored.error
    assert len(fake_openai.chat_requests) == asked
