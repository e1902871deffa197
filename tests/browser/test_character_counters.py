"""A character counter with its own "/ 300 characters" label said
"21 / 300 / 300 characters" until the first key press (the page script wrote the maximum
too); the counters show the count once, on load and while typing."""

from __future__ import annotations

import pytest

from memory_addon.services.proposals import memory_change_request
from memory_addon.turns import Turn
from tests.conftest import off_loop
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_inbox_card_counts_the_characters_once_on_load_and_while_typing(sign_in):
    person = UserFactory()
    text = "- tea: likes tea -> tea.md"
    proposal = off_loop(
        memory_change_request, turn=Turn(user=person), operation={"action": "add", "text": text}
    ).proposal
    page = sign_in(person)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/inbox/")
    card = page.locator(f"#proposal-{proposal.pk}")
    card.get_by_text("Edit, then confirm").click()
    help_text = card.locator(f"#proposal-{proposal.pk}-counter").locator("xpath=..")
    assert help_text.inner_text().strip() == f"{len(text)} / 300 characters"
    card.get_by_label("Entry text").fill("- tea: loves tea")
    assert help_text.inner_text().strip() == "16 / 300 characters"


def test_the_memory_tab_counter_still_names_the_maximum(sign_in):
    person = UserFactory()
    page = sign_in(person)
    page.goto("/memory/")
    page.get_by_label("Add an entry").fill("likes tea")
    assert page.locator("#new-entry-count").inner_text() == "9 / 300"
