"""Writes that used to bypass the services now go through them (issue 11, item 1).

The project-bank switch of the API keeps a history and reaches open pages; sign-up,
agent save and delete, AI-profile delete and token revoke each run in one service; a
person's own memory scope is made with the person (never by a page that reads it) and
migrate gives one to anyone who lacks it.
"""

from __future__ import annotations

import json

import pytest
from django.core.cache import cache
from django.core.management import call_command

from accounts.models import Agent, AIProfile, ApiToken, User
from accounts.services import api_token_create, site_settings_get
from memory_addon.models import BankSwitch, ChangeSet, MemoryScope
from memory_addon.services.scopes import scopes_ensure_missing, user_scope_find
from tests.factories import AgentFactory, AIProfileFactory, UserFactory

pytestmark = pytest.mark.django_db
PASSWORD = "a-long-enough-pass-phrase-42"


def _switch(client, enabled: bool):
    return client.post(
        f"/api/memory/banks/enabled?enabled={str(enabled).lower()}",
        json.dumps({"project_key": "repo-1", "project_name": "Repo"}),
        content_type="application/json",
    )


def test_the_api_bank_switch_is_recorded_in_the_banks_history(client):
    person = UserFactory()
    client.force_login(person)
    assert _switch(client, False).json()["enabled"] is False
    bank = MemoryScope.objects.get(kind=MemoryScope.Kind.PROJECT, owner=person)
    assert not bank.enabled
    history = list(BankSwitch.objects.filter(scope=bank).values_list("source", "enabled"))
    assert history == [("api", False)]
    # The same state again changes nothing and records nothing.
    assert _switch(client, False).status_code == 200
    assert BankSwitch.objects.filter(scope=bank).count() == 1
    _switch(client, True)
    assert BankSwitch.objects.filter(scope=bank).order_by("-pk").first().enabled is True
    assert not ChangeSet.objects.filter(scope=bank).exists()  # no file changed


def test_sign_up_makes_the_person_and_their_memory_scope(client):
    cache.clear()  # the sign-up rate limit counts in Redis, across test runs
    response = client.post(
        "/accounts/sign-up/",
        {
            "username": "newcomer",
            "email": "n@example.com",
            "password1": PASSWORD,
            "password2": PASSWORD,
        },
    )
    assert response.status_code == 302
    person = User.objects.get(username="newcomer")
    assert person.email == "n@example.com" and person.check_password(PASSWORD)
    assert user_scope_find(person) is not None


def test_a_failed_sign_up_writes_nothing(client):
    cache.clear()
    response = client.post(
        "/accounts/sign-up/", {"username": "x", "password1": PASSWORD, "password2": "other"}
    )
    assert response.status_code == 200
    assert not User.objects.exists() and not MemoryScope.objects.exists()


def test_every_new_person_has_their_scope_however_they_are_created():
    admin = User.objects.create_superuser(username="root", password=PASSWORD)
    assert user_scope_find(admin) is not None
    assert user_scope_find(UserFactory()) is not None
    assert MemoryScope.objects.filter(kind=MemoryScope.Kind.USER).count() == 2


def test_migrate_gives_a_scope_to_people_and_agents_that_lack_one():
    person = UserFactory()
    agent = AgentFactory(owner=person)
    MemoryScope.objects.all().delete()  # as before scopes were made with their owners
    assert scopes_ensure_missing() == 2
    assert user_scope_find(person) is not None
    assert MemoryScope.objects.filter(kind=MemoryScope.Kind.AGENT, agent=agent).count() == 1
    assert scopes_ensure_missing() == 0


def test_migrate_runs_the_scope_repair():
    person = UserFactory()
    MemoryScope.objects.all().delete()
    call_command("migrate", verbosity=0, interactive=False)
    assert user_scope_find(person) is not None


def test_agent_save_and_delete_go_through_the_services(client, user):
    client.force_login(user)
    response = client.post("/accounts/agents/new/", {"name": "Helper", "memory_allowed": "on"})
    assert response.status_code == 302
    agent = Agent.objects.get(owner=user)
    assert MemoryScope.objects.filter(kind=MemoryScope.Kind.AGENT, agent=agent).count() == 1
    client.post(f"/accounts/agents/{agent.pk}/", {"name": "Helper 2", "slug": agent.slug})
    agent.refresh_from_db()
    assert agent.name == "Helper 2"
    assert MemoryScope.objects.filter(kind=MemoryScope.Kind.AGENT, agent=agent).count() == 1
    client.post(f"/accounts/agents/{agent.pk}/delete/")
    assert not Agent.objects.exists()
    assert not MemoryScope.objects.filter(kind=MemoryScope.Kind.AGENT).exists()


def test_ai_profile_delete_on_the_page_and_in_the_api(client, user):
    client.force_login(user)
    first, second = AIProfileFactory(owner=user), AIProfileFactory(owner=user)
    stranger = AIProfileFactory(owner=UserFactory())
    assert client.post(f"/accounts/settings/ai-profiles/{first.pk}/delete/").status_code == 302
    assert client.delete(f"/api/ai-profiles/{stranger.pk}").status_code == 404
    assert client.delete(f"/api/ai-profiles/{second.pk}").status_code == 204
    assert list(AIProfile.objects.values_list("pk", flat=True)) == [stranger.pk]


def test_token_delete_in_the_api_revokes_and_keeps_the_row(client, user):
    client.force_login(user)
    token, plain = api_token_create(user=user, name="laptop")
    other, _ = api_token_create(user=UserFactory(), name="theirs")
    assert client.delete(f"/api/tokens/{other.pk}").status_code == 404
    assert client.delete(f"/api/tokens/{token.pk}").status_code == 204
    token.refresh_from_db()
    other.refresh_from_db()
    assert token.revoked_at is not None and other.revoked_at is None
    assert ApiToken.objects.count() == 2
    client.logout()
    assert client.get("/api/me", headers={"Authorization": f"Bearer {plain}"}).status_code == 401


def test_site_settings_are_read_without_a_row_and_saved_by_an_admin():
    defaults = site_settings_get()
    assert defaults.pk == 1 and defaults._state.adding
    defaults.signup_enabled = False
    defaults.save()
    assert site_settings_get().signup_enabled is False
