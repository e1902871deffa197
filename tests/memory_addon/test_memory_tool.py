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


@pytest.mark.parametrize(
    ("text", "old", "error"),
    [
        ("one two\n", "missing", "old_str `missing` did not appear verbatim in /memories/a.md"),
        ("x\nx\n", "x", "Multiple occurrences of old_str `x` in lines: 1, 2"),
    ],
)
def test_str_replace_with_zero_or_two_matches_is_refused_and_writes_nothing(
    api, user, text, old, error
):
    _run(api, command="create", path="/memories/a.md", file_text=text)
    changes = ChangeSet.objects.count()
    result = _run(api, command="str_replace", path="/memories/a.md", old_str=old, new_str="y")
    assert not result["ok"] and error in result["output"]
    assert _bank_files(user)["a.md"] == text
    assert ChangeSet.objects.count() == changes


def test_insert_puts_text_after_the_given_line_and_ends_the_file_with_a_newline(api, user):
    _run(api, command="create", path="/memories/a.md", file_text="one\nthree")
    result = _run(api, command="insert", path="/memories/a.md", insert_line=1, insert_text="two\n")
    assert result["ok"] and result["output"] == "The file /memories/a.md has been edited."
    assert _bank_files(user)["a.md"] == "one\ntwo\nthree\n"
    top = _run(api, command="insert", path="/memories/a.md", insert_line=0, insert_text="zero")
    assert top["ok"] and _bank_files(user)["a.md"] == "zero\none\ntwo\nthree\n"


def test_insert_after_the_last_line_keeps_the_final_newline(api, user):
    _run(api, command="create", path="/memories/a.md", file_text="a\nb\n")
    assert _run(api, command="insert", path="/memories/a.md", insert_line=2, insert_text="c")["ok"]
    assert _bank_files(user)["a.md"] == "a\nb\nc\n"
    beyond = _run(api, command="insert", path="/memories/a.md", insert_line=9, insert_text="d")
    assert not beyond["ok"] and "It should be within the range [0, 3]." in beyond["output"]


def test_delete_removes_the_file(api, user):
    _run(api, command="create", path="/memories/a.md", file_text="x\n")
    assert _run(api, command="delete", path="/memories/a.md")["ok"]
    assert _bank_files(user) == {}
    again = _run(api, command="delete", path="/memories/a.md")
    assert not again["ok"] and again["output"] == "The path /memories/a.md does not exist"


def test_create_on_an_existing_file_is_refused_and_keeps_it(api, user):
    _run(api, command="create", path="/memories/a.md", file_text="first\n")
    changes = ChangeSet.objects.count()
    again = _run(api, command="create", path="/memories/a.md", file_text="second\n")
    assert not again["ok"] and again["output"] == "File /memories/a.md already exists"
    assert _bank_files(user) == {"a.md": "first\n"}
    assert ChangeSet.objects.count() == changes


def test_create_on_an_existing_note_is_refused(api, user):
    addon_setting_put(user=user, addon="memory", key="save-mode", value="auto")
    _run(api, project_key="", command="create", path="/memories/tea.md", file_text="Tea\n")
    again = _run(api, project_key="", command="create", path="/memories/tea.md", file_text="x")
    assert not again["ok"] and again["output"] == "File /memories/tea.md already exists"
    assert MemoryFile.objects.get(path="tea.md").content == "Tea\n"


def test_a_folder_is_renamed_in_one_change_set_and_undone_in_one_step(api, user):
    _run(api, command="create", path="/memories/old/a.md", file_text="a\n")
    _run(api, command="create", path="/memories/old/deep/b.md", file_text="b\n")
    _run(api, command="create", path="/memories/keep.md", file_text="k\n")
    moved = _run(api, command="rename", old_path="/memories/old", new_path="/memories/new")
    assert moved["ok"] and moved["output"] == "Successfully renamed /memories/old to /memories/new"
    assert _bank_files(user) == {"new/a.md": "a\n", "new/deep/b.md": "b\n", "keep.md": "k\n"}
    assert api.post(f"/api/memory/change-sets/{moved['change_id']}/undo").status_code == 200
    assert _bank_files(user) == {"old/a.md": "a\n", "old/deep/b.md": "b\n", "keep.md": "k\n"}


