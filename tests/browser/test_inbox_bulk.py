"""Item 6: Confirm all / Reject all in the Inbox, each undone with one click on the page."""

from __future__ import annotations

import pytest

from memory_addon.core import entries
from memory_addon.models import MemoryFile, Proposal
from memory_addon.services.proposals import memory_change_request
from memory_addon.services.scopes import ensure_user_scope
from memory_addon.turns import Turn
from tests.conftest import off_loop, wait_until_live
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NOTES = ["- tea: likes green tea", "- city: lives in Porto", "- lang: answers in Italian"]


def _propose(person, texts):
    return [
        off_loop(
            memory_change_request, turn=Turn(user=person), operation={"action": "add", "text": t}
        ).proposal
        for t in texts
    ]


def _saved_notes(person) -> list[str]:
    row = MemoryFile.objects.filter(scope=ensure_user_scope(person), path="index.md").first()
    return sorted(e.text for e in entries.machine_entries(row.content)) if row else []


def test_confirm_all_saves_every_card_and_undo_takes_them_all_back(sign_in, screenshot):
    person = UserFactory()
    proposals = _propose(person, NOTES)
    page = sign_in(person)
    page.goto("/inbox/")
    wait_until_live(page)
    page.get_by_role("button", name="Confirm all").click()
    notice = page.locator("[data-bulk-notice]")
    notice.get_by_text("Saved 3 notes to memory.").wait_for()
    screenshot("confirmed")
    assert _saved_notes(person) == sorted(NOTES)
    assert page.locator(".proposal").count() == 0
    assert page.get_by_text("Nothing waits for you").is_visible()
    assert not page.get_by_role("button", name="Confirm all").is_visible()
    assert set(Proposal.objects.values_list("state", flat=True)) == {"confirmed"}

    memory = page.context.new_page()
    memory.goto("/memory/")
    for text in NOTES:
        assert memory.locator(".entry-text", has_text=text).is_visible()
    memory.close()
    page.locator("[data-bulk-notice]").get_by_role("button", name="Undo").click()
    page.locator("[data-bulk-notice]").get_by_text("Undone: 3 notes").wait_for()
    assert page.url.endswith("/inbox/")
    assert _saved_notes(person) == []
    assert len(proposals) == 3


def test_reject_all_saves_nothing_and_undo_brings_the_cards_back(sign_in, screenshot):
    person = UserFactory()
    proposals = _propose(person, NOTES[:2])
    page = sign_in(person)
    page.goto("/inbox/")
    wait_until_live(page)
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Reject all").click()
    page.locator("[data-bulk-notice]").get_by_text("Rejected 2 proposals").wait_for()
    assert page.locator(".proposal").count() == 0
    assert not MemoryFile.objects.filter(scope=ensure_user_scope(person)).exists()
    assert set(Proposal.objects.values_list("state", flat=True)) == {"rejected"}

    page.locator("[data-bulk-notice]").get_by_role("button", name="Undo").click()
    page.locator("[data-bulk-notice]").get_by_text("Undone: 2 proposals wait again.").wait_for()
    for proposal in proposals:
        page.locator(f"#proposal-{proposal.pk}").wait_for()
    screenshot("reopened")
    # The live push and the answer to Undo both bring a card: it shows once.
    page.locator("#inbox-count", has_text="2").wait_for()
    assert page.locator(".proposal").count() == 2
    assert set(Proposal.objects.values_list("state", flat=True)) == {"pending"}
    assert not MemoryFile.objects.filter(scope=ensure_user_scope(person)).exists()


def test_dismissing_the_reject_all_question_changes_nothing(sign_in):
    person = UserFactory()
    _propose(person, NOTES[:1])
    page = sign_in(person)
    page.goto("/inbox/")
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.get_by_role("button", name="Reject all").click()
    assert page.locator(".proposal").count() == 1
    assert Proposal.objects.get().state == "pending"


def test_a_card_that_arrives_after_the_page_loaded_joins_confirm_all(sign_in):
    person = UserFactory()
    _propose(person, NOTES[:1])
    page = sign_in(person)
    page.goto("/inbox/")
    wait_until_live(page)
    late = _propose(person, NOTES[1:2])[0]
    page.locator(f"#proposal-{late.pk}").wait_for()
    page.get_by_role("button", name="Confirm all").click()
    page.get_by_text("Saved 2 notes to memory.").wait_for()
    assert _saved_notes(person) == sorted(NOTES[:2])


def test_the_bulk_buttons_and_notice_fit_a_phone(sign_in, screenshot):
    person = UserFactory()
    _propose(person, NOTES)
    page = sign_in(person)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/inbox/")
    assert page.get_by_role("button", name="Reject all").is_visible()
    page.get_by_role("button", name="Confirm all").click()
    page.locator("[data-bulk-notice]").get_by_role("button", name="Undo").wait_for()
    screenshot("390")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
