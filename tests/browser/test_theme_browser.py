"""Dark mode: pages follow the system's colour scheme until the person picks a theme in the
top bar; the choice holds on every page, in add-on frames and in the admin, on a phone
and a desktop, in English and German."""

from __future__ import annotations

import pytest

from addons.services import addon_install_zip, addon_set_enabled
from tests.addons.conftest import EXAMPLE_PACKAGE, folder_files, zip_of
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DARK_BACKGROUND = "rgb(15, 18, 23)"
LIGHT_BACKGROUND = "rgb(246, 247, 249)"
LAYOUTS = [
    pytest.param({"width": 1280, "height": 900}, "en", "Colour theme", id="desktop-en"),
    pytest.param({"width": 390, "height": 844}, "de", "Farbschema", id="phone-de"),
]


def background(page) -> str:
    return page.evaluate("getComputedStyle(document.body).backgroundColor")


def in_language(page, language: str) -> None:
    if language != "en":
        page.get_by_label("Language").select_option(language)
        page.locator(f"html[lang={language}]").wait_for(state="attached")


@pytest.mark.parametrize(("viewport", "language", "label"), LAYOUTS)
def test_pages_follow_the_system_until_a_theme_is_chosen(
    sign_in, screenshot, viewport, language, label
):
    page = sign_in(UserFactory())
    page.set_viewport_size(viewport)
    page.emulate_media(color_scheme="dark")
    page.goto("/memory/")
    in_language(page, language)
    assert background(page) == DARK_BACKGROUND
    screenshot(f"memory-dark-{language}")

    page.get_by_label(label).select_option("light")
    page.locator("html[data-theme=light]").wait_for(state="attached")
    assert page.url.endswith("/memory/")
    assert background(page) == LIGHT_BACKGROUND
    page.goto("/knowledge/")
    assert background(page) == LIGHT_BACKGROUND, "the choice holds on the next page"

    page.emulate_media(color_scheme="light")
    page.get_by_label(label).select_option("dark")
    page.locator("html[data-theme=dark]").wait_for(state="attached")
    assert background(page) == DARK_BACKGROUND
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
    screenshot(f"knowledge-dark-{language}")

    page.get_by_label(label).select_option("system")
    page.locator("html[data-theme=system]").wait_for(state="attached")
    assert background(page) == LIGHT_BACKGROUND


THEMED_PAGE = (
    '<!doctype html><script src="/static/js/addon-sdk.js"></script>'
    '<script src="page.js" defer></script><p id="theme">none</p>'
)
THEMED_JS = """
window.sdk.onTheme((theme) => { document.getElementById("theme").textContent = theme; });
"""


def test_an_add_on_page_and_the_admin_get_the_chosen_theme(sign_in):
    admin = UserFactory(is_superuser=True, is_staff=True)
    files = folder_files(EXAMPLE_PACKAGE)
    files["pages/index.html"] = THEMED_PAGE
    files["pages/page.js"] = THEMED_JS
    addon_install_zip(user=admin, data=zip_of(files))
    addon_set_enabled(user=admin, addon_id="tone-of-voice", enabled=True)
    page = sign_in(admin)
    page.emulate_media(color_scheme="light")
    page.goto("/addons/tone-of-voice/pages/0/")
    page.get_by_label("Colour theme").select_option("dark")
    page.locator("html[data-theme=dark]").wait_for(state="attached")

    frame = page.frame_locator("iframe[data-addon-frame]")
    frame.get_by_text("dark", exact=True).wait_for()
    assert frame.locator("html").get_attribute("data-theme") == "dark"
    assert frame.locator("html").evaluate("el => el.style.colorScheme") == "dark"

    page.goto("/admin/")
    assert page.locator("html").get_attribute("data-theme") == "dark"
    assert page.locator(".theme-toggle").count() == 0
