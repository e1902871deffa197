"""Past-chat search (B10): one search over a person's own conversations, by words and by
meaning, from the conversation list, REST, the chat's model tool, the memory-tool
endpoint and MCP."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.urls import reverse

from accounts.services import api_token_create, messaging_binding_create
from chat import services
from chat.models import Conversation, Message, MessageEmbedding
from chat.runner import turn_run
from chat.search import (
    MAX_QUERY_CHARS,
    SNIPPET_WIDTH,
    _keyword,
    conversations_search,
    message_embeddings_refresh,
)
from host.core.markdown import render_markdown
from host.embeddings import FastembedEmbedder
from memory_addon.services.tools import tool_call_execute, tool_schemas
from memory_addon.turns import Turn
from tests.conftest import Api
from tests.factories import UserFactory

PARAPHRASE = "what foods are dangerous for me"
TALKS = {
    "Health": ["I am allergic to peanuts and shellfish.", "Then avoid satay and shrimp."],
    "Work": ["Quarterly budget review with Anna on Tuesday.", "I will prepare the slides."],
    "Garden": ["Planted tomatoes and basil along the south fence.", "They like the sun."],
}


def _talk(owner, title: str, lines: list[str], **fields) -> Conversation:
    conversation = Conversation.objects.create(owner=owner, title=title, **fields)
    for number, line in enumerate(lines):
        role = Message.Role.USER if number % 2 == 0 else Message.Role.ASSISTANT
        Message.objects.create(conversation=conversation, role=role, content=line)
    return conversation


@pytest.fixture
def talks(person) -> dict[str, Conversation]:
    return {title: _talk(person, title, lines) for title, lines in TALKS.items()}


def _embedded(*conversations: Conversation) -> None:
    for conversation in conversations:
        message_embeddings_refresh(conversation_id=conversation.pk)


def _search_tool(person, arguments, **turn) -> tuple[bool, str]:
    return tool_call_execute(
        turn=Turn(user=person, **turn), name="search_conversations", arguments=arguments
    )


@pytest.mark.django_db
def test_a_word_of_a_message_finds_its_conversation_with_a_bounded_snippet(person, talks):
    long_tail = "filler words " * 200
    Message.objects.create(
        conversation=talks["Work"], role="user", content=f"Anna moved the review.\n{long_tail}"
    )
    [hit] = conversations_search(person, "Anna")
    assert hit.conversation == talks["Work"]
    assert "Anna" in hit.snippet and len(hit.snippet) <= 2 * SNIPPET_WIDTH + 2
    assert hit.link == f"/chat/{talks['Work'].pk}/"
    # No vectors yet: the search is by keyword alone.
    assert not MessageEmbedding.objects.exists()


@pytest.mark.django_db
def test_a_paraphrase_without_a_shared_word_finds_the_conversation_by_meaning(person, talks):
    assert _keyword(person.pk, PARAPHRASE, 0, 10) == ([], {})  # no word in common
    _embedded(*talks.values())
    hits = conversations_search(person, PARAPHRASE)
    assert hits and hits[0].conversation == talks["Health"]
    assert "peanuts" in hits[0].snippet or "satay" in hits[0].snippet


@pytest.mark.django_db
def test_another_persons_conversation_is_never_found_by_word_or_meaning(person, talks):
    stranger = UserFactory()
    theirs = _talk(stranger, "Peanuts", ["My peanuts allergy is severe.", "Take care."])
    _embedded(theirs, *talks.values())
    for query in ("peanuts", PARAPHRASE):
        found = [hit.conversation for hit in conversations_search(person, query)]
        assert theirs not in found and talks["Health"] in found
    assert [hit.conversation for hit in conversations_search(stranger, "shellfish")] == []


@pytest.mark.django_db
def test_another_persons_conversation_is_never_found_by_the_tool_rest_or_page(
    client, person, talks
):
    stranger = UserFactory()
    theirs = _talk(stranger, "Peanuts", ["My peanuts allergy is severe.", "Take care."])
    _embedded(theirs, *talks.values())
    ok, output = _search_tool(person, {"query": "peanuts"})
    assert ok and f"/chat/{talks['Health'].pk}/" in output and f"/chat/{theirs.pk}/" not in output
    client.force_login(person)
    api = Api(client)
    called = api.post(
        "/api/memory/tools/call",
        {"turn": {}, "name": "search_conversations", "arguments": {"query": "peanuts"}},
    ).json()
    assert called["ok"] and f"/chat/{theirs.pk}/" not in called["output"]
    assert f"/chat/{talks['Health'].pk}/" in called["output"]
    listed = [row["id"] for row in api.get("/api/chat/conversations?q=peanuts").json()]
    assert listed == [talks["Health"].pk]
    page = client.get(reverse("chat"), {"q": "peanuts"}).content.decode()
    assert reverse("chat_conversation", args=[talks["Health"].pk]) in page
    assert reverse("chat_conversation", args=[theirs.pk]) not in page


@pytest.mark.django_db
def test_a_temporary_chat_is_never_found_nor_embedded(person, profile, talks):
    temporary = services.conversation_create(user=person, temporary=True)
    Message.objects.create(conversation=temporary, role="user", content="peanuts in secret")
    assert message_embeddings_refresh(conversation_id=temporary.pk) == 0
    assert not MessageEmbedding.objects.filter(message__conversation=temporary).exists()
    _embedded(*talks.values())
    for query in ("secret", "peanuts", PARAPHRASE):
        assert temporary not in [hit.conversation for hit in conversations_search(person, query)]


@pytest.mark.django_db
def test_a_deleted_conversation_vanishes_from_the_results(person, talks):
    _embedded(*talks.values())
    talks["Health"].delete()
    assert not MessageEmbedding.objects.filter(message__conversation_id=talks["Health"].pk)
    for query in ("peanuts", PARAPHRASE):
        found = [hit.conversation.pk for hit in conversations_search(person, query)]
        assert talks["Health"].pk not in found


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({}, "'query' is missing"),
        ({"query": ""}, "'query'"),
        ({"query": "   "}, "'query' is empty"),
        ({"query": "x" * (MAX_QUERY_CHARS + 1)}, "'query'"),
        ({"query": 7}, "'query' must be a string"),
        ({"query": "peanuts", "limit": 0}, "'limit'"),
        ({"query": "peanuts", "limit": 11}, "'limit'"),
        ({"query": "peanuts", "limit": "3"}, "'limit' must be a whole number"),
        ({"query": "peanuts", "since": "2026"}, "'since' is not a field"),
    ],
)
def test_bad_tool_arguments_are_a_tool_error_naming_the_field(person, talks, arguments, field):
    ok, output = _search_tool(person, arguments)
    assert not ok and field in output, output


@pytest.mark.django_db
def test_the_tool_is_offered_with_the_memory_tools_also_in_temporary_and_strict_form():
    for read_only in (False, True):
        names = {tool["function"]["name"] for tool in tool_schemas(read_only=read_only)}
        assert "search_conversations" in names
    assert "search_conversations" not in {t["function"]["name"] for t in tool_schemas(bank=True)}
    [strict] = [
        t for t in tool_schemas(strict=True) if t["function"]["name"] == "search_conversations"
    ]
    assert strict["function"]["parameters"]["required"] == ["query", "limit"]


@pytest.mark.django_db
def test_the_tool_refuses_when_memory_is_off_for_the_turn(person, talks):
    ok, output = _search_tool(person, {"query": "peanuts"}, memory_off=True)
    assert not ok and "Memory is off" in output


@pytest.mark.django_db
def test_the_tool_refuses_in_a_messaging_apps_conversation(person, talks):
    binding, _ = messaging_binding_create(owner=person, bridge="telegram", external_id="chat-7")
    ok, output = _search_tool(person, {"query": "peanuts"}, binding=binding)
    assert not ok and "messaging app" in output and "[C1]" not in output


@pytest.mark.django_db
@pytest.mark.usefixtures("unconsumed_chat_queue")
def test_the_chats_model_finds_an_earlier_chat_and_its_answer_links_c1_to_it(
    client, fake_openai, person, profile, ask, conversation, talks
):
    Message.objects.create(conversation=conversation, role="user", content="peanuts again?")
    fake_openai.chat_replies += [
        {
            "tool_calls": [
                {
                    "id": "s1",
                    "name": "search_conversations",
                    "arguments": json.dumps({"query": "peanuts"}),
                }
            ]
        },
        {"content": "You told me about your allergy in [C1]; [C7] is not a hit."},
    ]
    answer = ask("What did I say about peanuts?")
    turn_run(message_id=answer.pk)
    answer.refresh_from_db()
    [call] = answer.tool_calls
    assert call["ok"] and "[C1] Health" in call["result"]
    # The chat it is asked from is never its own result.
    assert f"/chat/{conversation.pk}/" not in call["result"]
    client.force_login(person)
    page = client.get(reverse("chat_conversation", args=[conversation.pk])).content.decode()
    assert f'<a href="/chat/{talks["Health"].pk}/" title="Health"' in page
    assert "[C7] is not a hit" in page


def test_c_markers_link_only_to_conversations_the_answer_found():
    html = render_markdown("See [C1] and [C2].", conversations={1: (42, "Tea 'n\" (cakes)")})
    assert '<a href="/chat/42/" title="Tea n cakes"' in html
    assert "[C2]" in html and "/chat/2" not in html
    assert "href" not in render_markdown("See [C1].")


@pytest.mark.django_db
def test_the_list_search_box_finds_a_conversation_by_meaning(client, person, talks):
    _embedded(*talks.values())
    client.force_login(person)
    page = client.get(reverse("chat"), {"q": PARAPHRASE}).content.decode()
    assert reverse("chat_conversation", args=[talks["Health"].pk]) in page
    rows = Api(client).get(f"/api/chat/conversations?q={PARAPHRASE}").json()
    assert rows[0]["id"] == talks["Health"].pk


def _embedding_jobs(callbacks) -> int:
    # The one-waiting-run queue; note embeddings are off in the test settings.
    return sum("queue_once_on_commit" in c.__qualname__ for c in callbacks)


@pytest.mark.django_db
@pytest.mark.usefixtures("unconsumed_chat_queue")
def test_a_stored_message_and_a_completed_answer_queue_the_embedding_job(
    fake_openai, person, profile, ask, conversation, django_capture_on_commit_callbacks, settings
):
    settings.CHAT_MESSAGE_EMBEDDINGS_ON_WRITE = True
    with django_capture_on_commit_callbacks() as stored:
        answer = ask("Quarterly budget review with Anna on Tuesday.")
    assert _embedding_jobs(stored) == 1  # the person's message; the answer is not done
    fake_openai.chat_replies.append({"content": "I will prepare the slides."})
    with django_capture_on_commit_callbacks() as answered:
        turn_run(message_id=answer.pk)
    assert _embedding_jobs(answered) == 1
    assert message_embeddings_refresh(conversation_id=conversation.pk) == 2
    assert message_embeddings_refresh(conversation_id=conversation.pk) == 0


@pytest.mark.django_db(transaction=True)
def test_the_embedding_job_holds_no_database_connection_while_it_embeds(person, talks, monkeypatch):
    seen: list[bool] = []
    embed = FastembedEmbedder.embed

    def watched(self, texts):
        seen.append(connection.connection is None)
        return embed(self, texts)

    monkeypatch.setattr(FastembedEmbedder, "embed", watched)
    assert message_embeddings_refresh(conversation_id=talks["Health"].pk) == 2
    assert seen == [True]


@pytest.mark.django_db(transaction=True)
def test_the_embedding_job_runs_in_the_celery_worker(celery_worker, person, talks):
    from config.celery import app

    job = app.send_task("chat.message_embeddings_refresh", args=[talks["Garden"].pk])
    assert job.get(timeout=120) == 2
    assert MessageEmbedding.objects.filter(message__conversation=talks["Garden"]).count() == 2


@pytest.mark.django_db(transaction=True)
def test_over_mcp_the_tool_finds_only_the_callers_own_conversations(live_asgi_server, person):
    from tests.config.test_mcp import mcp

    mine = _talk(person, "Health", TALKS["Health"])
    stranger = UserFactory()
    theirs = _talk(stranger, "Peanuts", ["My peanuts allergy is severe.", "Take care."])
    token = api_token_create(user=person, name="mcp")[1]
    [(ok, output), (bad_ok, bad)] = mcp(
        live_asgi_server,
        token,
        [("search_conversations", {"query": "peanuts"}), ("search_conversations", {})],
    )
    assert ok and f"/chat/{mine.pk}/" in output and f"/chat/{theirs.pk}/" not in output
    assert not bad_ok and "'query' is missing" in bad
