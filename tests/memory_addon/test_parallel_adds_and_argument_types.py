"""Parallel note adds all land; tool arguments of the wrong type are refused, not stored."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.test import Client

from accounts.models import ApiToken
from accounts.services import api_token_create
from addons.services import addon_setting_put
from memory_addon.models import ChangeSet, MemoryFile, Proposal
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import bank_create, ensure_user_scope
from memory_addon.services.tools import tool_call_execute
from memory_addon.turns import Turn
from tests.factories import UserFactory


def _index(scope) -> str:
    row = MemoryFile.objects.filter(scope=scope, path="index.md").first()
    return row.content if row else ""


@pytest.mark.django_db(transaction=True)
def test_twenty_parallel_note_adds_over_the_api_all_land():
    """An add names no version (it goes at the end): parallel adds queue, none is a 409."""
    person = UserFactory()
    scope = ensure_user_scope(person)
    file_write(
        user=person,
        scope=scope,
        path="index.md",
        content="- first\n",
        base_sha256="",
        source=ChangeSet.Source.PAGE,
    )
    _, plain = api_token_create(user=person, name="script", scope=ApiToken.Scope.READ_WRITE)
    count = 20
    statuses: list[int] = [0] * count
    start = threading.Barrier(count)

    def add(n: int) -> None:
        client = Client(HTTP_AUTHORIZATION=f"Bearer {plain}")
        start.wait()
        try:
            response = client.post(
                f"/api/memory/scopes/{scope.pk}/notes",
                {"text": f"parallel note {n}"},
                content_type="application/json",
            )
            statuses[n] = response.status_code
        finally:
            connection.close()

    threads = [threading.Thread(target=add, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert statuses == [201] * count
    lines = _index(scope).splitlines()
    assert lines[0] == "- first"
    assert sorted(lines[1:]) == sorted(f"- parallel note {n}" for n in range(count))
    assert ChangeSet.objects.filter(scope=scope, source=ChangeSet.Source.API).count() == count


@pytest.mark.django_db
@pytest.mark.parametrize(
    "arguments",
    [
        {"action": "add", "text": ["likes tea"]},
        {"action": "add", "text": {"likes": "tea"}},
        {"action": "add", "text": 42},
        {"action": "add", "text": True},
        {"action": "add", "text": "- likes tea", "scope": ["user"]},
        {"action": "write_topic", "topic": ["tea.md"], "topic_content": "tea"},
        {"action": "write_topic", "topic": "tea.md", "topic_content": {"body": "tea"}},
        {"action": "replace", "entry_id": {"id": "abc"}, "text": "- x"},
        {"action": "add", "text": "- likes tea", "reason": ["because"]},
    ],
)
def test_a_model_argument_of_the_wrong_type_is_refused_not_saved_as_python_text(arguments):
    person = UserFactory()
    scope = ensure_user_scope(person)
    addon_setting_put(user=person, addon="memory", key="save-mode", value="auto")
    turn = Turn(user=person, conversation_ref="c", message_ref="m", reply_ref_trusted=True)
    result = tool_call_execute(turn=turn, name="propose_change", arguments=arguments)
    assert not result.ok
    assert "must be a string" in result.output
    assert not MemoryFile.objects.filter(scope=scope).exists()
    assert not Proposal.objects.filter(user=person).exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("write_memory", {"path": "notes.md", "content": {"a": 1}}),
        ("write_memory", {"path": ["notes.md"], "content": "x"}),
        ("edit_memory", {"path": "MEMORY.md", "old_string": ["a"], "new_string": "b"}),
        ("edit_memory", {"path": "MEMORY.md", "old_string": "start", "new_string": 7}),
        ("read_memory", {"path": {"p": "MEMORY.md"}}),
    ],
)
def test_a_bank_tool_argument_of_the_wrong_type_is_refused(name, arguments):
    person = UserFactory()
    bank = bank_create(user=person, project_key="git/example")
    file_write(user=person, scope=bank, path="MEMORY.md", content="start\n", base_sha256="")
    turn = Turn(user=person, project_key="git/example")
    result = tool_call_execute(turn=turn, name=name, arguments=arguments)
    assert not result.ok
    assert "must be a string" in result.output
    assert set(MemoryFile.objects.filter(scope=bank).values_list("path", "content")) == {
        ("MEMORY.md", "start\n")
    }
