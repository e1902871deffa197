"""A temporary chat (M22) in Chromium, with a real chat worker and the scripted model: started
from the new-chat form, marked, the model's memory change refused with nothing offered to
save, and gone from the list once ended. At 1280 px in English and at 390 px in German."""

from __future__ import annotations

import json

import pytest

from chat.models import Conversation
from learning.models import RuleSuggestion
from memory_addon.models import ChangeSet, MemoryFile, Proposal
from memory_addon.turns import TEMPORARY_REFUSAL
from tests.chat.test_questions_browser import SETUPS, fits
from tests.conftest import wait_until_live

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ADD_HOME = json.dumps({"action": "add", "text": "- home: lives in Rome -> home.md"})
WORDS = {
    "en": {
        "temporary": "Temporary chat",
        "message": "Message",
        "start": "Start",
        "badge": "Temporary",
        "note": "it reads your memory but saves nothing to it",
        "end": "End temporary chat",
        "confirm": "End and delete",
        "ended": "The temporary chat was ended and deleted.",
        "empty": "No conversations yet.",
    },
    "de": {
        "temporary": "Vorübergehender Chat",
        "message": "Nachricht",
        "start": "Starten",
        "badge": "Vorübergehend",
        "note": "Er liest Ihr Gedächtnis, speichert aber nichts darin",
        "end": "Vorübergehenden Chat beenden",
        "confirm": "Beenden und löschen",
        "ended": "Der vorübergehende Chat wurde beendet und gelöscht.",
        "empty": "Noch keine Gespräche.",
    },
}


@pytest.mark.parametrize(("language", "viewport"), SETUPS)
def test_a_temporary_chat_saves_nothing_the_model_proposes_and_is_gone_once_ended(
    chat_worker, fake_openai, sign_in, person, profile, screenshot, language, viewport
):
    words = WORDS[language]
    fake_openai.chat_replies += [
        {"tool_calls": [{"id": "c1", "name": "propose_change", "arguments": ADD_HOME}]},
        {"content": "I cannot keep that here."},
    ]
    page = sign_in(person)
    page.set_viewport_size(viewport)
    page.set_extra_http_headers({"Accept-Language": language})
    page.goto("/chat/")
    page.get_by_label(words["temporary"]).check()
    page.get_by_label(words["message"], exact=True).fill("Remember that I live in Rome")
    page.get_by_role("button", name=words["start"]).click()
    page.wait_for_url("**/chat/*/")
    wait_until_live(page)
    conversation = Conversation.objects.get(owner=person)
    assert conversation.temporary
    assert page.locator("#temporary-badge").inner_text() == words["badge"]
    assert words["note"] in page.locator("#temporary-note").inner_text()

    answer = page.locator("article.msg-assistant[data-state=complete]")
    answer.wait_for()
    assert "I cannot keep that here." in answer.locator(".md").inner_text()
    # The answer arrived live: its badge is there, in the page's language.
    assert answer.locator(".badge.temporary").inner_text() == words["badge"]
    answer.locator("details.tool-calls summary").click()
    assert TEMPORARY_REFUSAL in answer.locator("details.tool-calls").inner_text()
    assert page.locator(".proposal-card, .rule-card, .remember-rule, .saved-note").count() == 0
    assert not Proposal.objects.filter(user=person).exists()
    assert not ChangeSet.objects.filter(user=person).exists()
    assert not MemoryFile.objects.filter(scope__owner=person).exists()
    assert not RuleSuggestion.objects.filter(user=person).exists()
    assert fits(page)
    screenshot("temporary-chat")

    page.get_by_text(words["end"]).click()
    page.get_by_role("button", name=words["confirm"]).click()
    page.wait_for_url("**/chat/")
    page.get_by_text(words["ended"]).wait_for()
    assert page.locator("#conversation-list").inner_text().strip() == words["empty"]
    assert not Conversation.objects.filter(pk=conversation.pk).exists()
    assert fits(page)
    screenshot("temporary-chat-ended")
