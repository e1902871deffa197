"""M20's "Estimate complexity": the person's own choice, and an organization that sets and
locks it, on the settings page, the organization page and the API."""

from __future__ import annotations

import pytest

from accounts.models import Membership
from accounts.selectors import estimate_complexity_for
from tests.factories import OrganizationFactory, UserFactory

pytestmark = pytest.mark.django_db


def _locked_member(mode: str = "always"):
    organization = OrganizationFactory(
        name="Acme", estimate_complexity=mode, estimate_complexity_locked=True
    )
    person = UserFactory(estimate_complexity="off")
    Membership.objects.create(organization=organization, user=person)
    return organization, person


def test_the_setting_is_off_until_the_person_chooses(client):
    person = UserFactory()
    assert estimate_complexity_for(person).mode == "off"
    client.force_login(person)
    page = client.get("/accounts/settings/").content.decode()
    assert 'name="estimate_complexity"' in page and "disabled" not in page


def test_the_settings_page_shows_the_ai_settings_once_and_keeps_its_title(client):
    client.force_login(UserFactory())
    page = client.get("/accounts/settings/").content.decode()
    assert page.count('name="estimate_complexity"') == 1
    assert "<title>Settings · Memory host</title>" in page


def test_the_person_chooses_automatic_on_the_settings_page(client):
    person = UserFactory()
    client.force_login(person)
    response = client.post("/accounts/settings/", {"estimate_complexity": "automatic"})
    assert response.status_code == 302
    person.refresh_from_db()
    assert estimate_complexity_for(person).mode == "automatic"


def test_an_unknown_value_is_a_form_error_naming_the_field(client):
    person = UserFactory()
    client.force_login(person)
    response = client.post("/accounts/settings/", {"estimate_complexity": "sometimes"})
    assert response.status_code == 400
    assert "Choose Off, Automatic or Always." in response.content.decode()


def test_an_organization_value_applies_until_the_person_chooses_their_own():
    organization = OrganizationFactory(estimate_complexity="automatic")
    person = UserFactory()
    Membership.objects.create(organization=organization, user=person)
    assert estimate_complexity_for(person).mode == "automatic"
    person.estimate_complexity = "off"
    assert estimate_complexity_for(person).mode == "off"


def test_a_locked_organization_value_wins_and_the_page_shows_it_locked(client):
    _, person = _locked_member("always")
    setting = estimate_complexity_for(person)
    assert (setting.mode, setting.locked) == ("always", True)
    client.force_login(person)
    page = client.get("/accounts/settings/").content.decode()
    assert "Locked by Acme" in page
    assert 'name="estimate_complexity" disabled' in page
    assert '<option value="always" selected>' in page


def test_a_locked_setting_is_refused_on_the_page_too(client):
    _, person = _locked_member()
    client.force_login(person)
    response = client.post("/accounts/settings/", {"estimate_complexity": "off"})
    assert response.status_code == 400
    assert "Acme has set and locked this setting" in response.content.decode()
    assert estimate_complexity_for(person).mode == "always"


def test_the_api_shows_the_setting_and_refuses_a_change_while_locked(client):
    _, person = _locked_member()
    client.force_login(person)
    got = client.get("/api/ai-settings").json()
    assert got == {"estimate_complexity": "always", "estimate_complexity_locked": True}
    response = client.put(
        "/api/ai-settings", {"estimate_complexity": "off"}, content_type="application/json"
    )
    assert response.status_code == 403
    assert "estimate_complexity" in response.json()["detail"]
    assert estimate_complexity_for(person).mode == "always"


def test_the_api_changes_an_unlocked_setting_and_refuses_an_unknown_value(client):
    person = UserFactory()
    client.force_login(person)
    response = client.put(
        "/api/ai-settings", {"estimate_complexity": "always"}, content_type="application/json"
    )
    assert response.status_code == 200 and response.json()["estimate_complexity"] == "always"
    bad = client.put(
        "/api/ai-settings", {"estimate_complexity": "often"}, content_type="application/json"
    )
    assert 400 <= bad.status_code < 500
    assert "estimate_complexity" in bad.content.decode()


def test_an_organization_admin_sets_and_locks_it_on_the_organization_page(client):
    organization = OrganizationFactory(name="Acme")
    admin = UserFactory()
    Membership.objects.create(organization=organization, user=admin, role=Membership.Role.ADMIN)
    client.force_login(admin)
    response = client.post(
        "/accounts/organization/",
        {
            "rules": "",
            "memory_mode": "on",
            "learning_enabled": "on",
            "skills_enabled": "on",
            "reference_files_enabled": "on",
            "budget_cap_tokens": "",
            "estimate_complexity": "always",
            "estimate_complexity_locked": "on",
        },
    )
    assert response.status_code == 302
    organization.refresh_from_db()
    assert organization.estimate_complexity == "always" and organization.estimate_complexity_locked
    page = client.get("/accounts/organization/").content.decode()
    assert "Always (locked)" in page
