"""Issue 14 item 7: the project banks screen, as a person uses it in Chromium."""

from __future__ import annotations

import pytest

from memory_addon.models import MemoryFile, MemoryScope
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import bank_create
from tests.conftest import off_loop
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}
INDEX = "# Shop\n\n- build: run `make shop-test` before pushing\n- see [style](style.md)\n"


def _fits(page) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"{page.url} scrolls sideways: {width}px"


def _bank_of(person) -> MemoryScope:
    return MemoryScope.objects.get(owner=person, kind=MemoryScope.Kind.PROJECT)


def test_create_fill_preview_toggle_agent_view_and_delete_a_bank(sign_in, screenshot):
    person = UserFactory()
    page = sign_in(person)
    page.set_viewport_size(DESKTOP)
    page.goto("/memory/banks/")
    assert page.get_by_text("No project banks yet").is_visible()

    page.get_by_label("Project key").fill("git:shop-7f3a")
    page.get_by_label("Name").fill("Shop")
    page.get_by_role("button", name="Create bank").click()
    page.get_by_role("heading", name="Shop", exact=True).wait_for()
    assert page.get_by_text("0 of 100 files").is_visible()
    bank = _bank_of(person)

    # An agent (here: the service it calls) writes MEMORY.md; the page shows it.
    off_loop(file_write, user=person, scope=bank, path="MEMORY.md", content=INDEX, base_sha256=None)
    page.reload()
    assert page.get_by_text("1 of 100 files").is_visible()
    size = len(INDEX.encode())
    assert page.get_by_text(f"{size}\xa0bytes of 1.0\xa0MB").is_visible()
    preview = page.locator("#bank-preview")
    assert preview.get_by_role("heading", name="Shop").is_visible()
    assert preview.locator("code", has_text="make shop-test").is_visible()
    screenshot("bank-1280")

    page.set_viewport_size(PHONE)
    _fits(page)
    screenshot("bank-390")
    page.set_viewport_size(DESKTOP)

    # Off: the agent gets nothing, the files stay.
    page.get_by_role("button", name="Turn off").click()
    page.locator("#bank-state[data-state=off]").wait_for()
    page.get_by_role("link", name="Agent view").click()
    page.locator("#agent-view-off").wait_for()
    assert page.locator("#agent-context").count() == 0
    assert MemoryFile.objects.filter(scope=bank, path="MEMORY.md").exists()

    # On again: the Agent view shows the startup context with the file's content.
    page.get_by_role("button", name="Turn on").click()
    page.locator("#bank-state[data-state=on]").wait_for()
    page.get_by_role("link", name="Agent view").click()
    context = page.locator("#agent-context")
    context.wait_for()
    text = context.inner_text()
    assert "make shop-test" in text and 'trust="untrusted-observations"' in text
    history = page.locator("#bank-history")
    assert history.locator("[data-history=off]").count() == 1
    assert history.locator("[data-history=on]").count() == 1
    page.set_viewport_size(PHONE)
    _fits(page)
    screenshot("agent-view-390")
    page.set_viewport_size(DESKTOP)
    screenshot("agent-view-1280")

    # Delete asks first; Cancel keeps the bank.
    page.locator("summary", has_text="Identity").click()
    page.get_by_role("link", name="Delete bank…").click()
    assert page.get_by_text("cannot be undone").is_visible()
    page.get_by_role("link", name="Cancel").click()
    page.locator("#bank-title", has_text="Shop").wait_for()
    assert MemoryScope.objects.filter(pk=bank.pk).exists()
    page.locator("summary", has_text="Identity").click()
    page.get_by_role("link", name="Delete bank…").click()
    page.get_by_role("button", name="Delete bank").click()
    page.get_by_text("No project banks yet").wait_for()
    assert not MemoryScope.objects.filter(pk=bank.pk).exists()


def test_a_file_is_created_edited_and_refused_with_the_text_kept(sign_in, screenshot, settings):
    person = UserFactory()
    bank = off_loop(bank_create, user=person, project_key="git:tools", project_name="Tools")
    page = sign_in(person)
    page.goto(f"/memory/banks/{bank.pk}/")
    page.get_by_label("New file name").fill("MEMORY.md")
    page.get_by_role("button", name="New file").click()
    page.get_by_label("Content (Markdown)").fill("- lint: ruff check .\n")
    page.get_by_role("button", name="Save", exact=True).click()
    page.locator("#bank-preview li", has_text="lint: ruff check .").wait_for()

    # A secret is refused; what was typed stays in the field with the reason.
    page.get_by_role("link", name="Edit", exact=True).click()
    typed = "- wifi: The wifi password is swordfish42\n"
    page.get_by_label("Content (Markdown)").fill(typed)
    page.get_by_role("button", name="Save", exact=True).click()
    page.locator("#file-error").wait_for()
    assert page.get_by_label("Content (Markdown)").input_value() == typed
    screenshot("refused")
    row = MemoryFile.objects.get(scope=bank, path="MEMORY.md")
    assert row.content == "- lint: ruff check .\n"

    # A link to a topic file opens that file in the preview.
    off_loop(
        file_write,
        user=person,
        scope=bank,
        path="MEMORY.md",
        content="- style: see [style](style.md)\n",
        base_sha256=None,
    )
    off_loop(
        file_write,
        user=person,
        scope=bank,
        path="style.md",
        content="Tabs, never spaces.\n",
        base_sha256=None,
    )
    page.goto(f"/memory/banks/{bank.pk}/")
    page.locator("#bank-preview").get_by_role("link", name="style").click()
    page.locator("#bank-preview", has_text="Tabs, never spaces.").wait_for()


def test_the_banks_screen_in_german_at_390_px(sign_in, screenshot):
    person = UserFactory()
    bank = off_loop(bank_create, user=person, project_key="git:laden", project_name="Laden")
    off_loop(file_write, user=person, scope=bank, path="MEMORY.md", content=INDEX, base_sha256=None)
    page = sign_in(person)
    page.set_viewport_size(PHONE)
    page.goto("/memory/banks/")
    page.get_by_label("Language").select_option("de")
    page.locator("html[lang=de]").wait_for(state="attached")
    assert page.get_by_role("heading", name="Projektspeicher", exact=True).is_visible()
    assert page.get_by_text("1 von 100 Dateien").is_visible()
    _fits(page)
    screenshot("list-de-390")
    page.get_by_role("link", name="Laden").click()
    page.get_by_role("link", name="Agentenansicht").click()
    assert "make shop-test" in page.locator("#agent-context").inner_text()
    page.get_by_role("button", name="Ausschalten").click()
    page.get_by_text("Projektgedächtnis ist aus.").first.wait_for()
    _fits(page)
    screenshot("bank-de-390")
