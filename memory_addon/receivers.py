"""Scopes made on the write paths that create people and agents (reads never create them).

A person's own scope is made with the person, however the account comes to be (sign-up,
the admin, createsuperuser, first start), and an agent's with the agent (its page, the
admin): a post_save receiver is the one hook all of them pass. After migrate, people and
agents from before this rule get theirs.
"""

from __future__ import annotations

from typing import Any

from django.apps import AppConfig

from accounts.models import Agent, User


def user_created(sender: type[User], instance: User, created: bool, **kwargs: Any) -> None:
    if created and not kwargs.get("raw"):  # fixtures load rows as they are
        from memory_addon.services.scopes import ensure_user_scope

        ensure_user_scope(instance)


def agent_created(sender: type[Agent], instance: Agent, created: bool, **kwargs: Any) -> None:
    if created and not kwargs.get("raw"):
        from memory_addon.services.scopes import ensure_agent_scope

        ensure_agent_scope(instance)


def scopes_after_migrate(sender: AppConfig, **kwargs: Any) -> None:
    from django.db import connections

    from memory_addon.models import MemoryScope
    from memory_addon.services.scopes import scopes_ensure_missing

    connection = connections[kwargs.get("using") or "default"]
    if MemoryScope._meta.db_table not in connection.introspection.table_names():
        return  # migrated back to before the scopes existed
    scopes_ensure_missing()
