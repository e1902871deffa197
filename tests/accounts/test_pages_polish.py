"""Item 10: error pages, favicon, admin link, sign-out notice, sign-up errors, agents."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.test import RequestFactory
from django.utils import translation
from django.views import defaults

from accounts.models import Agent
from memory_addon.models import MemoryScope
from tests.factories import PASSWORD, AgentFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_an_unknown_address_gets_the_styled_404_with_navigation(client, user):
    client.force_login(user)
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    text = response.content.decode()
    assert "Page not found" in text
    assert 'aria-label="Main"' in text and 'href="/inbox/"' in text
    assert 'data-status="404"' in text


def test_the_404_speaks_german(client, user):
    client.force_login(user)
    response = client.get("/no/such/page/", headers={"accept-language": "de"})
    assert response.status_code == 404
    assert "Seite nicht gefunden" in response.content.decode()


def test_the_403_page_is_styled(user):
    request = RequestFactory().get("/x/")
    request.user = user
    with translation.override("en"):
        response = defaults.permission_denied(request, PermissionDenied())
    assert response.status_code == 403
    text = response.content.decode()
    assert "Not allowed" in text and 'data-status="403"' in text and "/memory/" in text


def test_the_500_page_needs_no_database(django_assert_num_queries):
    request = RequestFactory().get("/x/")
    with django_assert_num_queries(0), translation.override("en"):
        response = defaults.server_error(request)
    assert response.status_code == 500
    text = response.content.decode()
    assert "Something went wrong" in text and 'href="/memory/"' in text
    assert "favicon.svg" in text


def test_every_page_links_the_favicon(client, user):
    client.force_login(user)
    text = client.get("/memory/").content.decode()
    href = re.search(r'<link rel="icon" href="([^"]+)"', text)
    assert href is not None and href.group(1).endswith("favicon.svg")
    assert (Path(settings.BASE_DIR) / "static" / "favicon.svg").read_text().startswith("<svg")


def test_the_admin_is_linked_for_staff_only(client):
    person = UserFactory()
    client.force_login(person)
    assert 'href="/admin/"' not in client.get("/memory/").content.decode()
    staff = UserFactory(is_staff=True)
    client.force_login(staff)
    assert 'href="/admin/"' in client.get("/memory/").content.decode()


def test_signing_out_says_so(client, user):
    client.force_login(user)
    response = client.post("/accounts/sign-out/", follow=True)
    assert response.redirect_chain[-1][0] == "/accounts/sign-in/"
    assert "You are signed out." in response.content.decode()
    assert client.get("/chat/").status_code == 302


def test_sign_up_errors_sit_under_their_field(client):
    response = client.post(
        "/accounts/sign-up/",
        {"username": "", "email": "n@example.org", "password1": PASSWORD, "password2": "other"},
    )
    assert response.status_code == 200
    text = response.content.decode()
    fields = dict(
        re.findall(r'<div class="field has-error">\s*<label for="id_(\w+)">(.*?)</div>', text, re.S)
    )
    assert set(fields) == {"username", "password2"}
    assert "required" in fields["username"]
    assert "match" in fields["password2"]


def test_an_agent_gets_its_slug_from_its_name_and_its_memory_at_once(client, user):
    client.force_login(user)
    response = client.post(
        "/accounts/agents/new/", {"name": "Recherche Helfer Nr. 2", "slug": "", "instructions": ""}
    )
    assert response.status_code == 302
    agent = Agent.objects.get(owner=user)
    assert agent.slug == "recherche-helfer-nr-2"
    assert MemoryScope.objects.filter(kind="agent", agent=agent, owner=user).exists()


def test_a_slug_that_clashes_is_refused_under_the_slug_field(client, user):
    AgentFactory(owner=user, name="Helper", slug="helper")
    client.force_login(user)
    response = client.post("/accounts/agents/new/", {"name": "Helper", "slug": ""})
    assert response.status_code == 200
    assert "You already have an agent with this slug." in response.content.decode()
    assert Agent.objects.filter(owner=user).count() == 1


def test_deleting_an_agent_asks_first_then_removes_it_and_its_memory(client, user):
    client.force_login(user)
    client.post("/accounts/agents/new/", {"name": "Helper"})
    agent = Agent.objects.get(owner=user)
    ask = client.get(f"/accounts/agents/{agent.pk}/delete/")
    assert ask.status_code == 200 and "Delete the agent “Helper”?" in ask.content.decode()
    assert Agent.objects.filter(pk=agent.pk).exists()
    done = client.post(f"/accounts/agents/{agent.pk}/delete/", follow=True)
    assert "Deleted the agent “Helper” and its memory." in done.content.decode()
    assert not Agent.objects.filter(pk=agent.pk).exists()
    assert not MemoryScope.objects.filter(kind="agent", owner=user).exists()


def test_someone_elses_agent_cannot_be_deleted(client, user):
    theirs = AgentFactory()
    client.force_login(user)
    assert client.get(f"/accounts/agents/{theirs.pk}/delete/").status_code == 404
    assert client.post(f"/accounts/agents/{theirs.pk}/delete/").status_code == 404
    assert Agent.objects.filter(pk=theirs.pk).exists()
