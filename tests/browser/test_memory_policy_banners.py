"""Item 8: an organization's read-only policy and the person's "Never" save mode show on
every page they affect: the Short memory page, the Inbox by its confirm buttons, the Chat.
(The server's kill switch: tests/browser/test_inbox_cards.py.)"""

from __future__ import annotations

import pytest

from accounts.models import Membership, Organization
from addons.services import addon_setting_put
from memory_addon.services.proposals import memory_change_request
from memory_addon.turns import Turn
from tests.conftest import off_loop
from tests.factories import AIProfileFactory, OrganizationFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_read_only_organization_shows_on_the_add_on_page_inbox_and_chat(sign_in, screenshot):
    person = UserFactory()
    AIProfileFactory(owner=person)
    off_loop(
        memory_change_request,
        turn=Turn(user=person),
        operation={"action": "add", "text": "- tea: likes green tea"},
    )
    organization = OrganizationFactory(name="Acme", memory_mode=Organization.MemoryMode.READ_ONLY)
    Membership.objects.create(organization=organization, user=person)
    page = sign_in(person)
    page.goto("/addons/memory/")
    assert "Acme made memory read-only" in page.locator("[data-banner=policy]").inner_text()
    page.goto("/inbox/")
    assert "Acme made memory read-only" in page.locator("[data-banner=policy]").inner_text()
    bulk = page.locator("#inbox-bulk")
    assert bulk.get_by_role("button", name="Confirm all").is_visible()
    assert "Confirming still saves the notes" in bulk.locator("[data-bulk-policy]").inner_text()
    screenshot("inbox")
    page.goto("/chat/")
    banner = page.locator("#memory-saving-off")
    assert "Acme made memory read-only" in banner.inner_text()
    assert "cannot save or propose" in banner.inner_text()


def test_save_mode_never_shows_on_the_inbox_and_chat_and_goes_when_changed(sign_in):
    person = UserFactory()
    AIProfileFactory(owner=person)
    addon_setting_put(user=person, addon="memory", key="save-mode", value="never")
    page = sign_in(person)
    page.goto("/chat/")
    assert "You chose Never" in page.locator("#memory-saving-off").inner_text()
    page.goto("/inbox/")
    assert "You chose Never" in page.locator("[data-banner=saving]").inner_text()
    page.goto("/addons/memory/")
    assert page.get_by_label("Never").is_checked()
    page.get_by_label("Ask me first").check()
    page.get_by_role("status").filter(has_text="Saved.").wait_for()
    page.goto("/chat/")
    assert page.locator("#memory-saving-off").count() == 0
    assert page.locator("#memory-off").count() == 0
