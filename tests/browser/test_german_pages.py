"""SPEC B7: a person switches to German in the top bar and the main flows speak German."""

from __future__ import annotations

import pytest

from memory_addon.core import entries
from memory_addon.models import MemoryFile
from memory_addon.services.proposals import memory_change_request
from memory_addon.services.scopes import ensure_user_scope, index_path
from memory_addon.turns import Turn
from tests.conftest import off_loop
from tests.factories import AIProfileFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_switching_to_german_walks_memory_inbox_chat_knowledge_and_settings(sign_in, screenshot):
    person = UserFactory()
    AIProfileFactory(owner=person, name="Lokal")
    page = sign_in(person)
    page.goto("/memory/")
    assert page.locator("html").get_attribute("lang") == "en"
    assert page.get_by_role("heading", name="Memory", exact=True).is_visible()

    # The top-bar switch: choosing Deutsch submits at once (page.js, no inline script).
    page.get_by_label("Language").select_option("de")
    page.locator("html[lang=de]").wait_for(state="attached")
    assert page.url.endswith("/memory/")
    nav = page.get_by_role("navigation", name="Hauptmenü")
    for label in ("Gedächtnis", "Wissen", "Posteingang", "Einstellungen"):
        assert nav.get_by_role("link", name=label).is_visible()
    assert page.get_by_role("button", name="Abmelden").is_visible()

    # Memory tab: add a note in German.
    assert page.get_by_role("heading", name="Gedächtnis", exact=True).is_visible()
    page.get_by_label("Eintrag hinzufügen").fill("sprache: antwortet auf Deutsch")
    page.get_by_role("button", name="Hinzufügen").click()
    page.get_by_text("Notiz hinzugefügt.").wait_for()
    assert page.locator(".entry-text", has_text="sprache: antwortet auf Deutsch").is_visible()
    assert page.get_by_text("Ihr Text").first.is_visible()
    assert page.get_by_text("Gedächtnis zu").is_visible()
    screenshot("memory")
    scope = ensure_user_scope(person)
    index = MemoryFile.objects.get(scope=scope, path=index_path(scope)).content
    texts = [item.text.lstrip("- ") for item in entries.parse_items(index)]
    assert "sprache: antwortet auf Deutsch" in texts

    # Inbox: a proposal card speaks German, and confirming says so in German.
    off_loop(
        memory_change_request,
        turn=Turn(user=person),
        operation={"action": "add", "text": "- stadt: wohnt in Berlin"},
        reason="Erwähnt im Gespräch.",
    )
    page.get_by_role("link", name="Posteingang").click()
    assert page.get_by_role("heading", name="Posteingang").is_visible()
    assert page.get_by_role("heading", name="Neue Notiz").is_visible()
    assert page.get_by_text("Was sich in den Dateien ändert").is_visible()
    screenshot("inbox")
    page.locator(".proposal").get_by_role("button", name="Bestätigen", exact=True).click()
    page.get_by_text("Im Gedächtnis gespeichert.").wait_for()
    assert page.get_by_text("Hier wartet nichts auf Sie.").is_visible()

    # Chat: the new-conversation page.
    page.get_by_role("link", name="Chat", exact=True).click()
    assert page.get_by_role("heading", name="Neues Gespräch").is_visible()
    assert page.get_by_label("Nachricht").is_visible()
    assert page.get_by_role("button", name="Starten").is_visible()
    assert page.get_by_label("Mein Gedächtnis in diesem Gespräch verwenden").is_checked()
    screenshot("chat")

    # Knowledge: empty state and the new-collection form with German labels.
    page.get_by_role("link", name="Wissen").click()
    assert page.get_by_text("Noch keine Sammlung.").is_visible()
    page.get_by_role("link", name="Neue Sammlung").click()
    assert page.get_by_label("Sprache der Dokumente").is_visible()
    screenshot("knowledge")

    # Settings: AI profiles and a form with translated labels and errors.
    page.get_by_role("link", name="Einstellungen").click()
    assert page.get_by_role("heading", name="KI-Profile").is_visible()
    assert page.get_by_role("cell", name="Lokal").is_visible()
    page.get_by_role("link", name="Profil hinzufügen").click()
    assert page.get_by_label("Serveradresse").is_visible()
    assert page.get_by_label("Kontextfenster (Tokens)").is_visible()
    screenshot("settings")

    # Back to English with the same switch.
    page.get_by_label("Sprache").select_option("en")
    page.locator("html[lang=en]").wait_for(state="attached")
    assert page.get_by_role("link", name="Settings").is_visible()
