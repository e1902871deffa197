"""Notes over the API: what the Memory tab's Add, Edit and Delete do, with the same rules."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from accounts.models import ApiToken
from accounts.services import api_token_create
from addons.services import addon_setting_put
from memory_addon.models import ChangeSet, MemoryFile
from memory_addon.services.changes import file_write
from memory_addon.services.proposals import memory_change_request
from memory_addon.services.scopes import ensure_user_scope
from memory_addon.turns import Turn
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def _index(scope) -> str:
    row = MemoryFile.objects.filter(scope=scope, path="index.md").first()
    return row.content if row else ""


def _notes(api, scope) -> dict:
    response = api.get(f"/api/memory/scopes/{scope.pk}/notes")
    assert response.status_code == 200, response.content
    return response.json()


def test_a_note_added_over_the_api_lands_at_the_end_as_the_persons_own(api, scope):
    file_write(user=scope.owner, scope=scope, path="index.md", content="- first\n", base_sha256="")
    response = api.post(f"/api/memory/scopes/{scope.pk}/notes", {"text": "likes green tea"})
    assert response.status_code == 201, response.content
    assert response.json()["source"] == "api"
    assert _index(scope) == "- first\n- likes green tea\n"
    listed = _notes(api, scope)
    assert [(n["text"], n["kind"]) for n in listed["notes"]] == [
        ("- first", "person"),
        ("- likes green tea", "person"),
    ]
    assert listed["index_sha256"] == MemoryFile.objects.get(scope=scope, path="index.md").sha256


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("   ", "Write the note first"),
        ("x" * 301, "at most 300 characters"),
        ("sneaky <!-- memory:entry id=1 --> fence", "HTML comment markers"),
    ],
)
def test_a_note_the_tab_would_refuse_is_a_400_and_nothing_is_saved(api, scope, text, words):
    response = api.post(f"/api/memory/scopes/{scope.pk}/notes", {"text": text})
    assert response.status_code == 400
    assert words in response.json()["detail"]
    assert ChangeSet.objects.filter(scope=scope).count() == 0


def test_editing_and_deleting_a_note_need_the_version_it_was_read_from(api, scope):
    file_write(
        user=scope.owner, scope=scope, path="index.md", content="- one\n- two\n", base_sha256=""
    )
    listed = _notes(api, scope)
    key, base = listed["notes"][1]["key"], listed["index_sha256"]
    url = f"/api/memory/scopes/{scope.pk}/notes/{quote(key)}"
    changed = api.put(url, {"text": "- two, edited", "base_sha256": base})
    assert changed.status_code == 200, changed.content
    assert _index(scope) == "- one\n- two, edited\n"
    # The same key and base again: the file moved on, so nothing is saved twice.
    stale = api.put(url, {"text": "- two, again", "base_sha256": base})
    assert stale.status_code == 409
    assert _index(scope) == "- one\n- two, edited\n"
    listed = _notes(api, scope)
    first = listed["notes"][0]["key"]
    gone = api.delete(
        f"/api/memory/scopes/{scope.pk}/notes/{quote(first)}?base_sha256={listed['index_sha256']}"
    )
    assert gone.status_code == 200, gone.content
    assert _index(scope) == "- two, edited\n"
    assert ChangeSet.objects.filter(scope=scope).count() == 3  # the write, the edit, the delete


def test_editing_a_saved_entry_makes_it_the_persons_own_line(api, user, scope):
    addon_setting_put(user=user, addon="memory", key="save-mode", value="auto")
    memory_change_request(
        turn=Turn(user=user), operation={"action": "add", "text": "- tea: likes tea -> tea.md"}
    )
    listed = _notes(api, scope)
    (note,) = listed["notes"]
    assert note["kind"] == "machine" and note["origin"] == "automatic"
    response = api.put(
        f"/api/memory/scopes/{scope.pk}/notes/{quote(note['key'])}",
        {"text": "- tea: likes green tea -> tea.md", "base_sha256": listed["index_sha256"]},
    )
    assert response.status_code == 200, response.content
    assert _index(scope) == "- tea: likes green tea -> tea.md\n"
    (note,) = _notes(api, scope)["notes"]
    assert note["kind"] == "person" and note["origin"] == ""


def test_another_persons_scope_is_a_404_for_every_note_call(api):
    stranger = UserFactory()
    theirs = ensure_user_scope(stranger)
    file_write(user=stranger, scope=theirs, path="index.md", content="- secret\n", base_sha256="")
    base = MemoryFile.objects.get(scope=theirs, path="index.md").sha256
    url = f"/api/memory/scopes/{theirs.pk}/notes"
    assert api.get(url).status_code == 404
    assert api.post(url, {"text": "mine now"}).status_code == 404
    assert api.put(f"{url}/1:x", {"text": "- x", "base_sha256": base}).status_code == 404
    assert api.delete(f"{url}/1:x?base_sha256={base}").status_code == 404
    assert _index(theirs) == "- secret\n"


def test_a_read_only_token_lists_notes_but_cannot_add_one(client, user, scope):
    _, plain = api_token_create(user=user, name="reader", scope=ApiToken.Scope.READ_ONLY)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {plain}"}
    url = f"/api/memory/scopes/{scope.pk}/notes"
    assert client.get(url, **auth).status_code == 200
    response = client.post(url, {"text": "x"}, content_type="application/json", **auth)
    assert response.status_code == 403
    assert "read-only" in response.json()["detail"]
    assert _index(scope) == ""
