"""Item 11: every page at 390 px wide without sideways scrolling, the navigation folded into a
menu and tables shown as stacked cards; screenshots of every page at 1280 and 390 px."""

from __future__ import annotations

import pytest

from tests.browser.walk import DESKTOP, PAGES, PHONE, world
from tests.conftest import off_loop
from tests.factories import AgentFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _width(page) -> int:
    return int(page.evaluate("document.documentElement.scrollWidth"))


def test_every_page_fits_a_phone_and_a_desktop(sign_in, page, screenshot, live_asgi_server):
    person, ids = off_loop(world)
    sign_in(person)
    too_wide = {}
    for name, pattern in PAGES:
        url = pattern.format(**ids)
        page.set_viewport_size(DESKTOP)
        response = page.goto(url)
        assert response is not None and response.status == 200, url
        screenshot(f"{name}-1280")
        page.set_viewport_size(PHONE)
        page.goto(url)
        screenshot(f"{name}-390")
        if _width(page) > PHONE["width"]:
            too_wide[url] = _width(page)
    assert too_wide == {}
    # The add-on page of an installed add-on too (its id comes from the library).
    page.set_viewport_size(PHONE)
    page.goto("/addons/")
    page.locator(".addon-item a").first.click()
    page.wait_for_load_state()
    screenshot("addon-detail-390")
    assert _width(page) <= PHONE["width"]
    # Signed out: sign-in and sign-up.
    page.context.clear_cookies()
    for name, url in (("sign-in", "/accounts/sign-in/"), ("sign-up", "/accounts/sign-up/")):
        page.goto(url)
        screenshot(f"{name}-390")
        assert _width(page) <= PHONE["width"], url


def test_the_navigation_folds_into_a_menu_on_a_phone(sign_in, page, screenshot):
    person = UserFactory()
    sign_in(person)
    page.set_viewport_size(PHONE)
    page.goto("/memory/")
    menu = page.get_by_role("button", name="Menu")
    inbox = page.get_by_role("navigation", name="Main").get_by_role("link", name="Inbox")
    assert menu.is_visible()
    assert menu.get_attribute("aria-expanded") == "false"
    assert not inbox.is_visible()
    menu.click()
    assert menu.get_attribute("aria-expanded") == "true"
    assert inbox.is_visible()
    screenshot("menu-open")
    inbox.click()
    page.wait_for_url("**/inbox/")
    # On a desktop the links are always there and the button is not.
    page.set_viewport_size(DESKTOP)
    assert not page.get_by_role("button", name="Menu").is_visible()
    assert (
        page.get_by_role("navigation", name="Main").get_by_role("link", name="Inbox").is_visible()
    )


def test_tables_become_labelled_cards_on_a_phone(sign_in, page, screenshot):
    person = UserFactory()
    AgentFactory(owner=person, name="Research helper")
    sign_in(person)
    page.set_viewport_size(PHONE)
    page.goto("/accounts/agents/")
    row = page.locator("table.table tbody tr").first
    assert row.evaluate("r => getComputedStyle(r).display") == "block"
    first_cell = row.locator("td").first
    assert first_cell.get_attribute("data-label") == "Name"
    label = first_cell.evaluate("c => getComputedStyle(c, '::before').content")
    assert label == '"Name"'
    screenshot("agents-cards")
    page.set_viewport_size(DESKTOP)
    assert row.evaluate("r => getComputedStyle(r).display") == "table-row"
