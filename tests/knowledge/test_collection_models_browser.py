"""Issue 27's languages item in Chromium: a new collection offers the multilingual model
first (the measured default) and MiniLM as a plain-language choice, and keeps the one
picked. At 1280 px in English in light, and at 390 px in German in dark."""

from __future__ import annotations

import pytest

from host.local_model import E5_MODEL, PACKAGED_MODEL
from knowledge.models import Store
from tests.chat.test_chat_header_attach_edit_browser import SETUPS
from tests.chat.test_questions_browser import fits
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WORDS = {
    "en": {
        "model": "Embedding model",
        "multilingual": "Multilingual (e5-small, runs on this server)",
        "english": "English (MiniLM, runs on this server)",
        "name": "Name",
        "create": "Create",
    },
    "de": {
        "model": "Embedding-Modell",
        "multilingual": "Mehrsprachig (e5-small, läuft auf diesem Server)",
        "english": "Englisch (MiniLM, läuft auf diesem Server)",
        "name": "Name",
        "create": "Anlegen",
    },
}


@pytest.mark.parametrize(("language", "viewport", "scheme"), SETUPS)
def test_a_new_collection_offers_the_multilingual_model_first_and_keeps_the_one_picked(
    sign_in, screenshot, language, viewport, scheme
):
    words = WORDS[language]
    person = UserFactory()
    page = sign_in(person)
    page.set_viewport_size(viewport)
    page.set_extra_http_headers({"Accept-Language": language})
    page.emulate_media(color_scheme=scheme)
    page.goto("/knowledge/new/")
    assert fits(page), "the new-collection form overflows sideways"
    picker = page.get_by_label(words["model"])
    options = picker.locator("option").all_inner_texts()
    assert options[:2] == [words["multilingual"], words["english"]]
    assert (
        picker.evaluate("select => select.selectedOptions[0].textContent") == words["multilingual"]
    )
    screenshot(f"new-collection-{language}-{scheme}")

    page.get_by_label(words["name"], exact=True).fill("Handbuch")
    picker.select_option(label=words["english"])
    page.get_by_role("button", name=words["create"]).click()
    page.wait_for_url("**/knowledge/*/")
    store = Store.objects.get(owner=person, name="Handbuch")
    assert store.model_name == PACKAGED_MODEL
    assert PACKAGED_MODEL in page.locator("main").inner_text()

    page.goto("/knowledge/new/")
    page.get_by_label(words["name"], exact=True).fill("Mehrsprachig")
    page.get_by_role("button", name=words["create"]).click()
    page.wait_for_url("**/knowledge/*/")
    assert Store.objects.get(owner=person, name="Mehrsprachig").model_name == E5_MODEL
