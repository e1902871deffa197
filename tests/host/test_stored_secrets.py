"""Secrets the host keeps for a person (M11, the fifth kind): an AI profile's API key, a
binding's signing secret, an event endpoint's secret. They do not look like secrets to
the guard, so it is told them: every note write, reference file and skill rule refuses
them, naming the line and the kind, never the value."""

from __future__ import annotations

import pytest

from addons.services import skill_rules_save
from bridges.services import binding_create, endpoint_create
from host.errors import ChangeRefused, SecretRefused
from memory_addon.addons import MEMORY_ADDON
from memory_addon.services.changes import file_write
from memory_addon.services.references import reference_upload
from memory_addon.services.scopes import ensure_user_scope
from tests.factories import AIProfileFactory

pytestmark = pytest.mark.django_db

# Words and dashes: nothing the shape-based guard would call a secret.
KEPT = "correct-horse-battery-staple-42"


def _keep_as_api_key(user):
    profile = AIProfileFactory(owner=user)
    profile.api_key = KEPT
    profile.save()


def _keep_as_binding_secret(user):
    binding_create(owner=user, kind="slack", title="Team", secret=KEPT)


def _keep_as_endpoint_secret(user):
    endpoint, _ = endpoint_create(
        owner=user, url="https://example.org/hook", event_types=["memory.changed"]
    )
    endpoint.secret = KEPT
    endpoint.save()


@pytest.mark.parametrize(
    "keep", [_keep_as_api_key, _keep_as_binding_secret, _keep_as_endpoint_secret]
)
def test_a_secret_the_host_keeps_is_refused_in_a_note(user, keep):
    content = f"- server: reach it with {KEPT}\n"
    file_write(
        user=user, scope=ensure_user_scope(user), path="a.md", content=content, base_sha256=""
    )
    keep(user)
    with pytest.raises(SecretRefused) as refused:
        file_write(
            user=user,
            scope=ensure_user_scope(user),
            path="b.md",
            content=f"x\n{content}",
            base_sha256="",
        )
    assert refused.value.details["kind"] == "stored secret"
    assert refused.value.details["line"] == 2
    assert KEPT not in refused.value.message


def test_a_secret_the_host_keeps_is_refused_in_a_reference_file_and_a_skill_rule(user):
    _keep_as_api_key(user)
    with pytest.raises(SecretRefused):
        reference_upload(user=user, name="AGENTS.md", data=f"Use {KEPT} for the API.\n".encode())
    with pytest.raises(ChangeRefused):
        skill_rules_save(user=user, addon_id=MEMORY_ADDON, skill="memory", text=f"Key: {KEPT}")


def test_another_persons_kept_secret_does_not_refuse_my_note(user):
    from tests.factories import UserFactory

    _keep_as_api_key(UserFactory())
    file_write(
        user=user,
        scope=ensure_user_scope(user),
        path="a.md",
        content=f"- {KEPT}\n",
        base_sha256="",
    )


def test_a_secret_the_host_keeps_is_refused_in_agent_instructions(user):
    from django.core.exceptions import ValidationError

    from accounts.services import agent_save
    from tests.factories import AgentFactory

    _keep_as_api_key(user)
    agent = AgentFactory.build(owner=user, instructions=f"Log in with {KEPT} first.")
    with pytest.raises(ValidationError) as refused:
        agent_save(agent=agent)
    assert "instructions" in refused.value.message_dict
    assert KEPT not in str(refused.value)


def test_a_secret_a_member_keeps_is_refused_in_the_organization_rules(user):
    from django.core.exceptions import ValidationError

    from accounts.models import Membership
    from accounts.services import organization_save
    from tests.factories import OrganizationFactory, UserFactory

    organization = OrganizationFactory()
    admin = UserFactory()
    Membership.objects.create(organization=organization, user=admin, role="admin")
    Membership.objects.create(organization=organization, user=user, role="member")
    _keep_as_binding_secret(user)
    organization.rules = f"The shared login is {KEPT}."
    with pytest.raises(ValidationError) as refused:
        organization_save(user=admin, organization=organization)
    assert "rules" in refused.value.message_dict


def test_a_secret_the_host_keeps_is_refused_when_the_model_proposes_it(user, turn):
    from memory_addon.models import Proposal
    from memory_addon.services.proposals import memory_change_request

    _keep_as_endpoint_secret(user)
    with pytest.raises(SecretRefused) as refused:
        memory_change_request(
            turn=turn, operation={"scope": "user", "action": "add", "text": f"- key: {KEPT}"}
        )
    assert refused.value.details["kind"] == "stored secret"
    assert not Proposal.objects.filter(user=user).exists()
