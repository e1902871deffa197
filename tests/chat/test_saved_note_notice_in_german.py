"""What the host writes about a saved note reads in German on a German page."""

from __future__ import annotations

import json

import pytest

from addons.services import addon_setting_put
from chat.runner import turn_run
from memory_addon.addons import MEMORY_ADDON, SAVE_MODE
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import ensure_user_scope

pytestmark = pytest.mark.django_db(transaction=True)

GERMAN = {"accept-language": "de-DE,de;q=0.9"}
ADD = json.dumps({"action": "add", "text": "- home: lives in Rome -> home.md"})


def test_a_saved_note_and_the_composer_read_in_german_under_the_answer(
    client, fake_openai, ask, person, conversation
):
    scope = ensure_user_scope(person)
    file_write(user=person, scope=scope, path="index.md", content="- tea\n", base_sha256="")
    addon_setting_put(user=person, addon=MEMORY_ADDON, key=SAVE_MODE, value="auto")
    fake_openai.chat_replies += [
        {"tool_calls": [{"id": "c1", "name": "propose_change", "arguments": ADD}]},
        {"content": "Gespeichert."},
    ]
    turn_run(message_id=ask("Merk dir, dass ich in Rom wohne").pk)
    client.force_login(person)
    page = client.get(f"/chat/{conversation.pk}/", headers=GERMAN).text
    assert "Notiz hinzugefügt" in page
    assert "Added a note" not in page
    assert 'placeholder="Nachricht schreiben …"' in page
    assert "Write a message" not in page
    assert '<span class="badge">Mein Gedächtnis</span>' in page  # Sent along: whose note
    assert '<span class="badge">user</span>' not in page
    english = client.get(f"/chat/{conversation.pk}/").text
    assert "Added a note" in english and 'placeholder="Write a message…"' in english