def test_a_folder_cannot_move_into_itself_or_onto_an_existing_path(api, user):
    _run(api, command="create", path="/memories/d/a.md", file_text="a\n")
    _run(api, command="create", path="/memories/e/a.md", file_text="e\n")
    inside = _run(api, command="rename", old_path="/memories/d", new_path="/memories/d/sub")
    assert not inside["ok"] and "into itself" in inside["output"]
    onto = _run(api, command="rename", old_path="/memories/d", new_path="/memories/e")
    assert not onto["ok"] and onto["output"] == "The destination /memories/e already exists"
    assert _bank_files(user) == {"d/a.md": "a\n", "e/a.md": "e\n"}


def test_a_folder_is_deleted_with_everything_in_it(api, user):
    _run(api, command="create", path="/memories/d/a.md", file_text="a\n")
    _run(api, command="create", path="/memories/d/e/b.md", file_text="b\n")
    _run(api, command="create", path="/memories/keep.md", file_text="k\n")
    gone = _run(api, command="delete", path="/memories/d")
    assert gone["ok"] and gone["output"] == "Successfully deleted /memories/d"
    assert _bank_files(user) == {"keep.md": "k\n"}
    root = _run(api, command="delete", path="/memories")
    assert not root["ok"] and root["output"] == "Cannot delete the /memories directory itself"


def test_a_folder_of_several_notes_is_not_deleted_here(api, user):
    addon_setting_put(user=user, addon="memory", key="save-mode", value="auto")
    _run(api, project_key="", command="create", path="/memories/d/a.md", file_text="a\n")
    _run(api, project_key="", command="create", path="/memories/d/b.md", file_text="b\n")
    refused = _run(api, project_key="", command="delete", path="/memories/d")
    assert not refused["ok"] and "file by file" in refused["output"]
    assert MemoryFile.objects.filter(path="d/a.md").exists()


def test_a_file_cannot_become_a_folder(api, user):
    _run(api, command="create", path="/memories/a.md", file_text="a\n")
    inside = _run(api, command="create", path="/memories/a.md/b.md", file_text="b\n")
    assert not inside["ok"] and "is a file, not a folder" in inside["output"]
    assert _bank_files(user) == {"a.md": "a\n"}


def test_missing_paths_get_the_reference_tools_words(api, user):
    view = _run(api, command="view", path="/memories/none.md")
    assert view == {
        "ok": False,
        "output": "The path /memories/none.md does not exist. Please provide a valid path.",
        "change_id": None,
        "proposal_id": None,
    }
    edit = _run(api, command="str_replace", path="/memories/x/", old_str="a", new_str="b")
    assert edit["output"] == "The path /memories/x/ does not exist. Please provide a valid path."


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
        "/memories/photo.png",
        "/memories/.hidden.md",
    ],
)
def test_path_escapes_and_other_paths_are_refused(api, user, path):
    result = _run(api, command="create", path=path, file_text="x\n")
    assert not result["ok"] and result["output"].startswith("Refused:")
    assert bank_find(user, BANK) is None or _bank_files(user) == {}


def test_a_bank_keeps_the_text_types_of_anthropics_examples(api, user):
    for path in ("/memories/notes.txt", "/memories/plan.xml"):
        created = _run(api, command="create", path=path, file_text="<step>build</step>\n")
        assert created["ok"], created
        shown = _run(api, command="view", path=path)
        assert "     1\t<step>build</step>" in shown["output"]
    assert set(_bank_files(user)) == {"notes.txt", "plan.xml"}
    other = _run(api, command="create", path="/memories/photo.png", file_text="x")
    assert not other["ok"] and "Only text files ending in .md, .txt, .xml" in other["output"]


def test_the_persons_notes_stay_markdown(api, user):
    addon_setting_put(user=user, addon="memory", key="save-mode", value="auto")
    result = _run(api, project_key="", command="create", path="/memories/a.txt", file_text="x")
    assert not result["ok"] and "Only Markdown files ending in .md" in result["output"]
    assert not MemoryFile.objects.filter(path="a.txt").exists()


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
