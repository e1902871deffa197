"""Finding (and creating) the scope of a user, agent, conversation, bank or organization.

Reads never write (CONVENTIONS, Boundaries): `*_find` functions are pure reads for GET
pages and endpoints; `ensure_*` creates a missing scope and is called only from write
paths (a person or agent created, a note saved, a binding made, a bank switched).
"""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import IntegrityError, transaction

from accounts.models import Agent, MessagingBinding, User
from memory_addon import events
from memory_addon.core.secret_guard import find_secret
from memory_addon.errors import LimitExceeded, SecretRefused
from memory_addon.models import ChangeSet, MemoryScope

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


def ensure_user_scope(user: User) -> MemoryScope:
    return _get_or_create(MemoryScope.Kind.USER, owner=user)


def ensure_agent_scope(agent: Agent) -> MemoryScope:
    return _get_or_create(MemoryScope.Kind.AGENT, owner=agent.owner, agent=agent)


def ensure_channel_scope(binding: MessagingBinding) -> MemoryScope:
    return _get_or_create(MemoryScope.Kind.CHANNEL, owner=binding.owner, binding=binding)


# The older names of the ensure_* functions (write paths only), kept for the tests and
# benchmarks that set up scopes with them.
user_scope = ensure_user_scope
agent_scope = ensure_agent_scope
channel_scope = ensure_channel_scope


def user_scope_find(user: User) -> MemoryScope | None:
    """A pure read: the person's own scope (created with the person, see receivers.py)."""
    return MemoryScope.objects.filter(kind=MemoryScope.Kind.USER, owner=user).first()


def agent_scope_find(agent: Agent) -> MemoryScope | None:
    """A pure read: the agent's scope (created when the agent is saved)."""
    return MemoryScope.objects.filter(kind=MemoryScope.Kind.AGENT, agent=agent).first()


def scopes_ensure_missing() -> int:
    """Give every person and agent without one their scope (run after migrate).

    People and agents created before scopes were made with them had theirs made by the
    first page that read it; this one write path replaces those reads that wrote.
    """
    created = 0
    people = User.objects.exclude(memory_scopes__kind=MemoryScope.Kind.USER)
    for user in people.only("pk"):
        ensure_user_scope(user)
        created += 1
    with_scope = MemoryScope.objects.filter(kind=MemoryScope.Kind.AGENT, agent__isnull=False)
    agents = Agent.objects.exclude(pk__in=with_scope.values("agent_id"))
    for agent in agents.select_related("owner"):
        ensure_agent_scope(agent)
        created += 1
    return created


def bank_find(user: User, project_key: str) -> MemoryScope | None:
    """A pure read: the bank of this project, or None when none was created yet."""
    return MemoryScope.objects.filter(
        kind=MemoryScope.Kind.PROJECT, owner=user, project_key=project_key
    ).first()


def ensure_bank(user: User, project_key: str, project_name: str = "") -> MemoryScope:
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


bank_scope = ensure_bank  # the older name


def bank_set_enabled(
    *,
    user: User,
    project_key: str,
    project_name: str = "",
    enabled: bool,
    source: str = ChangeSet.Source.API,
) -> MemoryScope:
    """Turn a bank on or off (creating it if needed); its files are never touched.

    A real switch is in the bank's history (a change set without file changes, so there
    is nothing to undo) and reaches the person's open pages; switching to the state it
    already has records nothing.
    """
    if project_name:
        finding = find_secret(project_name)
        if finding:
            raise SecretRefused(f"The project name: {finding.message()}", kind=finding.kind)
    with transaction.atomic(durable=True):
        scope = ensure_bank(user, project_key, project_name)
        switched = (
            MemoryScope.objects.filter(pk=scope.pk).exclude(enabled=enabled).update(enabled=enabled)
        )
        if switched:
            change_set = ChangeSet.objects.create(
                scope=scope,
                user=user,
                origin=ChangeSet.Origin.PERSON,
                source=source,
                summary=(
                    "Project memory turned on"
                    if enabled
                    else "Project memory turned off; its files are kept"
                ),
            )
            events.memory_changed_on_commit(user.pk, change_set.pk, ChangeSet.Origin.PERSON)
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
