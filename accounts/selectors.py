"""The owner checks for what a person keeps in accounts, one per resource, for pages and
the API alike: a foreign or missing id is a 404, never a hint that the row exists."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet, Value
from django.shortcuts import get_object_or_404

from accounts import crypto
from accounts.models import (
    Agent,
    AIProfile,
    ApiToken,
    EstimateComplexity,
    Membership,
    MessagingBinding,
    User,
)
from host.compiled import CompiledQuery


def profile_for_user(user: User, profile_id: int) -> AIProfile:
    return get_object_or_404(AIProfile, pk=profile_id, owner=user)


def agent_for_user(user: User, agent_id: int) -> Agent:
    return get_object_or_404(Agent, pk=agent_id, owner=user)


def token_for_user(user: User, token_id: int) -> ApiToken:
    return get_object_or_404(ApiToken, pk=token_id, user=user)


def binding_for_user(user: User, binding_id: int) -> MessagingBinding:
    return get_object_or_404(MessagingBinding, pk=binding_id, owner=user)


def membership_of(user: User) -> Membership | None:
    """The person's organization with their role in it (one organization per person)."""
    return Membership.objects.select_related("organization").filter(user=user).first()


@dataclass(frozen=True)
class ComplexitySetting:
    mode: str  # an EstimateComplexity value
    locked: bool  # the organization set it and members cannot change it
    organization_name: str = ""


def estimate_complexity_for(user: User) -> ComplexitySetting:
    """The person's "Estimate complexity" as it applies: a locked organization value wins,
    then the person's own choice, then the organization's value, then Off."""
    membership = membership_of(user)
    organization = membership.organization if membership is not None else None
    value = organization.estimate_complexity if organization is not None else ""
    if organization is not None and value and organization.estimate_complexity_locked:
        return ComplexitySetting(value, True, organization.name)
    mode = user.estimate_complexity or value or EstimateComplexity.OFF
    return ComplexitySetting(mode, False, organization.name if organization else "")


def _stored_secrets_query(user_id: int) -> QuerySet[AIProfile, tuple[str, str, str]]:
    keys = (
        AIProfile.objects.filter(owner_id=user_id)
        .exclude(api_key_encrypted="")
        .annotate(none_1=Value(""), none_2=Value(""))
        .values_list("api_key_encrypted", "none_1", "none_2")
        .order_by()
    )
    bindings = (
        MessagingBinding.objects.filter(owner_id=user_id)
        .values_list(
            "webhook_secret_encrypted", "previous_secret_encrypted", "platform_secret_encrypted"
        )
        .order_by()
    )
    # Ordered by a selected column: a union cannot take the profile's default ordering.
    return keys.union(bindings, all=True).order_by("api_key_encrypted")


# Read on every memory write (M11): both tables in one query, compiled once per process.
_STORED_SECRETS = CompiledQuery(_stored_secrets_query, "user_id")


def stored_secrets_of(user_id: int) -> list[str]:
    """The secrets accounts keeps for a person: AI profile keys, binding signing secrets."""
    encrypted = [value for row in _STORED_SECRETS.rows(user_id=user_id) for value in row if value]
    return [crypto.decrypt(value) for value in encrypted]
