"""Anthropic memory-tool backend (B2) through POST /api/memory/memory-tool."""

from __future__ import annotations

import pytest

from accounts.models import ApiToken
from accounts.services import api_token_create
from addons.services import addon_setting_put
from memory_addon.models import ChangeSet, MemoryFile, Proposal
from memory_addon.services.scopes import bank_find

pytestmark = pytest.mark.django_db

BANK = "git:memory-tool-test"
URL = "/api/memory/memory-tool"


def _run(api, project_key=BANK, **command):
    response = api.post(URL, {"input": command, "project_key": project_key})
    assert response.status_code == 200, response.content
    return response.json()


def _bank_files(user):
    scope = bank_find(user, BANK)
    return dict(MemoryFile.objects.filter(scope=scope).values_list("path", "content"))


def test_create_then_view_lists_the_folder_and_numbers_lines(api, user):
    created = _run(api, command="create", path="/memories/build.md", file_text="make\ntest\n")
    assert created["ok"] and created["change_id"]
    listing = _run(api, command="view", path="/memories")
    assert listing["ok"] and "/memories/build.md" in listing["output"]
    shown = _run(api, command="view", path="/memories/build.md")
    assert "     1\tmake" in shown["output"] and "     2\ttest" in shown["output"]
    part = _run(api, command="view", path="/memories/build.md", view_range=[2, 2])
    assert "test" in part["output"] and "make" not in part["output"]


def test_str_replace_changes_exactly_one_occurrence(api, user):
    _run(api, command="create", path="/memories/a.md", file_text="alpha beta\n")
    result = _run(api, command="str_replace", path="/memories/a.md", old_str="beta", new_str="b")
    assert result["ok"]
    assert _bank_files(user)["a.md"] == "alpha b\n"


@pytest.mark.parametrize(("text", "count"), [("one two\n", 0), ("x x\n", 2)])
def test_str_replace_with_zero_or_two_matches_is_refused_and_writes_nothing(api, user, text, count):
    _run(api, command="create", path="/memories/a.md", file_text=text)
    changes = ChangeSet.objects.count()
    old = "x" if count == 2 else "missing"
    result = _run(api, command="str_replace", path="/memories/a.md", old_str=old, new_str="y")
    assert not result["ok"] and f"occurs {count} times" in result["output"]
    assert _bank_files(user)["a.md"] == text
    assert ChangeSet.objects.count() == changes


def test_insert_puts_text_after_the_given_line(api, user):
    _run(api, command="create", path="/memories/a.md", file_text="one\nthree")
    result = _run(api, command="insert", path="/memories/a.md", insert_line=1, insert_text="two\n")
    assert result["ok"]
    assert _bank_files(user)["a.md"] == "one\ntwo\nthree"
    top = _run(api, command="insert", path="/memories/a.md", insert_line=0, insert_text="zero")
    assert top["ok"] and _bank_files(user)["a.md"] == "zero\none\ntwo\nthree"


def test_insert_after_the_last_line_keeps_the_final_newline(api, user):
    _run(api, command="create", path="/memories/a.md", file_text="a\nb\n")
    assert _run(api, command="insert", path="/memories/a.md", insert_line=2, insert_text="c")["ok"]
    assert _bank_files(user)["a.md"] == "a\nb\nc\n"
    beyond = _run(api, command="insert", path="/memories/a.md", insert_line=9, insert_text="d")
    assert not beyond["ok"] and "between 0 and 3" in beyond["output"]


def test_delete_removes_the_file(api, user):
    _run(api, command="create", path="/memories/a.md", file_text="x\n")
    assert _run(api, command="delete", path="/memories/a.md")["ok"]
    assert _bank_files(user) == {}
    again = _run(api, command="delete", path="/memories/a.md")
    assert not again["ok"] and "no file" in again["output"]


