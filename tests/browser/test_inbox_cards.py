"""Item 6: an Inbox card says where a proposal came from and when; a forget card shows the
note to be forgotten. Item 8: the kill switch shows on the Inbox too."""

from __future__ import annotations

import pytest

from chat.services import conversation_create
from memory_addon.core.entries import render_entry
from memory_addon.services.changes import file_write
from memory_addon.services.proposals import memory_change_request
from memory_addon.services.scopes import ensure_user_scope, index_path
from memory_addon.turns import Turn
from tests.conftest import off_loop
from tests.factories import AgentFactory, AIProfileFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_cards_name_their_chat_agent_and_time_and_a_forget_card_shows_the_note(sign_in, screenshot):
    person = UserFactory()
    profile = AIProfileFactory(owner=person)
    agent = AgentFactory(owner=person, name="Travel Planner", memory_allowed=True, may_propose=True)
    conversation = conversation_create(user=person, profile_id=profile.pk, title="Trip to Lisbon")
    scope = ensure_user_scope(person)
    entry = render_entry(
        "diet: vegetarian", entry_id="e1", origin="assistant", created="2026-01-01", source="chat"
    )
    file_write(
        user=person, scope=scope, path=index_path(scope), content=entry + "\n", base_sha256=None
    )
    chat_turn = Turn(user=person, agent=agent, conversation_ref=str(conversation.pk))
    off_loop(
        memory_change_request,
        turn=chat_turn,
        operation={"action": "add", "text": "- city: moved to Porto"},
        reason="Mentioned the move.",
    )
    off_loop(
        memory_change_request,
        turn=Turn(user=person, conversation_ref="laptop-session-7"),
        operation={"action": "remove", "entry_id": "e1"},
        reason="Eats fish again.",
    )
    page = sign_in(person)
    page.goto("/inbox/")
    forget, add = page.locator(".proposal").nth(0), page.locator(".proposal").nth(1)

    origin = add.locator("[data-origin]")
    assert "Trip to Lisbon" in origin.inner_text()
    assert "agent Travel Planner" in origin.inner_text()
    assert origin.get_by_role("link", name="“Trip to Lisbon”").get_attribute("href") == (
        f"/chat/{conversation.pk}/"
    )
    assert origin.locator("time").get_attribute("datetime")
    assert "ago" in origin.locator("time").inner_text()

    assert forget.get_by_role("heading").inner_text().startswith("Forget a note")
    assert forget.locator("[data-forget]").inner_text().strip().endswith("diet: vegetarian")
    assert "laptop-session-7" in forget.locator("[data-origin]").inner_text()
    screenshot("cards")


def test_the_kill_switch_shows_on_the_inbox_the_add_on_page_and_the_chat(sign_in, settings):
    settings.MEMORY_AI_MEMORY = "off"
    person = UserFactory()
    AIProfileFactory(owner=person)
    page = sign_in(person)
    for url in ("/inbox/", "/addons/memory/"):
        page.goto(url)
        assert page.get_by_text("Memory is switched off on this server").is_visible(), url
    page.goto("/chat/")
    assert "MEMORY_AI_MEMORY=off" in page.locator("#memory-off").inner_text()
    settings.MEMORY_AI_MEMORY = "on"
    page.goto("/inbox/")
    assert not page.get_by_text("Memory is switched off on this server").is_visible()
