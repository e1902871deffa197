"""Agent instructions go into every prompt of the agent: a secret in them, in any shape a
person writes it, is refused by the save service itself and on the page."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from accounts.models import Agent
from accounts.services import agent_save

pytestmark = pytest.mark.django_db

VALUE = "Sommer2024!xQ"
SHAPES = [
    f"Help with the router.\n**Password**: {VALUE}",
    f"| wifi password | {VALUE} |",
    f"Topic: router\nPasswort\n\n{VALUE}",
    f"- Kennwort fürs NAS: {VALUE}",
]


@pytest.mark.parametrize("instructions", SHAPES)
def test_the_save_service_refuses_a_secret_in_the_instructions(user, instructions):
    agent = Agent(owner=user, name="Ops", slug="ops", instructions=instructions)
    with pytest.raises(ValidationError) as refused:
        agent_save(agent=agent)
    assert "instructions" in refused.value.message_dict
    assert VALUE not in str(refused.value)
    assert not Agent.objects.exists()


@pytest.mark.parametrize("instructions", SHAPES)
def test_the_agent_page_refuses_a_secret_in_the_instructions(client, user, instructions):
    client.force_login(user)
    response = client.post(
        "/accounts/agents/new/", {"name": "Ops", "slug": "ops", "instructions": instructions}
    )
    assert response.status_code == 200
    assert "looks like it holds a secret" in response.content.decode()
    assert not Agent.objects.exists()


def test_instructions_that_only_mention_passwords_are_saved(user):
    text = "| Password policy | at least 12 characters |\nNever ask for the Passwort."
    agent_save(agent=Agent(owner=user, name="Ops", slug="ops", instructions=text))
    assert Agent.objects.get(owner=user).instructions == text
