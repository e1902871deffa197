"""Finding (and creating) the scope of a user, agent, conversation, bank or organization."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import IntegrityError, transaction

from accounts.models import Agent, MessagingBinding, User
from memory_addon.core.secret_guard import find_secret
from memory_addon.errors import LimitExceeded, SecretRefused
from memory_addon.models import MemoryScope

INDEX_PATH = "index.md"
BANK_INDEX_PATH = "MEMORY.md"


def _get_or_create(kind: str, **lookup: object) -> MemoryScope:
    scope = MemoryScope.objects.filter(kind=kind, **lookup).first()
    if scope:
        return scope
    try:
        with transaction.atomic():
            return MemoryScope.objects.create(kind=kind, **lookup)
    except IntegrityError:  # created by a concurrent request
        return MemoryScope.objects.get(kind=kind, **lookup)


def user_scope(user: User) -> MemoryScope:
    return _get_or_create(MemoryScope.Kind.USER, owner=user)


def agent_scope(agent: Agent) -> MemoryScope:
    return _get_or_create(MemoryScope.Kind.AGENT, owner=agent.owner, agent=agent)


def channel_scope(binding: MessagingBinding) -> MemoryScope:
    return _get_or_create(MemoryScope.Kind.CHANNEL, owner=binding.owner, binding=binding)


def bank_find(user: User, project_key: str) -> MemoryScope | None:
    """A pure read: the bank of this project, or None when none was created yet."""
    return MemoryScope.objects.filter(
        kind=MemoryScope.Kind.PROJECT, owner=user, project_key=project_key
    ).first()


def bank_scope(user: User, project_key: str, project_name: str = "") -> MemoryScope:
    """The bank of this project, created on a write path (a read uses bank_find)."""
    if bank_find(user, project_key) is None:
        banks = MemoryScope.objects.filter(kind=MemoryScope.Kind.PROJECT, owner=user).count()
        if banks >= settings.MEMORY_MAX_BANKS_PER_PERSON:
            raise LimitExceeded(
                f"You have {banks} project memory banks; the limit is "
                f"{settings.MEMORY_MAX_BANKS_PER_PERSON}. Delete one you no longer use first."
            )
    scope = _get_or_create(MemoryScope.Kind.PROJECT, owner=user, project_key=project_key)
    if project_name and scope.project_name != project_name:
        MemoryScope.objects.filter(pk=scope.pk).update(project_name=project_name)
        scope.project_name = project_name
    return scope


def bank_set_enabled(
    *, user: User, project_key: str, project_name: str = "", enabled: bool
) -> MemoryScope:
    """Turn a bank on or off (creating it if needed); its files are never touched."""
    if project_name:
        finding = find_secret(project_name)
        if finding:
            raise SecretRefused(f"The project name: {finding.message()}", kind=finding.kind)
    with transaction.atomic(durable=True):
        scope = bank_scope(user, project_key, project_name)
        MemoryScope.objects.filter(pk=scope.pk).update(enabled=enabled)
    scope.enabled = enabled
    return scope


def scope_folder(scope: MemoryScope) -> str:
    """Where the scope's files appear in the person's Files tree."""
    if scope.kind == MemoryScope.Kind.USER:
        return "Memory"
    if scope.kind == MemoryScope.Kind.AGENT and scope.agent:
        return f"Memory/agents/{scope.agent.slug}"
    if scope.kind == MemoryScope.Kind.CHANNEL and scope.binding:
        digest = hashlib.sha256(scope.binding.external_id.encode()).hexdigest()[:8]
        return f"Memory/channels/{scope.binding.bridge}-{digest}"
    return f"Projects/{scope.project_name or scope.project_key[:12]}"


def index_path(scope: MemoryScope) -> str:
    return BANK_INDEX_PATH if scope.kind == MemoryScope.Kind.PROJECT else INDEX_PATH
