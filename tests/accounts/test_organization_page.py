"""H1: members see their organization's rules and policy; its admins change them."""

from __future__ import annotations

import pytest

from accounts.models import Membership, Organization
from memory_addon.services.policy import policy_for
from tests.factories import OrganizationFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def organization() -> Organization:
    return OrganizationFactory(rules="- Answer in English.\n<script>alert(1)</script>\n")


def _member(organization: Organization, role: str = Membership.Role.MEMBER):
    user = UserFactory()
    Membership.objects.create(organization=organization, user=user, role=role)
    return user


POLICY = {
    "rules": "- Be brief.\n",
    "memory_mode": "read_only",
    "learning_enabled": "",
    "reference_files_enabled": "on",
    "budget_cap_tokens": "800",
}


def test_a_member_reads_the_rules_and_policy_but_gets_no_form(client, organization):
    client.force_login(_member(organization))
    page = client.get("/accounts/organization/")
    assert page.status_code == 200
    assert organization.name in page.text
    # The rules are shown as text, never as HTML.
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text and "<script>alert" not in page.text
    assert 'name="rules"' not in page.text
    assert "Only an admin of the organization can change them" in page.text


def test_a_member_cannot_change_the_policy_by_posting(client, organization):
    client.force_login(_member(organization))
    answer = client.post("/accounts/organization/", POLICY)
    assert answer.status_code == 403
    organization.refresh_from_db()
    assert organization.memory_mode == Organization.MemoryMode.ON
    assert organization.rules.startswith("- Answer in English.")


def test_an_admin_changes_rules_and_policy_and_members_chats_follow(client, organization):
    admin = _member(organization, Membership.Role.ADMIN)
    member = _member(organization)
    client.force_login(admin)
    assert 'name="rules"' in client.get("/accounts/organization/").text
    answer = client.post("/accounts/organization/", POLICY, follow=True)
    assert "Saved the organization&#x27;s rules and policy." in answer.text
    organization.refresh_from_db()
    assert organization.rules == "- Be brief."
    assert (organization.memory_mode, organization.learning_enabled) == ("read_only", False)
    assert organization.budget_cap_tokens == 800
    assert policy_for(member).memory_mode == "read_only"


def test_rules_holding_a_secret_are_refused_and_nothing_is_saved(client, organization):
    client.force_login(_member(organization, Membership.Role.ADMIN))
    answer = client.post(
        "/accounts/organization/", {**POLICY, "rules": "Deploy with password = Velvet-Harbor-19\n"}
    )
    assert answer.status_code == 200
    assert "Line 1 looks like it holds a secret" in answer.text
    organization.refresh_from_db()
    assert organization.rules.startswith("- Answer in English.")


def test_a_bad_budget_is_a_form_error_not_a_500(client, organization):
    client.force_login(_member(organization, Membership.Role.ADMIN))
    answer = client.post("/accounts/organization/", {**POLICY, "budget_cap_tokens": "-5"})
    assert answer.status_code == 200
    assert 'class="error"' in answer.text
    organization.refresh_from_db()
    assert organization.budget_cap_tokens is None


def test_someone_outside_any_organization_is_told_so(client):
    client.force_login(UserFactory())
    page = client.get("/accounts/organization/")
    assert page.status_code == 200
    assert "You are not in an organization." in page.text
    assert client.post("/accounts/organization/", POLICY).status_code == 200  # nothing to change


def test_the_page_speaks_german(client, organization):
    client.force_login(_member(organization))
    page = client.get("/accounts/organization/", headers={"accept-language": "de"})
    assert "<h1>Organisation</h1>" in page.text
    assert "Gedächtnis für Mitglieder" in page.text


def test_an_admin_forbids_skills_and_members_rules_stop_going_to_skills(client, organization):
    from chat.models import Conversation
    from learning.rule_routing import route_rule

    admin = _member(organization, Membership.Role.ADMIN)
    member = _member(organization)
    conversation = Conversation.objects.create(owner=member)
    rule = "Always use type hints in Python."
    assert route_rule(member, rule, conversation).kind == "new_skill"
    client.force_login(admin)
    page = client.get("/accounts/organization/").text
    assert 'name="skills_enabled"' in page
    client.post("/accounts/organization/", {**POLICY, "skills_enabled": ""})
    assert policy_for(member).skills is False
    assert route_rule(member, rule, conversation).kind == "user"
    client.post("/accounts/organization/", {**POLICY, "skills_enabled": "on"})
    assert route_rule(member, rule, conversation).kind == "new_skill"
