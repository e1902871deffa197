"""Finding (and creating) the scope of a user, agent, conversation, bank or organization.

Reads never write (CONVENTIONS, Boundaries): `*_find` functions are pure reads for GET
pages and endpoints; `ensure_*` creates a missing scope and is called only from write
paths (a person or agent created, a note saved, a binding made, a bank switched).
"""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils.translation import gettext

from accounts.models import Agent, MessagingBinding, User
from host.compiled import CompiledQuery
from host.core.secret_guard import find_secret
from host.errors import ChangeRefused, LimitExceeded, SecretRefused
from host.secret_text import secret_refusal
from memory_addon.models import BankSwitch, ChangeSet, MemoryScope
from memory_addon.services.locks import memory_lock

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


# Every save and turn of a person starts here: compiled once per process.
_USER_SCOPE = CompiledQuery(
    lambda owner_id: MemoryScope.objects.filter(
        kind=MemoryScope.Kind.USER, owner_id=owner_id
    ).order_by("pk")[:1],
    "owner_id",
)


def ensure_user_scope(user: User) -> MemoryScope:
    sql, params = _USER_SCOPE.sql(owner_id=user.pk)
    found = next(iter(MemoryScope.objects.raw(sql, params)), None)
    return found or _get_or_create(MemoryScope.Kind.USER, owner=user)


def ensure_agent_scope(agent: Agent) -> MemoryScope:
    return _get_or_create(MemoryScope.Kind.AGENT, owner=agent.owner, agent=agent)


def ensure_channel_scope(binding: MessagingBinding, chat_key: str = "") -> MemoryScope:
    """The notes of one external chat of the binding ("" for its first conversation)."""
    return _get_or_create(
        MemoryScope.Kind.CHANNEL, owner=binding.owner, binding=binding, chat_key=chat_key
    )


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
    scope = bank_find(user, project_key)
    named = bool(project_name) and (scope is None or scope.project_name != project_name)
    if named:
        _check_name(project_name)
    if scope is None:
        _check_key(project_key)
        with transaction.atomic():
            # Counted and created under the person's lock: parallel creates cannot all
            # see room for one more bank.
            memory_lock(user.pk)
            banks = MemoryScope.objects.filter(kind=MemoryScope.Kind.PROJECT, owner=user).count()
            if banks >= settings.MEMORY_MAX_BANKS_PER_PERSON and not bank_find(user, project_key):
                raise LimitExceeded(
                    gettext(
                        "You have %(banks)s project memory banks; the limit is %(limit)s. "
                        "Delete one you no longer use first."
                    )
                    % {"banks": banks, "limit": settings.MEMORY_MAX_BANKS_PER_PERSON}
                )
            scope = _get_or_create(MemoryScope.Kind.PROJECT, owner=user, project_key=project_key)
    if named:
        MemoryScope.objects.filter(pk=scope.pk).update(project_name=project_name)
        scope.project_name = project_name
    return scope


def _refuse_secret(label: str, value: str) -> None:
    finding = find_secret(value)
    if finding:
        raise SecretRefused(f"{label}: {secret_refusal(finding)}", kind=finding.kind)


def _switch(*, user: User, scope: MemoryScope, enabled: bool, source: str) -> None:
    """Set the bank's state; a real change leaves a row in its history (inside a transaction)."""
    # A conditional update: two tabs flipping at once record one change, not two.
    changed = (
        MemoryScope.objects.filter(pk=scope.pk).exclude(enabled=enabled).update(enabled=enabled)
    )
    if changed:
        BankSwitch.objects.create(scope=scope, user=user, enabled=enabled, source=source)
    scope.enabled = enabled


def bank_set_enabled(
    *,
    user: User,
    project_key: str,
    project_name: str = "",
    enabled: bool,
    source: str = ChangeSet.Source.API,
) -> MemoryScope:
    """Turn a bank on or off (creating it if needed); its files are never touched.

    A real switch is a row in the bank's history (BankSwitch); switching to the state it
    already has records nothing.
    """
    with transaction.atomic(durable=True):
        scope = ensure_bank(user, project_key, project_name)
        _switch(user=user, scope=scope, enabled=enabled, source=source)
    return scope


def bank_switch(
    *, user: User, scope: MemoryScope, enabled: bool, source: str = ChangeSet.Source.PAGE
) -> MemoryScope:
    """Turn an existing bank on or off (the banks page); its files are never touched."""
    with transaction.atomic(durable=True):
        _switch(user=user, scope=scope, enabled=enabled, source=source)
    return scope


MAX_PROJECT_KEY = 128
MAX_PROJECT_NAME = 200


