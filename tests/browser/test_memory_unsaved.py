"""Item 5: nothing typed is lost. The raw editor asks before the page is left with unsaved
text; a note refused because the memory is full keeps its text and shows the person their
notes with Delete buttons (not the list written for the model)."""

from __future__ import annotations

import pytest

from memory_addon.core import entries
from memory_addon.models import MemoryFile
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import ensure_user_scope
from tests.conftest import off_loop
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Seven long notes: about 1,950 of the 2,048 bytes an index may send.
FULL = "".join(f"- n{i}: " + "x" * 270 + "\n" for i in range(7))
# Eight notes of about 250 bytes: 2,016 bytes, so lengthening one to 300 goes over.
EIGHT = "".join(f"- n{i}: " + "x" * 245 + "\n" for i in range(8))


def _index(person) -> str:
    return MemoryFile.objects.get(scope=ensure_user_scope(person), path="index.md").content


def test_the_raw_editor_asks_before_leaving_with_unsaved_text_and_not_after_saving(sign_in):
    person = UserFactory()
    page = sign_in(person)
    page.goto("/memory/?view=raw")
    dialogs: list[str] = []

    def dismiss(dialog):
        dialogs.append(dialog.type)
        dialog.dismiss()

    page.on("dialog", dismiss)
    page.get_by_label("index.md").click()
    page.keyboard.type("- tea: likes green tea\n")
    page.get_by_role("link", name="Inbox").click()
    assert dialogs == ["beforeunload"]
    assert "/memory/" in page.url
    assert page.get_by_label("index.md").input_value() == "- tea: likes green tea\n"

    page.get_by_role("button", name="Save").click()
    page.locator("#raw-editor").get_by_text("Saved.").wait_for()
    page.get_by_role("link", name="Inbox").click()
    page.wait_for_url("**/inbox/")
    assert dialogs == ["beforeunload"]
    assert _index(person) == "- tea: likes green tea\n"


def test_a_refused_raw_save_still_counts_as_unsaved(sign_in):
    person = UserFactory()
    off_loop(
        file_write,
        user=person,
        scope=ensure_user_scope(person),
        path="index.md",
        content=FULL,
        base_sha256="",
    )
    page = sign_in(person)
    page.goto("/memory/?view=raw")
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.type), dialog.dismiss()))
    editor = page.get_by_label("index.md")
    editor.click()
    page.keyboard.press("Control+End")
    page.keyboard.type("- more: " + "y" * 200 + "\n")
    page.get_by_role("button", name="Save").click()
    page.locator("#raw-editor").get_by_text("This memory is full").wait_for()
    assert "Current entries" not in page.locator("#raw-editor").inner_text()
    page.get_by_role("link", name="Inbox").click()
    assert dialogs == ["beforeunload"]
    assert editor.input_value().endswith("y" * 200 + "\n")


def test_a_full_memory_lists_the_notes_to_delete_and_keeps_the_new_note(sign_in, screenshot):
    person = UserFactory()
    off_loop(
        file_write,
        user=person,
        scope=ensure_user_scope(person),
        path="index.md",
        content=FULL,
        base_sha256="",
    )
    page = sign_in(person)
    page.goto("/memory/")
    new_note = "lang: answers in Italian, " + "z" * 150
    page.get_by_label("Add an entry").fill(new_note)
    page.get_by_role("button", name="Add", exact=True).click()
    page.get_by_text("This memory is full").wait_for()
    screenshot("full")
    assert page.get_by_label("Add an entry").input_value() == new_note
    assert "Current entries" not in page.locator("main").inner_text()
    assert "your text]" not in page.locator("main").inner_text()
    room = page.locator("#over-cap")
    assert room.locator(".entry").count() == 7
    room.locator(".entry", has_text="n0:").get_by_role("button", name="Delete").click()
    page.get_by_text("Note deleted. Your text is still there").wait_for()
    assert page.get_by_label("Add an entry").input_value() == new_note
    assert "- n0:" not in _index(person)
    page.get_by_role("button", name="Add", exact=True).click()
    page.get_by_text("Note added.").wait_for()
    notes = [item.text for item in entries.parse_items(_index(person))]
    assert notes[-1] == f"- {new_note}" and len(notes) == 7


def test_a_note_edit_over_the_cap_keeps_the_edit_open_after_making_room(sign_in):
    person = UserFactory()
    off_loop(
        file_write,
        user=person,
        scope=ensure_user_scope(person),
        path="index.md",
        content=EIGHT,
        base_sha256="",
    )
    page = sign_in(person)
    page.goto("/memory/")
    last = page.locator("#main .entries .entry", has_text="n7:").first
    last.get_by_text("Edit").click()
    longer = "- n7: " + "w" * 294
    last.get_by_label("Note text").fill(longer)
    last.get_by_role("button", name="Save").click()
    page.get_by_text("This memory is full").first.wait_for()
    page.locator("#over-cap .entry", has_text="n1:").get_by_role("button", name="Delete").click()
    page.get_by_text("Note deleted. Your text is still there").wait_for()
    box = page.locator("details[open]").get_by_label("Note text")
    assert box.input_value() == longer
    page.locator("details[open]").get_by_role("button", name="Save").click()
    page.get_by_text("Note saved.").wait_for()
    assert longer in _index(person) and "- n1:" not in _index(person)


def test_the_make_room_list_fits_a_phone(sign_in, screenshot):
    person = UserFactory()
    off_loop(
        file_write,
        user=person,
        scope=ensure_user_scope(person),
        path="index.md",
        content=FULL,
        base_sha256="",
    )
    page = sign_in(person)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/memory/")
    page.get_by_label("Add an entry").fill("lang: " + "z" * 200)
    page.get_by_role("button", name="Add", exact=True).click()
    page.locator("#over-cap").wait_for()
    screenshot("390")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
