"""Organization policy and the kill switch (M16), as one answer per user."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from accounts.models import Organization, User


@dataclass(frozen=True)
class Policy:
    memory_mode: str  # on / read_only / off
    learning: bool
    budget_cap: int | None
    reference_files: bool
    rules: str
    organization_name: str


def kill_switch_on() -> bool:
    return bool(settings.MEMORY_AI_MEMORY == "off")


def policy_for(user: User) -> Policy:
    organization = Organization.objects.filter(membership__user=user).first()
    if organization is None:
        return Policy("on", True, None, True, "", "")
    return Policy(
        memory_mode=organization.memory_mode,
        learning=organization.learning_enabled,
        budget_cap=organization.budget_cap_tokens,
        reference_files=organization.reference_files_enabled,
        rules=organization.rules.strip(),
        organization_name=organization.name,
    )
