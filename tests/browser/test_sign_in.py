from __future__ import annotations

import pytest

from tests.factories import PASSWORD, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_person_signs_in_and_sees_the_navigation(page, screenshot):
    person = UserFactory()
    page.goto("/")
    assert "/accounts/sign-in/" in page.url
    page.get_by_label("Username").fill(person.username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    nav = page.get_by_role("navigation", name="Main")
    for name in ("Chat", "Memory", "Knowledge", "Inbox", "Settings"):
        assert nav.get_by_role("link", name=name).is_visible()
    screenshot("signed-in")
    nav.get_by_role("link", name="Settings").click()
    page.get_by_role("heading", name="Settings", exact=True).wait_for()
    assert page.get_by_role("link", name="Settings").get_attribute("aria-current") == "page"
