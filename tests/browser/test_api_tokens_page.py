"""Settings → API tokens in the browser: create, copy, use, revoke; at 390 px too."""

from __future__ import annotations

import httpx
import pytest

from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def person():
    return UserFactory()


def _me(live, token):
    return httpx.get(f"{live.url}/api/me", headers={"Authorization": f"Bearer {token}"})


def test_create_copy_use_revoke_then_401(sign_in, person, live_asgi_server, screenshot):
    page = sign_in(person)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto("/accounts/settings/")
    page.get_by_role("link", name="API tokens").click()
    assert page.get_by_text("No token yet").is_visible()
    page.get_by_label("Name").fill("coding agent")
    page.get_by_label("Access").select_option("read_only")
    page.get_by_role("button", name="Create token").click()
    page.get_by_text("it is shown only this once").wait_for()
    page.get_by_role("button", name="Copy").click()
    page.get_by_role("status").filter(has_text="Copied.").wait_for()
    screenshot("created")
    token = page.evaluate("navigator.clipboard.readText()")
    shown = page.get_by_role("textbox", name="New token").input_value()
    assert token.startswith("mh_") and token == shown

    me = _me(live_asgi_server, token)
    assert me.status_code == 200 and me.json()["username"] == person.username
    page.goto("/accounts/settings/api-tokens/")  # on the next visit the token is gone for good
    assert token not in page.content()
    row = page.locator(".token-item", has_text="coding agent")
    assert "Read only" in row.inner_text() and "last used" in row.inner_text()

    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Revoke").click()
    page.get_by_text("It no longer works.").wait_for()
    screenshot("revoked")
    assert _me(live_asgi_server, token).status_code == 401


def test_the_tokens_page_fits_a_390_px_screen(sign_in, person, screenshot):
    page = sign_in(person)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/accounts/settings/api-tokens/")
    page.get_by_label("Name").fill("phone")
    page.get_by_role("button", name="Create token").click()
    page.get_by_role("button", name="Copy").wait_for()
    screenshot("narrow")
    for selector in (".token-created", ".token-list", "main form"):
        box = page.locator(selector).first.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, selector
    wide = page.evaluate(
        "[...document.querySelectorAll('body *')]"
        ".filter(e => e.getBoundingClientRect().right > window.innerWidth + 1).length"
    )
    assert wide == 0
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    # On a phone, signing out sits in the folded menu.
    page.get_by_role("button", name="Menu").click()
    assert page.get_by_role("button", name="Sign out").is_visible()


def test_the_api_docs_render_offline(sign_in, person, live_asgi_server):
    page = sign_in(person)
    outside = []
    page.on(
        "request",
        lambda request: (
            None
            if request.url.startswith((live_asgi_server.url, "data:"))
            else outside.append(request.url)
        ),
    )
    page.goto("/api/docs")
    page.locator(".swagger-ui .info .title").wait_for()
    assert "Memory host API" in page.locator(".swagger-ui .info .title").inner_text()
    memory_tool = page.locator(".opblock-summary-path", has_text="/api/memory/memory-tool")
    assert memory_tool.count() == 2  # the endpoint and its command schemas
    assert outside == []
