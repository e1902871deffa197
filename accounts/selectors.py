"""The owner checks for what a person keeps in accounts, one per resource, for pages and
the API alike: a foreign or missing id is a 404, never a hint that the row exists."""

from __future__ import annotations

from django.shortcuts import get_object_or_404

from accounts import crypto
from accounts.models import Agent, AIProfile, ApiToken, Membership, MessagingBinding, User


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


def stored_secrets_of(user_id: int) -> list[str]:
    """The secrets accounts keeps for a person: AI profile keys, binding signing secrets."""
    encrypted = list(
        AIProfile.objects.filter(owner_id=user_id)
        .exclude(api_key_encrypted="")
        .values_list("api_key_encrypted", flat=True)
    )
    for row in MessagingBinding.objects.filter(owner_id=user_id).values_list(
        "webhook_secret_encrypted", "previous_secret_encrypted", "platform_secret_encrypted"
    ):
        encrypted += [value for value in row if value]
    return [crypto.decrypt(value) for value in encrypted]
