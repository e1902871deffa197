"""Bindings and endpoints refuse what they cannot serve.

Local targets, pasted secrets, text of invisible characters, an admin who lost the role.
"""

from __future__ import annotations

import pytest

from accounts.models import Membership
from bridges.models import EventEndpoint, OutboxEvent
from bridges.outbox import outbox_emit
from bridges.services import BridgeRefused, Incoming, binding_create, inbound_accept
from tests.factories import OrganizationFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_webhook_targets_on_this_machine_are_refused_unless_an_admin_allows_them(settings):
    settings.WEBHOOK_ALLOW_LOOPBACK = False
    person = UserFactory()
    for url in ("http://127.0.0.1:8199/cb", "http://[::1]:6379/"):
        with pytest.raises(BridgeRefused, match="loopback"):
            binding_create(owner=person, kind="standard", title="x", callback_url=url)
    settings.WEBHOOK_ALLOW_LOOPBACK = True
    binding_create(owner=person, kind="standard", title="x", callback_url="http://127.0.0.1:9/")


def test_only_slack_bindings_take_a_pasted_secret():
    person = UserFactory()
    with pytest.raises(BridgeRefused, match="Slack"):
        binding_create(owner=person, kind="standard", title="x", secret="a")
    binding, secret = binding_create(owner=person, kind="slack", title="s", secret="slack-secret")
    # Slack's secret verifies Slack; the answers back get a Standard Webhooks one.
    assert binding.platform_secret == "slack-secret"
    assert secret.startswith("whsec_") and binding.webhook_secret == secret


def test_a_message_of_invisible_characters_only_has_no_text():
    binding, _ = binding_create(owner=UserFactory(), kind="standard", title="x")
    with pytest.raises(BridgeRefused, match="no text"):
        inbound_accept(binding=binding, incoming=Incoming("msg_1", "\u200b\u200b \u3000\u2060"))


def test_a_removed_admins_organization_endpoint_hears_nothing_more():
    admin, member = UserFactory(), UserFactory()
    organization = OrganizationFactory()
    Membership.objects.create(organization=organization, user=admin, role="admin")
    Membership.objects.create(organization=organization, user=member)
    EventEndpoint.objects.create(
        owner=admin,
        organization=organization,
        url="https://hooks.example.org/x",
        event_types=["memory.changed"],
    )
    assert outbox_emit(user_id=member.pk, event_type="memory.changed", data={}) == 1
    Membership.objects.filter(user=admin).update(role="member")
    assert outbox_emit(user_id=member.pk, event_type="memory.changed", data={}) == 0
    assert OutboxEvent.objects.count() == 1
