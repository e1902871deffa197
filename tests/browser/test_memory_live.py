"""Item 4: the Memory tab follows every save live, in every open tab, with a notice that
says what was saved and where; Undo from the notice keeps the page; an older notice never
replaces this tab's own newer result; typing is never overwritten."""

from __future__ import annotations

import pytest

from addons.services import addon_setting_put
from host import push
from memory_addon.live import memory_change_fragments
from memory_addon.models import MemoryFile
from memory_addon.services.changes import file_write
from memory_addon.services.proposals import memory_change_request
from memory_addon.services.scopes import ensure_user_scope
from memory_addon.turns import Turn
from tests.conftest import off_loop, wait_until_live
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _open_memory(page, url="/memory/"):
    page.goto(url)
    wait_until_live(page)
    return page


def _budget(page) -> str:
    return page.locator(".budget-bar").get_attribute("aria-valuenow") or ""


def test_an_automatic_save_updates_entries_budget_and_caps_in_every_open_tab(sign_in, screenshot):
    person = UserFactory()
    addon_setting_put(user=person, addon="memory", key="save-mode", value="auto")
    first = _open_memory(sign_in(person))
    second = _open_memory(first.context.new_page())
    assert _budget(first) == _budget(second) == "0"
    capacity = second.locator("[data-capacity]").get_attribute("data-capacity")
    off_loop(
        memory_change_request,
        turn=Turn(user=person),
        operation={"action": "add", "text": "- lang: answers in Italian"},
    )
    for page in (first, second):
        page.locator(".entry-text", has_text="lang: answers in Italian").wait_for()
        notice = page.locator("#live-notice")
        notice.get_by_text("Saved to memory: lang: answers in Italian").wait_for()
        assert "· Memory" in notice.inner_text()
        assert int(_budget(page)) > 0
        assert "1 of 40 lines" in page.locator(".capacity").inner_text()
    assert second.locator("[data-capacity]").get_attribute("data-capacity") != capacity
    screenshot("live-entry")


def test_a_confirm_in_another_tab_shows_up_in_the_memory_tab(sign_in):
    person = UserFactory()
    proposal = off_loop(
        memory_change_request,
        turn=Turn(user=person),
        operation={"action": "add", "text": "- city: lives in Porto"},
    ).proposal
    memory = _open_memory(sign_in(person))
    inbox = memory.context.new_page()
    inbox.goto("/inbox/")
    inbox.locator(f"#proposal-{proposal.pk}").get_by_role("button", name="Confirm").click()
    memory.locator(".entry-text", has_text="city: lives in Porto").wait_for()
    memory.locator("#live-notice").get_by_text("Saved to memory: city: lives in Porto").wait_for()
    # Confirmed, so not an automatic save: no Undo in the notice (History has it).
    assert memory.locator("#live-notice").get_by_role("button", name="Undo").count() == 0


def test_a_raw_save_updates_this_tabs_caps_and_the_other_tabs_entries(sign_in):
    person = UserFactory()
    scope = ensure_user_scope(person)
    raw = _open_memory(sign_in(person), f"/memory/?scope={scope.pk}&view=raw")
    entries_tab = _open_memory(raw.context.new_page(), f"/memory/?scope={scope.pk}")
    raw.get_by_label("index.md").fill("- one: first\n- two: second\n")
    raw.get_by_role("button", name="Save").click()
    raw.locator("#raw-editor").get_by_text("Saved.").wait_for()
    raw.locator(".capacity", has_text="2 of 40 lines").wait_for()
    raw.locator("#live-notice").get_by_text("Memory saved: one: first; two: second").wait_for()
    entries_tab.locator(".entry-text", has_text="two: second").wait_for()
    entries_tab.locator(".capacity", has_text="2 of 40 lines").wait_for()


def test_undo_from_the_notice_stays_and_a_late_older_notice_does_not_contradict_it(sign_in):
    person = UserFactory()
    addon_setting_put(user=person, addon="memory", key="save-mode", value="auto")
    page = _open_memory(sign_in(person))
    saved = off_loop(
        memory_change_request,
        turn=Turn(user=person),
        operation={"action": "add", "text": "- tea: likes green tea"},
    ).change_set
    notice = page.locator("#live-notice")
    notice.get_by_role("button", name="Undo").click()
    notice.get_by_text("Change undone: tea: likes green tea").wait_for()
    assert page.url.endswith("/memory/")
    page.locator(".entry-text").first.wait_for(state="detached")
    # The older "Saved to memory" arrives late (say from a slow process): it must not
    # put back an Undo for a change this tab already undid.
    person_id, html = off_loop(memory_change_fragments, saved.pk)
    off_loop(push.push_fragment, person_id, html)
    off_loop(push.push_fragment, person_id, '<span id="inbox-count" hx-swap-oob="true">9</span>')
    page.locator("#inbox-count", has_text="9").wait_for()
    assert "Change undone" in notice.inner_text()
    assert notice.get_by_role("button", name="Undo").count() == 0
    assert not MemoryFile.objects.filter(scope=ensure_user_scope(person), path="index.md").exists()


def test_a_live_update_never_overwrites_a_note_being_edited(sign_in):
    person = UserFactory()
    scope = ensure_user_scope(person)
    off_loop(
        file_write, user=person, scope=scope, path="index.md", content="- a: one\n", base_sha256=""
    )
    page = _open_memory(sign_in(person))
    page.get_by_text("Edit").first.click()
    page.get_by_label("Note text").fill("- a: one, edited")
    row = MemoryFile.objects.get(scope=scope, path="index.md")
    off_loop(
        file_write,
        user=person,
        scope=scope,
        path="index.md",
        content=row.content + "- b: two\n",
        base_sha256=row.sha256,
    )
    page.locator("#memory-stale").wait_for()
    assert page.get_by_label("Note text").input_value() == "- a: one, edited"
    assert page.locator(".entry-text", has_text="b: two").count() == 0
    page.locator(".capacity", has_text="2 of 40 lines").wait_for()


def test_a_notice_pushed_to_a_german_page_is_in_german(sign_in):
    person = UserFactory()
    addon_setting_put(user=person, addon="memory", key="save-mode", value="auto")
    page = sign_in(person)
    page.goto("/memory/")
    page.get_by_label("Language").select_option("de")
    page.locator("html[lang=de]").wait_for(state="attached")
    wait_until_live(page)
    off_loop(
        memory_change_request,
        turn=Turn(user=person),
        operation={"action": "add", "text": "- lang: answers in Italian"},
    )
    notice = page.locator("#live-notice")
    notice.get_by_text("lang: answers in Italian").wait_for()
    assert "Im Gedächtnis gespeichert" in notice.inner_text()
    assert notice.get_by_role("button", name="Rückgängig").is_visible()
