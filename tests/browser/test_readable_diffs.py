"""Item 3: History and Inbox show notes, not fenced lines; changed words are marked; the
raw unified diff is one click away."""

from __future__ import annotations

import pytest

from memory_addon.services.changes import file_write
from memory_addon.services.proposals import memory_change_request
from memory_addon.services.scopes import ensure_user_scope, index_path
from memory_addon.turns import Turn
from tests.conftest import off_loop
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_inbox_shows_the_note_without_fences_and_the_raw_diff_on_request(sign_in, screenshot):
    person = UserFactory()
    off_loop(
        memory_change_request,
        turn=Turn(user=person),
        operation={"action": "add", "text": "- lang: answers in Italian"},
        reason="Asked twice.",
    )
    page = sign_in(person)
    page.goto("/inbox/")
    card = page.locator(".proposal").first
    card.get_by_text("What changes in the files").click()
    added = card.locator(".rdiff-added")
    assert added.inner_text().strip().endswith("lang: answers in Italian")
    assert "memory:entry" not in card.locator(".rdiff").inner_text()
    raw = card.locator("pre.diff")
    assert not raw.is_visible()
    card.get_by_text("Raw diff").click()
    assert raw.is_visible() and "<!-- memory:entry" in raw.inner_text()
    screenshot("inbox")


def test_history_marks_the_changed_words(sign_in, screenshot):
    person = UserFactory()
    scope = ensure_user_scope(person)
    path = index_path(scope)
    file_write(
        user=person,
        scope=scope,
        path=path,
        content="- home: lives in Rome\n\n- diet: vegetarian\n",
        base_sha256=None,
    )
    file_write(
        user=person,
        scope=scope,
        path=path,
        content="- home: lives in Berlin\n\n- diet: vegetarian\n\n- pet: a cat\n",
        base_sha256=None,
    )
    page = sign_in(person)
    page.goto(f"/memory/{scope.pk}/history/")
    oldest = page.locator(".version").last
    oldest.get_by_text("Difference to the current file").click()
    changed = oldest.locator(".rdiff-changed")
    assert changed.locator("del").inner_text() == "Rome"
    assert changed.locator("ins").inner_text() == "Berlin"
    assert oldest.locator(".rdiff-added").inner_text().strip().endswith("- pet: a cat")
    assert oldest.locator(".rdiff-same").inner_text().strip().endswith("- diet: vegetarian")
    colours = changed.locator("ins").evaluate("e => getComputedStyle(e).backgroundColor")
    assert colours != "rgba(0, 0, 0, 0)"
    screenshot("history")
    oldest.get_by_text("Raw diff").click()
    assert "+- home: lives in Berlin" in oldest.locator("pre.diff").inner_text()
