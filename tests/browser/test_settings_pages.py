"""Item 10 in the browser: Test connection lists the server's models; deleting an agent."""

from __future__ import annotations

import pytest
from django.conf import settings

from accounts.models import Agent, AIProfile, Membership
from memory_addon.models import MemoryScope
from tests.factories import OrganizationFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_test_connection_lists_the_models_to_pick_from(sign_in, fake_openai, screenshot):
    person = UserFactory()
    fake_openai.models = ["qwen3-8b", "gemma-3-270m"]
    page = sign_in(person)
    page.goto("/accounts/settings/ai-profiles/new/")
    page.get_by_label("Name").fill("Local")
    page.get_by_label("Server address").fill(fake_openai.base_url)
    page.get_by_role("button", name="Test connection").click()
    page.get_by_text("Connected. The server offers 2 models").wait_for()
    picker = page.get_by_label("Model", exact=True)
    assert picker.evaluate("e => e.tagName") == "SELECT"
    assert picker.locator("option").all_inner_texts() == ["gemma-3-270m", "qwen3-8b"]
    picker.select_option("qwen3-8b")
    screenshot("models")
    page.get_by_role("button", name="Save").click()
    page.get_by_text("Saved the AI profile “Local”.").wait_for()
    profile = AIProfile.objects.get(owner=person)
    assert (profile.base_url, profile.model) == (fake_openai.base_url, "qwen3-8b")


def test_an_unreachable_server_gets_a_clear_error_and_nothing_is_saved(sign_in, screenshot):
    person = UserFactory()
    page = sign_in(person)
    page.goto("/accounts/settings/ai-profiles/new/")
    page.get_by_label("Name").fill("Nowhere")
    page.get_by_label("Server address").fill("http://127.0.0.1:9/v1")
    page.get_by_role("button", name="Test connection").click()
    error = page.locator("[data-test=error]")
    error.wait_for()
    assert "cannot be reached" in error.inner_text()
    assert page.get_by_label("Server address").input_value() == "http://127.0.0.1:9/v1"
    screenshot("unreachable")
    assert not AIProfile.objects.filter(owner=person).exists()


def test_an_agent_is_created_from_its_name_and_deleted_after_confirming(sign_in, screenshot):
    person = UserFactory()
    page = sign_in(person)
    page.goto("/accounts/agents/new/")
    page.get_by_label("Name", exact=True).fill("Travel Planner")
    page.get_by_role("button", name="Save").click()
    page.get_by_text("Saved the agent “Travel Planner”.").wait_for()
    agent = Agent.objects.get(owner=person)
    assert agent.slug == "travel-planner"
    assert MemoryScope.objects.filter(agent=agent).exists()
    page.get_by_role("link", name="Delete…").click()
    page.get_by_role("heading", name="Delete the agent “Travel Planner”?").wait_for()
    screenshot("confirm")
    page.get_by_role("button", name="Delete the agent and its memory").click()
    page.get_by_text("Deleted the agent “Travel Planner” and its memory.").wait_for()
    assert not Agent.objects.filter(owner=person).exists()
    assert not MemoryScope.objects.filter(kind="agent", owner=person).exists()


def test_an_organization_admin_changes_the_rules_and_a_member_sees_them(
    sign_in, browser, live_asgi_server, screenshot
):
    organization = OrganizationFactory(rules="- Answer in English.")
    admin, member = UserFactory(), UserFactory()
    Membership.objects.create(organization=organization, user=admin, role=Membership.Role.ADMIN)
    Membership.objects.create(organization=organization, user=member)
    page = sign_in(admin)
    page.goto("/accounts/settings/")
    page.get_by_role("link", name="Organization", exact=True).click()
    page.get_by_label("Organization rules").fill("- Answer in German.\n- Cite the source.")
    page.get_by_label("Memory for members").select_option("read_only")
    page.get_by_role("button", name="Save").click()
    page.get_by_text("Saved the organization's rules and policy.").wait_for()
    screenshot("admin")
    organization.refresh_from_db()
    assert organization.memory_mode == "read_only"
    other = browser.new_context(base_url=live_asgi_server.url).new_page()
    from django.test import Client

    client = Client()
    client.force_login(member)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME]
    other.context.add_cookies(
        [{"name": settings.SESSION_COOKIE_NAME, "value": cookie.value, "url": live_asgi_server.url}]
    )
    other.goto("/accounts/organization/")
    assert "- Cite the source." in other.locator("#organization-rules").inner_text()
    assert other.get_by_label("Organization rules").count() == 0
    assert "Read-only" in other.locator("dl").inner_text()
    other.context.close()
