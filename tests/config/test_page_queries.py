"""The hot pages answer in a fixed number of queries, whatever the number of items on them.

Each page is loaded with a few items and again with more; the query count is pinned and
must not grow with the items (no query per note, proposal, message or source).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from accounts.services import api_token_create
from chat.models import Conversation, Message
from knowledge.models import Job, Source
from knowledge.services import store_create
from memory_addon.services.changes import file_write
from memory_addon.services.proposals import memory_change_request
from memory_addon.services.scopes import bank_create, ensure_user_scope
from memory_addon.turns import Turn
from tests.factories import AgentFactory, AIProfileFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def person(client):
    user = UserFactory()
    client.force_login(user)
    return user


def _count(client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    return len(queries)


def _pinned(
    client, url: str, add: Callable[[int, int], None], expected: int, assert_num_queries
) -> None:
    add(0, 3)
    few = _count(client, url)
    add(3, 12)
    many = _count(client, url)
    assert few == many, f"{url}: {few} queries with 3 items, {many} with 12"
    with assert_num_queries(expected):
        assert client.get(url).status_code == 200


def test_memory_tab(client, person, django_assert_num_queries):
    scope = ensure_user_scope(person)

    def add(start: int, stop: int) -> None:
        for i in range(start, stop):  # a note linking to a topic file, and the file
            file_write(
                user=person, scope=scope, path=f"t{i}.md", content=f"topic {i}\n", base_sha256=""
            )
        index = scope.files.filter(path="index.md").first()
        lines = "".join(f"- note {i}: fact {i} -> t{i}.md\n" for i in range(stop))
        file_write(
            user=person,
            scope=scope,
            path="index.md",
            content=lines,
            base_sha256=index.sha256 if index else "",
        )

    # 12: the person's scope is read once (a page no longer makes sure it exists), and
    # the save mode is read for the policy banner.
    _pinned(client, reverse("memory"), add, 12, django_assert_num_queries)


def test_inbox(client, person, django_assert_num_queries):
    def add(start: int, stop: int) -> None:
        for i in range(start, stop):
            result = memory_change_request(
                turn=Turn(user=person, message_ref=f"m{i}", reply_ref_trusted=True),
                operation={"action": "add", "text": f"- item {i}: likes tea {i} -> tea{i}.md"},
            )
            assert result.proposal is not None

    # Session, user, proposals, their files, the policy (kill-switch and policy banners),
    # the triage cards that wait (M20), the Inbox count, the questions waiting (M19).
    _pinned(client, reverse("inbox"), add, 9, django_assert_num_queries)


def test_chat_conversation_page(client, person, django_assert_num_queries):
    conversation = Conversation.objects.create(
        owner=person, ai_profile=AIProfileFactory(owner=person), title="Busy chat"
    )

    def add(start: int, stop: int) -> None:
        for i in range(start, stop):
            Message.objects.create(conversation=conversation, role="user", content=f"q{i}")
            Message.objects.create(
                conversation=conversation,
                role="assistant",
                content=f"a{i}",
                sent_along={"memory": {"items": [], "tokens": 0}},
                citations=[{"marker": 1, "path": f"f{i}.md", "source_id": 1}],
                # With tool calls the page looks up their proposals and saves as well.
                tool_calls=[{"round": 1, "id": f"c{i}", "name": "list_memory", "ok": True}],
            )
            Conversation.objects.create(owner=person, title=f"other {i}")

    url = reverse("chat_conversation", args=[conversation.pk])
    # Besides the conversation, its messages, proposals, saves and rule cards, the Save
    # to of "Remember as rule…" reads the person's skills once (M21: add-ons, settings,
    # tags, rules, uses, host skills), the triage cards once (M20) and the questions under
    # answers once (M19); none per message. The save mode's declared setting comes from
    # the built-in manifest, with no add-on row read for it.
    _pinned(client, url, add, 24, django_assert_num_queries)


def test_knowledge_collection_page(client, person, django_assert_num_queries, tmp_path):
    store = store_create(owner=person, name="docs", provider="none")

    def add(start: int, stop: int) -> None:
        for i in range(start, stop):
            source = Source.objects.create(
                store=store,
                kind=Source.Kind.FOLDER,
                path=str(tmp_path / f"s{i}"),
                status=Source.Status.OK,
                chunk_count=i,
            )
            Job.objects.create(
                store=store, source=source, kind=Job.Kind.SCAN, state=Job.State.SUCCEEDED
            )

    url = reverse("knowledge_store", args=[store.pk])
    # Of the 10: who it is shared with and the person's organization for the sharing form.
    _pinned(client, url, add, 10, django_assert_num_queries)


def _growing(make: Callable[[int], object]) -> Callable[[int, int], None]:
    def add(start: int, stop: int) -> None:
        for i in range(start, stop):
            make(i)

    return add


def test_memory_history_and_audit(client, person, django_assert_num_queries):
    scope = ensure_user_scope(person)

    def changes(prefix: str) -> Callable[[int, int], None]:
        def change(i: int) -> None:
            path = f"{prefix}{i}.md"
            file_write(user=person, scope=scope, path=path, content=f"v{i}\n", base_sha256="")

        return _growing(change)

    _pinned(client, reverse("memory_audit"), changes("a"), 4, django_assert_num_queries)
    _pinned(client, reverse("memory_files"), changes("f"), 5, django_assert_num_queries)


def test_project_banks_screen(client, person, django_assert_num_queries):
    def bank(i: int) -> None:
        scope = bank_create(user=person, project_key=f"github.com/me/p{i}")
        file_write(user=person, scope=scope, path="MEMORY.md", content=f"p{i}\n", base_sha256="")

    _pinned(client, reverse("memory_banks"), _growing(bank), 6, django_assert_num_queries)


def test_chat_and_knowledge_lists(client, person, django_assert_num_queries):
    profile = AIProfileFactory(owner=person)

    def conversation(i: int) -> None:
        Conversation.objects.create(owner=person, ai_profile=profile, title=f"chat {i}")

    def store(i: int) -> None:
        store_create(owner=person, name=f"collection {i}", provider="none")

    _pinned(client, reverse("chat"), _growing(conversation), 10, django_assert_num_queries)
    # The list's search (B10): keyword and meaning in a fixed number of queries.
    searched = reverse("chat") + "?q=chat"
    _pinned(client, searched, _growing(conversation), 12, django_assert_num_queries)
    # Of the 5: the shared collections the person manages (one query, not one per row).
    _pinned(client, reverse("knowledge"), _growing(store), 5, django_assert_num_queries)


def test_settings_agents_and_tokens(client, person, django_assert_num_queries):
    def profile(i: int) -> None:
        AIProfileFactory(owner=person, name=f"profile {i}")

    def agent(i: int) -> None:
        AgentFactory(owner=person, name=f"agent {i}")

    def token(i: int) -> None:
        api_token_create(user=person, name=f"token {i}")

    # 5 on the settings page: the organization's Estimate complexity too (M20).
    _pinned(client, reverse("accounts:settings"), _growing(profile), 5, django_assert_num_queries)
    _pinned(client, reverse("accounts:agents"), _growing(agent), 4, django_assert_num_queries)
    _pinned(client, reverse("accounts:api_tokens"), _growing(token), 4, django_assert_num_queries)