def _clean_identity(project_key: str, project_name: str) -> tuple[str, str]:
    key, name = project_key.strip(), project_name.strip()
    _check_identity(key, name)
    return key, name


def _check_identity(key: str, name: str) -> None:
    """A bank's key and name: one plain line each (the page, the API and tools)."""
    _check_key(key)
    _check_name(name)


def _plain_line(value: str) -> None:
    if value != value.strip() or not value.isprintable():
        raise ChangeRefused(gettext("The project key and name must be plain one-line text."))


def _check_key(key: str) -> None:
    _plain_line(key)
    if not key:
        raise ChangeRefused(gettext("Give the project key the agent sends for this project."))
    if len(key) > MAX_PROJECT_KEY:
        raise ChangeRefused(
            gettext("The project key is longer than %(max)d characters.") % {"max": MAX_PROJECT_KEY}
        )
    _refuse_secret("The project key", key)


def _check_name(name: str) -> None:
    _plain_line(name)
    if len(name) > MAX_PROJECT_NAME:
        raise ChangeRefused(
            gettext("The name is longer than %(max)d characters.") % {"max": MAX_PROJECT_NAME}
        )
    if name:
        _refuse_secret("The project name", name)


def _key_taken(user: User, key: str, *, other_than: int | None = None) -> bool:
    banks = MemoryScope.objects.filter(kind=MemoryScope.Kind.PROJECT, owner=user, project_key=key)
    if other_than is not None:
        banks = banks.exclude(pk=other_than)
    return banks.exists()


def _taken_message(key: str) -> str:
    return gettext("You already have a bank for the project key %(key)s.") % {"key": key}


def bank_create(
    *, user: User, project_key: str, project_name: str = "", enabled: bool = True
) -> MemoryScope:
    """A new, empty bank for a project identity; an existing one is never taken over."""
    key, name = project_key.strip(), project_name.strip()  # ensure_bank checks them
    try:
        with transaction.atomic(durable=True):
            memory_lock(user.pk)  # a parallel create of the same key waits, then is refused
            if _key_taken(user, key):
                raise ChangeRefused(_taken_message(key))
            scope = ensure_bank(user, key, name)
            if not enabled:
                _switch(user=user, scope=scope, enabled=False, source=ChangeSet.Source.PAGE)
    except IntegrityError as error:  # the same key created by a concurrent request
        raise ChangeRefused(_taken_message(key)) from error
    return scope


def bank_edit(
    *, user: User, scope: MemoryScope, project_key: str, project_name: str
) -> MemoryScope:
    """Rename a bank or point it at another project identity (e.g. after a move)."""
    key, name = _clean_identity(project_key, project_name)
    try:
        with transaction.atomic(durable=True):
            if _key_taken(user, key, other_than=scope.pk):
                raise ChangeRefused(_taken_message(key))
            MemoryScope.objects.filter(pk=scope.pk, owner=user).update(
                project_key=key, project_name=name
            )
    except IntegrityError as error:
        raise ChangeRefused(_taken_message(key)) from error
    scope.project_key, scope.project_name = key, name
    return scope


def bank_delete(*, user: User, scope: MemoryScope) -> None:
    """Delete a bank with its files and their history; this cannot be undone."""
    if scope.kind != MemoryScope.Kind.PROJECT or scope.owner_id != user.pk:
        raise ChangeRefused(gettext("Only your own project banks can be deleted here."))
    with transaction.atomic(durable=True):
        MemoryScope.objects.filter(pk=scope.pk, owner=user).delete()


def channel_folder_name(binding: MessagingBinding, chat_key: str) -> str:
    """`<bridge>-<digest>`, and for a later external chat `-<digest of the chat>` too."""
    name = f"{binding.bridge}-{hashlib.sha256(binding.external_id.encode()).hexdigest()[:8]}"
    if chat_key:
        name += f"-{hashlib.sha256(chat_key.encode()).hexdigest()[:8]}"
    return name


def scope_folder(scope: MemoryScope) -> str:
    """Where the scope's files appear in the person's Files tree."""
    if scope.kind == MemoryScope.Kind.USER:
        return "Memory"
    if scope.kind == MemoryScope.Kind.AGENT and scope.agent:
        return f"Memory/agents/{scope.agent.slug}"
    if scope.kind == MemoryScope.Kind.CHANNEL and scope.binding:
        return f"Memory/channels/{channel_folder_name(scope.binding, scope.chat_key)}"
    return f"Projects/{scope.project_name or scope.project_key[:12]}"


def index_path(scope: MemoryScope) -> str:
    return BANK_INDEX_PATH if scope.kind == MemoryScope.Kind.PROJECT else INDEX_PATH
