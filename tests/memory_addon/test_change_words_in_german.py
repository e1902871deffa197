"""The host's own words about memory changes are German on German pages."""

from __future__ import annotations

import pytest
from django.utils import translation

from addons.services import addon_setting_put
from memory_addon.models import ChangeSet
from memory_addon.services.notes import note_add
from memory_addon.services.proposals import memory_change_request
from memory_addon.services.scopes import ensure_user_scope
from memory_addon.templatetags.memory_text import change_summary
from memory_addon.turns import Turn

GERMAN = {"accept-language": "de-DE,de;q=0.9"}


@pytest.mark.parametrize(
    ("stored", "german"),
    [
        ("Added a note", "Notiz hinzugefügt"),
        ("Replaced a note", "Notiz ersetzt"),
        ("Removed a note", "Notiz entfernt"),
        ("Added a note to index.md", "Notiz zu index.md hinzugefügt"),
        ("Edited a note in index.md", "Notiz in index.md bearbeitet"),
        ("Deleted a note in index.md", "Notiz in index.md gelöscht"),
        ("Edited home.md", "home.md bearbeitet"),
        ("Deleted home.md", "home.md gelöscht"),
        ("Wrote MEMORY.md", "MEMORY.md geschrieben"),
        ("Cleared index.md", "index.md geleert"),
        ("Undid change set #12", "Änderung #12 rückgängig gemacht"),
        ("Undid change #7", "Änderung #7 rückgängig gemacht"),
        ("Restored a.md from an export", "a.md aus einem Export wiederhergestellt"),
        ("Restored a.md as of change set #3", "a.md auf den Stand von Änderung #3 zurückgesetzt"),
        ("Renamed /memories/a.md to /memories/b.md", "/memories/a.md in /memories/b.md umbenannt"),
        ("Inserted text into /memories/a.md", "Text in /memories/a.md eingefügt"),
        ("Clean-up: archived 1 entry", "Aufräumen: 1 Eintrag archiviert"),
        ("Clean-up: archived 3 entries", "Aufräumen: 3 Einträge archiviert"),
        ("Clean-up: deleted 2 archived entries", "Aufräumen: 2 archivierte Einträge gelöscht"),
        ("Rule: Always answer in metric units", "Regel: Always answer in metric units"),
        ("Why the model saved it: likes tea", "Why the model saved it: likes tea"),
    ],
)
def test_the_hosts_change_summaries_are_shown_in_german(stored, german):
    with translation.override("de"):
        assert change_summary(stored) == german
    with translation.override("en"):
        assert change_summary(stored) == stored


@pytest.mark.django_db
def test_history_names_origin_and_source_in_german(client, user):
    scope = ensure_user_scope(user)
    note_add(user=user, scope=scope, text="likes tea", source=ChangeSet.Source.PAGE)
    client.force_login(user)
    page = client.get(f"/memory/{scope.pk}/history/", headers=GERMAN).text
    assert ">Sie</span>" in page
    assert "über Seite" in page
    assert ">person</span>" not in page and "über page" not in page


@pytest.mark.django_db
def test_the_audit_and_the_memory_tab_say_what_changed_in_german(client, user):
    scope = ensure_user_scope(user)
    addon_setting_put(user=user, addon="memory", key="save-mode", value="auto")
    turn = Turn(user=user, conversation_ref="c", message_ref="m", reply_ref_trusted=True)
    outcome = memory_change_request(turn=turn, operation={"action": "add", "text": "- tea"})
    assert outcome.change_set is not None
    client.force_login(user)
    audit = client.get("/memory/audit/", headers=GERMAN).text
    # The note first, the stored summary second, in German.
    assert '<td>tea<br><small class="muted">Notiz hinzugefügt</small></td>' in audit
    assert "Added a note" not in audit
    added = note_add(user=user, scope=scope, text="likes green tea", source="page")
    tab = client.get(f"/memory/?scope={scope.pk}&changed={added.pk}", headers=GERMAN).text
    assert "Notiz zu index.md hinzugefügt." in tab and "Added a note" not in tab


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("text", "german", "english"),
    [
        (
            "das Passwort ist Tr0ub4dor&3x",
            "index.md: Zeile 1 scheint ein Geheimnis zu enthalten "
            "(ein im Text genanntes Passwort). Entfernen Sie diese Zeile und versuchen Sie es "
            "erneut.",
            "looks like it holds a secret",
        ),
        (
            "x" * 301,
            "Eine Notiz hat höchstens 300 Zeichen; diese hat 301. Für längeren Text nehmen Sie "
            "Markdown-Rohtext.",
            "A note holds at most 300 characters",
        ),
    ],
)
def test_a_refused_note_on_the_german_memory_tab_says_why_in_german(
    client, user, text, german, english
):
    scope = ensure_user_scope(user)
    client.force_login(user)
    answer = client.post(f"/memory/{scope.pk}/entries/", {"text": text}, headers=GERMAN)
    assert answer.status_code == 422
    assert german in answer.content.decode()
    assert english not in answer.content.decode()