def test_rename_moves_the_file_in_one_change_set(api, user):
    _run(api, command="create", path="/memories/old.md", file_text="keep me\n")
    result = _run(api, command="rename", old_path="/memories/old.md", new_path="/memories/new.md")
    assert result["ok"]
    assert _bank_files(user) == {"new.md": "keep me\n"}
    change = ChangeSet.objects.get(pk=result["change_id"])
    assert sorted(change.changes.values_list("path", flat=True)) == ["new.md", "old.md"]


@pytest.mark.parametrize(
    "path",
    [
        "/memories/../escape.md",
        "/memories/a/../../escape.md",
        "/etc/passwd",
        "memories/a.md",
        "/memories/notes.txt",
        "/memories/.hidden.md",
    ],
)
def test_path_escapes_and_other_paths_are_refused(api, user, path):
    result = _run(api, command="create", path=path, file_text="x\n")
    assert not result["ok"] and result["output"].startswith("Refused:")
    assert bank_find(user, BANK) is None or _bank_files(user) == {}


def test_a_secret_is_refused_and_not_written(api, user):
    result = _run(
        api, command="create", path="/memories/db.md", file_text="host: db\ndb_password=hunter22\n"
    )
    assert not result["ok"] and "password" in result["output"]
    assert "hunter22" not in result["output"]
    assert _bank_files(user) == {}


def test_a_change_made_this_way_can_be_undone(api, user):
    _run(api, command="create", path="/memories/a.md", file_text="first\n")
    edit = _run(api, command="str_replace", path="/memories/a.md", old_str="first", new_str="2nd")
    undo = api.post(f"/api/memory/change-sets/{edit['change_id']}/undo")
    assert undo.status_code == 200, undo.content
    assert _bank_files(user)["a.md"] == "first\n"


def test_the_persons_notes_follow_the_save_mode(api, user):
    asked = _run(api, project_key="", command="create", path="/memories/tea.md", file_text="Tea\n")
    assert asked["ok"] and asked["proposal_id"] and asked["change_id"] is None
    assert Proposal.objects.get(pk=asked["proposal_id"]).state == Proposal.State.PENDING
    assert not MemoryFile.objects.filter(path="tea.md").exists()

    addon_setting_put(user=user, addon="memory", key="save-mode", value="auto")
    saved = _run(api, project_key="", command="create", path="/memories/tea.md", file_text="Tea\n")
    assert saved["ok"] and saved["change_id"]
    assert MemoryFile.objects.get(path="tea.md").content == "Tea\n"

    addon_setting_put(user=user, addon="memory", key="save-mode", value="never")
    refused = _run(api, project_key="", command="delete", path="/memories/tea.md")
    assert not refused["ok"] and "Never" in refused["output"]


def test_the_index_of_the_persons_notes_is_read_only_here(api, user):
    addon_setting_put(user=user, addon="memory", key="save-mode", value="auto")
    result = _run(api, project_key="", command="create", path="/memories/index.md", file_text="x")
    assert not result["ok"] and "propose_change" in result["output"]


def test_unknown_command_is_refused(api):
    result = _run(api, command="format_disk", path="/memories")
    assert not result["ok"] and "Unknown command" in result["output"]


def _token_call(client, token, body):
    return client.post(
        URL, body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )


def test_a_read_only_token_views_but_cannot_write(client, user):
    _, token = api_token_create(user=user, name="ro", scope=ApiToken.Scope.READ_ONLY)
    view = _token_call(client, token, {"input": {"command": "view", "path": "/memories"}})
    assert view.status_code == 200
    create = _token_call(
        client,
        token,
        {
            "input": {"command": "create", "path": "/memories/a.md", "file_text": "x"},
            "project_key": BANK,
        },
    )
    assert create.status_code == 403 and "read-only" in create.json()["detail"]


def test_a_bank_only_token_needs_a_project_key(client, user):
    _, token = api_token_create(user=user, name="bank", scope=ApiToken.Scope.BANK_ONLY)
    mine = _token_call(client, token, {"input": {"command": "view", "path": "/memories"}})
    assert mine.status_code == 403
    bank = _token_call(
        client, token, {"input": {"command": "view", "path": "/memories"}, "project_key": BANK}
    )
    assert bank.status_code == 200
