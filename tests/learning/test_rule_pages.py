"""The rule card's actions as pages: owner checks, refusals as messages, the reason when off."""

from __future__ import annotations

import pytest

from accounts.models import Membership
from learning.models import RuleSuggestion
from tests.factories import OrganizationFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def card(person, conversation, answered):
    question, answer = answered("From now on use tabs.")
    return RuleSuggestion.objects.create(
        user=person,
        conversation=conversation,
        user_message=question,
        answer=answer,
        origin="detected",
        state="pending",
        text="Use tabs.",
    )


@pytest.mark.parametrize("action", ["save", "postpone", "never", "undo"])
def test_another_persons_card_is_404(client, card, action):
    client.force_login(UserFactory())
    response = client.post(f"/learning/rules/{card.pk}/{action}/", {"text": "Mine."})
    assert response.status_code == 404
    card.refresh_from_db()
    assert card.state == "pending"


def test_another_persons_message_cannot_be_remembered(client, card):
    client.force_login(UserFactory())
    response = client.post(f"/learning/messages/{card.user_message_id}/remember/", {"text": "x"})
    assert response.status_code == 404


def test_an_empty_or_too_long_rule_is_a_message_not_a_500(client, person, card):
    client.force_login(person)
    for text in ["", "   ", "x" * 301, "a\x00b"]:
        response = client.post(f"/learning/rules/{card.pk}/save/", {"text": text}, follow=True)
        assert response.status_code in (200, 400)
    card.refresh_from_db()
    assert card.state == "pending"


def test_the_card_shows_under_the_answer_with_its_target(client, person, conversation, card):
    client.force_login(person)
    page = client.get(f"/chat/{conversation.pk}/").content.decode()
    assert f'id="rule-card-{card.pk}"' in page
    assert "Memory/index.md" in page
    assert "Remember as rule…" in page


def test_the_page_says_why_when_the_organization_turned_learning_off(
    client, person, conversation, card
):
    Membership.objects.create(
        organization=OrganizationFactory(name="Acme", learning_enabled=False), user=person
    )
    client.force_login(person)
    page = client.get(f"/chat/{conversation.pk}/").content.decode()
    assert "Acme has turned rule learning off." in page
    assert "Remember as rule…" not in page
    response = client.post(f"/learning/rules/{card.pk}/save/", {"text": "Use tabs."}, follow=True)
    assert "turned rule learning off" in response.content.decode()
    card.refresh_from_db()
    assert card.state == "pending"
