from __future__ import annotations

from dataclasses import replace

import pytest

from addons.services import addon_setting_put
from memory_addon.models import ChangeSet, MemoryFile
from memory_addon.services.changes import file_write
from memory_addon.services.context import bank_startup_context
from memory_addon.services.scopes import ensure_bank
from memory_addon.services.tools import tool_call_execute, tool_schemas

pytestmark = pytest.mark.django_db


def call(turn, name, **arguments):
    return tool_call_execute(turn=turn, name=name, arguments=arguments)


def test_schemas_are_openai_function_definitions():
    names = {tool["function"]["name"] for tool in tool_schemas()}
    # search_conversations is the chat's past-chat search (B10), registered at start-up.
    assert names == {
        "context_read",
        "propose_change",
        "revert_change",
        "list_memory",
        "search_conversations",
    }
    for tool in tool_schemas() + tool_schemas(bank=True):
        assert tool["type"] == "function"
        assert tool["function"]["parameters"]["type"] == "object"


def test_context_read_marks_memory_as_untrusted(turn, user, scope):
    file_write(user=user, scope=scope, path="home.md", content="Lives in Rome.\n", base_sha256="")
    ok, output = call(turn, "context_read", path="home.md")
    assert ok
    assert 'trust="untrusted-observation"' in output and "Lives in Rome." in output


def test_context_read_of_a_missing_file_lists_what_exists(turn, user, scope):
    file_write(user=user, scope=scope, path="home.md", content="x\n", base_sha256="")
    ok, output = call(turn, "context_read", path="food.md")
    assert ok and "home.md" in output


def test_list_memory_finds_notes_with_any_word(turn, user, scope):
    file_write(
        user=user, scope=scope, path="food.md", content="Allergic to peanuts.\n", base_sha256=""
    )
    ok, output = call(turn, "list_memory", query="what are my allergies peanuts?")
    assert ok and "food.md" in output


def test_propose_change_returns_text_the_model_can_relay(turn):
    ok, output = call(turn, "propose_change", action="add", text="- tea: likes tea -> tea.md")
    assert ok and "nothing is saved until the person confirms" in output


def test_a_refusal_is_text_not_an_error(turn, user):
    addon_setting_put(user=user, addon="memory", key="save-mode", value="never")
    ok, output = call(turn, "propose_change", action="add", text="- tea: x -> tea.md")
    assert not ok and output.startswith("Refused:") and "saving is off" in output


def test_revert_change_undoes_an_automatic_note(turn, user, scope):
    addon_setting_put(user=user, addon="memory", key="save-mode", value="auto")
    call(turn, "propose_change", action="add", text="- tea: likes tea -> tea.md")
    change = ChangeSet.objects.get(origin="automatic")
    ok, output = call(replace(turn, message_ref="m2"), "revert_change", change_id=change.pk)
    assert ok, output
    # The note created the index, so reverting it removes the file again.
    assert not MemoryFile.objects.filter(scope=scope, path="index.md").exists()


def test_revert_change_cannot_undo_the_persons_own_edit(turn, user, scope):
    change = file_write(user=user, scope=scope, path="a.md", content="mine\n", base_sha256="")
    ok, output = call(turn, "revert_change", change_id=change.pk)
    assert not ok and "no memory change with that id" in output


def test_invalid_json_arguments_are_explained(turn):
    ok, output = tool_call_execute(turn=turn, name="context_read", arguments="{not json")
    assert not ok and "not valid JSON" in output


# --- Project banks (M17) -----------------------------------------------------


@pytest.fixture
def bank_turn(turn):
    return replace(turn, project_key="git:abc123")


def test_bank_write_read_and_list(bank_turn):
    assert call(bank_turn, "write_memory", content="# Build\nmake test\n")[0]
    ok, output = call(bank_turn, "read_memory")
    assert ok and "make test" in output and "untrusted" in output
    assert "MEMORY.md" in call(bank_turn, "list_memory")[1]


def test_edit_memory_refuses_an_empty_old_string(bank_turn):
    call(bank_turn, "write_memory", content="a b a\n")
    ok, output = call(bank_turn, "edit_memory", old_string="", new_string="x")
    assert not ok and "empty" in output


@pytest.mark.parametrize(("old", "count"), [("zzz", 0), ("a", 2)])
def test_edit_memory_fails_without_writing_unless_exactly_one_match(bank_turn, user, old, count):
    call(bank_turn, "write_memory", content="a b a\n")
    ok, output = call(bank_turn, "edit_memory", old_string=old, new_string="x")
    assert not ok and f"occurs {count} times" in output
    scope = ensure_bank(user, "git:abc123")
    assert MemoryFile.objects.get(scope=scope, path="MEMORY.md").content == "a b a\n"


def test_edit_memory_replaces_the_one_occurrence(bank_turn, user):
    call(bank_turn, "write_memory", content="a b c\n")
    assert call(bank_turn, "edit_memory", old_string="b", new_string="B")[0]
    assert MemoryFile.objects.get(path="MEMORY.md").content == "a B c\n"


def test_delete_memory_removes_a_file(bank_turn):
    call(bank_turn, "write_memory", content="x\n", path="topics/a.md")
    assert call(bank_turn, "delete_memory", path="topics/a.md")[0]
    assert not MemoryFile.objects.filter(path="topics/a.md").exists()


def test_bank_file_limit_is_128_kib(bank_turn):
    ok, output = call(bank_turn, "write_memory", content="x" * (128 * 1024 + 1))
    assert not ok and "at most 131072 bytes" in output


def test_a_bank_that_is_off_keeps_its_files_but_refuses_tools(bank_turn, user):
    call(bank_turn, "write_memory", content="kept\n")
    scope = ensure_bank(user, "git:abc123")
    scope.enabled = False
    scope.save()
    ok, output = call(bank_turn, "read_memory")
    assert not ok and "off" in output
    assert MemoryFile.objects.filter(scope=scope).exists()


def test_startup_context_is_bounded_with_a_visible_marker(user):
    scope = ensure_bank(user, "git:big")
    MemoryFile.objects.create(
        scope=scope,
        path="MEMORY.md",
        content="\n".join(f"line {i}" for i in range(300)),
        sha256="x",
    )
    context = bank_startup_context(scope)
    assert "line 199" in context and "line 200" not in context
    assert "truncated" in context


def test_startup_context_cuts_at_25_kib(user):
    scope = ensure_bank(user, "git:wide")
    MemoryFile.objects.create(
        scope=scope, path="MEMORY.md", content=("y" * 999 + "\n") * 50, sha256="x"
    )
    context = bank_startup_context(scope)
    assert len(context.encode()) < 26 * 1024 and "truncated" in context


def test_tool_call_api_runs_a_bank_tool(api):
    response = api.post(
        "/api/memory/tools/call",
        {
            "turn": {"project_key": "git:xyz"},
            "name": "write_memory",
            "arguments": {"content": "hello\n"},
        },
    )
    assert response.json() == {"ok": True, "output": "Wrote MEMORY.md."}
