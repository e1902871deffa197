"""Item 11: every page at 390 px wide without sideways scrolling, the navigation folded into a
menu and tables shown as stacked cards; screenshots of every page at 1280 and 390 px."""

from __future__ import annotations

import pytest

from accounts.models import Membership
from accounts.services import api_token_create
from bridges.services import binding_create, endpoint_create
from chat.models import Message
from chat.schedules import schedule_create
from chat.services import conversation_create
from knowledge.models import Chunk, Document, Source
from knowledge.services import store_create
from memory_addon.models import ChangeSet, FileChange
from memory_addon.services.notes import note_add
from memory_addon.services.proposals import memory_change_request
from memory_addon.services.references import reference_upload
from memory_addon.services.scopes import ensure_agent_scope, ensure_user_scope
from memory_addon.turns import Turn
from tests.conftest import off_loop
from tests.factories import AgentFactory, AIProfileFactory, OrganizationFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LONG = "a-rather-long-unbroken-word-" * 3
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}


def _world():
    """One person with something on every page, so lists and tables are not empty."""
    person = UserFactory(is_staff=True)
    profile = AIProfileFactory(owner=person, name="Local model with a long name", model=LONG)
    agent = AgentFactory(owner=person, name="Research helper", slug="research-helper")
    scope = ensure_user_scope(person)
    note_add(user=person, scope=scope, text=f"home: lives in Rome {LONG}", source="page")
    note_add(
        user=person, scope=ensure_agent_scope(agent), text="tone: short answers", source="page"
    )
    memory_change_request(
        turn=Turn(user=person),
        operation={"action": "add", "text": f"- city: moved to Berlin {LONG}"},
        reason="They said so.",
    )
    conversation = conversation_create(user=person, profile_id=profile.pk, title=f"Trip {LONG}")
    Message.objects.create(conversation=conversation, role="user", content=f"Plan {LONG}")
    Message.objects.create(
        conversation=conversation,
        role="assistant",
        state="complete",
        content=f"Here:\n\n```python\nprint('{LONG}{LONG}')\n```\n\nhttps://example.org/{LONG}",
    )
    schedule_create(
        user=person,
        name=f"Morning {LONG}",
        prompt="Summarize",
        profile_id=profile.pk,
        every_minutes=60,
    )
    store = store_create(owner=person, name=f"Docs {LONG}", provider="none")
    source = Source.objects.create(
        store=store, kind=Source.Kind.UPLOAD, path=f"/u/{LONG}.md", chunk_count=1
    )
    document = Document.objects.create(
        source=source, path=f"{LONG}.md", sha256="x", format="text", size=1
    )
    Chunk.objects.create(
        document=document, store=store, source=source, ordinal=0, text="alpaca", token_count=5
    )
    reference = reference_upload(
        user=person, name="AGENTS.md", data=f"# Rules\n\n{LONG}\n".encode()
    )
    api_token_create(user=person, name=f"laptop {LONG}")
    organization = OrganizationFactory(name=f"Team {LONG}", rules=f"- Cite sources. {LONG}{LONG}\n")
    Membership.objects.create(organization=organization, user=person, role=Membership.Role.ADMIN)
    binding_create(owner=person, kind="standard", title=f"Family chat {LONG}")
    endpoint_create(owner=person, url="https://example.org/hook", event_types=["memory.changed"])
    version = FileChange.objects.filter(change_set__scope=scope).latest("pk")
    return person, {
        "scope": scope.pk,
        "conversation": conversation.pk,
        "store": store.pk,
        "reference": reference.pk,
        "agent": agent.pk,
        "profile": profile.pk,
        "version": version.pk,
        "change_sets": ChangeSet.objects.filter(scope=scope).count(),
    }


PAGES = [
    ("memory", "/memory/"),
    ("memory-raw", "/memory/?view=raw"),
    ("memory-search", "/memory/?q=Rome"),
    ("memory-clear", "/memory/{scope}/clear/"),
    ("memory-history", "/memory/{scope}/history/"),
    ("memory-restore", "/memory/versions/{version}/restore/"),
    ("memory-audit", "/memory/audit/"),
    ("memory-agent", "/memory/agents/{agent}/"),
    ("files", "/files/"),
    ("file", "/files/{scope}/?path=index.md"),
    ("inbox", "/inbox/"),
    ("addon-memory", "/addons/memory/"),
    ("addons", "/addons/"),
    ("chat-new", "/chat/"),
    ("chat", "/chat/{conversation}/"),
    ("chat-delete", "/chat/{conversation}/delete/"),
    ("schedules", "/chat/schedules/"),
    ("knowledge", "/knowledge/"),
    ("knowledge-new", "/knowledge/new/"),
    ("store", "/knowledge/{store}/"),
    ("references", "/learning/references/"),
    ("reference", "/learning/references/{reference}/"),
    ("cleanup", "/learning/cleanup/"),
    ("settings", "/accounts/settings/"),
    ("organization", "/accounts/organization/"),
    ("agents", "/accounts/agents/"),
    ("agent-new", "/accounts/agents/new/"),
    ("agent-edit", "/accounts/agents/{agent}/"),
    ("profile-new", "/accounts/settings/ai-profiles/new/"),
    ("profile-edit", "/accounts/settings/ai-profiles/{profile}/"),
    ("tokens", "/accounts/settings/api-tokens/"),
    ("messaging", "/bridges/messaging/"),
    ("events", "/bridges/events/"),
]


def _width(page) -> int:
    return int(page.evaluate("document.documentElement.scrollWidth"))


def test_every_page_fits_a_phone_and_a_desktop(sign_in, page, screenshot, live_asgi_server):
    person, ids = off_loop(_world)
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
