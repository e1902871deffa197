"""M5: a person's write that changes an entry's text makes it theirs, whichever way.

The rule sits in change_set_apply (every person write goes through it); each entry point
the person has is tried, then the model's replace and remove must be refused.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest
from django.urls import reverse

from addons.services import addon_setting_put
from memory_addon.core import entries
from memory_addon.models import ChangeSet, FileChange, MemoryFile
from memory_addon.services.changes import change_set_undo, file_write
from memory_addon.services.notes import note_key
from memory_addon.services.tools import tool_call_execute
from memory_addon.turns import Turn

pytestmark = pytest.mark.django_db


def _index(scope) -> MemoryFile:
    return MemoryFile.objects.get(scope=scope, path="index.md")


def _saved_by_the_model(turn, scope) -> str:
    """Auto mode: the model saves "lives in Rome"; returns the entry's id."""
    addon_setting_put(user=turn.user, addon="memory", key="save-mode", value="auto")
    ok, output = _propose(turn, action="add", text="- home: lives in Rome -> home.md")
    assert ok, output
    (entry,) = entries.machine_entries(_index(scope).content)
    return entry.entry_id


def _propose(turn, **arguments):
    return tool_call_execute(turn=turn, name="propose_change", arguments=arguments)


def _the_note(scope) -> entries.Item:
    (item,) = entries.parse_items(_index(scope).content)
    return item


def _by_tab_form(client, scope) -> None:
    row = _index(scope)
    response = client.post(
        reverse("memory_note_edit", args=[scope.pk]),
        {
            "key": note_key(_the_note(scope)),
            "base_sha256": row.sha256,
            "text": "- home: lives in Milan -> home.md",
            "action": "save",
        },
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code in (200, 302)


def _by_notes_api(client, scope) -> None:
    response = client.put(
        f"/api/memory/scopes/{scope.pk}/notes/{quote(note_key(_the_note(scope)))}",
        {"text": "- home: lives in Milan -> home.md", "base_sha256": _index(scope).sha256},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content


def _by_raw_markdown(client, scope) -> None:
    row = _index(scope)
    response = client.post(
        reverse("memory_raw_save", args=[scope.pk]),
        {"content": row.content.replace("Rome", "Milan"), "base_sha256": row.sha256},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200


def _by_files_page(client, scope) -> None:
    row = _index(scope)
    response = client.post(
        reverse("memory_file", args=[scope.pk]),
        {
            "path": "index.md",
            "content": row.content.replace("Rome", "Milan"),
            "base_sha256": row.sha256,
        },
    )
    assert response.status_code == 302


def _by_file_api(client, scope) -> None:
    row = _index(scope)
    response = client.put(
        f"/api/memory/scopes/{scope.pk}/file?path=index.md",
        {"content": row.content.replace("Rome", "Milan"), "base_sha256": row.sha256},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content


def _model_wrote_milan_then_paris(scope) -> FileChange:
    """The model changed Rome to Milan, then to Paris: the version to restore says Milan."""
    turn = Turn(user=scope.owner, conversation_ref="c", message_ref="r", reply_ref_trusted=True)
    for city in ("Milan", "Paris"):
        (entry,) = entries.machine_entries(_index(scope).content)
        ok, output = _propose(
            turn,
            action="replace",
            entry_id=entry.entry_id,
            text=f"- home: lives in {city} -> home.md",
        )
        assert ok, output
    return FileChange.objects.get(scope=scope, path="index.md", after__contains="Milan")


def _by_restore_page(client, scope) -> None:
    response = client.post(
        reverse("memory_restore", args=[_model_wrote_milan_then_paris(scope).pk])
    )
    assert response.status_code == 302


def _by_restore_api(client, scope) -> None:
    version = _model_wrote_milan_then_paris(scope)
    response = client.post(f"/api/memory/versions/{version.pk}/restore")
    assert response.status_code == 200, response.content


EDITS = {
    "memory tab form": _by_tab_form,
    "notes api": _by_notes_api,
    "raw markdown": _by_raw_markdown,
    "files page": _by_files_page,
    "file api": _by_file_api,
    "restore on the history page": _by_restore_page,
    "restore over the api": _by_restore_api,
}


@pytest.mark.parametrize("edit", EDITS.values(), ids=EDITS.keys())
def test_a_persons_edit_of_a_saved_entry_makes_it_theirs(client, turn, scope, edit):
    entry_id = _saved_by_the_model(turn, scope)
    client.force_login(turn.user)
    edit(client, scope)
    content = _index(scope).content
    assert "lives in Milan" in content
    assert entries.machine_entries(content) == []
    assert f"id={entry_id}" not in content
    assert _the_note(scope).kind == "person"


@pytest.mark.parametrize("edit", EDITS.values(), ids=EDITS.keys())
def test_the_model_cannot_replace_or_remove_an_entry_the_person_edited(client, turn, scope, edit):
    entry_id = _saved_by_the_model(turn, scope)
    client.force_login(turn.user)
    edit(client, scope)
    edited = _index(scope).content
    changes = ChangeSet.objects.count()
    ok, output = _propose(
        turn, action="replace", entry_id=entry_id, text="- home: lives in Paris -> home.md"
    )
    assert not ok and "edited is their text" in output
    ok, output = _propose(turn, action="remove", entry_id=entry_id)
    assert not ok and "edited is their text" in output
    assert _index(scope).content == edited
    assert ChangeSet.objects.count() == changes


def test_a_pending_replace_of_an_entry_the_person_edited_cannot_be_confirmed(client, turn, scope):
    entry_id = _saved_by_the_model(turn, scope)
    addon_setting_put(user=turn.user, addon="memory", key="save-mode", value="ask")
    ok, _ = _propose(
        turn, action="replace", entry_id=entry_id, text="- home: lives in Paris -> home.md"
    )
    assert ok
    client.force_login(turn.user)
    _by_notes_api(client, scope)
    proposal = turn.user.memory_proposals.get()
    response = client.post(
        f"/api/memory/proposals/{proposal.pk}/confirm", "{}", content_type="application/json"
    )
    assert response.status_code == 409
    assert "lives in Milan" in _index(scope).content


def test_a_person_saving_other_text_keeps_the_machine_entries_as_they_are(turn, scope):
    _saved_by_the_model(turn, scope)
    before = _index(scope).content
    file_write(
        user=turn.user,
        scope=scope,
        path="index.md",
        content="My own line.\n\n" + before,
        base_sha256=_index(scope).sha256,
    )
    assert len(entries.machine_entries(_index(scope).content)) == 1


def test_undoing_the_persons_edit_gives_the_entry_back_to_the_model(client, turn, scope):
    entry_id = _saved_by_the_model(turn, scope)
    client.force_login(turn.user)
    _by_notes_api(client, scope)
    change_set_undo(user=turn.user, change_set=ChangeSet.objects.latest("id"))
    (entry,) = entries.machine_entries(_index(scope).content)
    assert entry.entry_id == entry_id and entry.text == "- home: lives in Rome -> home.md"
