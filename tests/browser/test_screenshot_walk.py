"""`make screenshots`: a picture of every page in English and German, light and dark, at
1280 px (and at 390 px for the main pages), for a reviewer to look through. Runs only when
SCREENSHOTS_DIR names the folder to write to; the accessibility walk renders the same
pages in `make test`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.browser.walk import DESKTOP, NOT_FOUND, PAGES, PHONE, SIGNED_OUT, add_on_url, dressed
from tests.browser.walk import world as build_world
from tests.conftest import off_loop

FOLDER = os.environ.get("SCREENSHOTS_DIR", "")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not FOLDER, reason="only for make screenshots (SCREENSHOTS_DIR)"),
]

ALSO_ON_A_PHONE = {"memory", "inbox", "chat", "store", "knowledge", "settings"}


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("language", ["en", "de"])
def test_screenshot_every_page(sign_in, page, live_asgi_server, language, theme):
    folder = Path(FOLDER) / f"{language}-{theme}"
    folder.mkdir(parents=True, exist_ok=True)
    person, ids = off_loop(build_world)
    sign_in(person)
    dressed(page, live_asgi_server.url, language=language, theme=theme)
    shots = [(name, pattern.format(**ids)) for name, pattern in PAGES]
    shots += [("addon-detail", add_on_url(page)), ("not-found", NOT_FOUND)]
    for name, url in shots:
        page.set_viewport_size(DESKTOP)
        page.goto(url)
        page.screenshot(path=str(folder / f"{name}-1280.png"), full_page=True)
        if name in ALSO_ON_A_PHONE:
            page.set_viewport_size(PHONE)
            page.goto(url)
            page.screenshot(path=str(folder / f"{name}-390.png"), full_page=True)
    page.context.clear_cookies()
    dressed(page, live_asgi_server.url, language=language, theme=theme)
    page.set_viewport_size(DESKTOP)
    for name, url in SIGNED_OUT:
        page.goto(url)
        page.screenshot(path=str(folder / f"{name}-1280.png"), full_page=True)
