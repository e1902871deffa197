"""Writes of learned skill rules (M21): each is one change set of the rules note in the
person's own memory, so it is undone, audited and refused like any other memory write."""

from __future__ import annotations

from accounts.models import User
from addons.core.skill_rules import parse_rules, render_rules, rules_path
from addons.models import HOST_SKILLS
from host.errors import NothingToChange
from memory_addon.models import ChangeSet, MemoryFile
from memory_addon.services.changes import ABSENT, FileWrite, change_set_apply
from memory_addon.services.scopes import ensure_user_scope


def skill_note_path(addon_id: str, skill: str) -> str:
    return rules_path("" if addon_id == HOST_SKILLS else addon_id, skill)


def _write(
    *,
    user: User,
    path: str,
    current: MemoryFile | None,
    content: str | None,
    origin: str,
    source: str,
    summary: str,
    conversation_ref: str = "",
    message_ref: str = "",
) -> ChangeSet:
    scope = ensure_user_scope(user)
    return change_set_apply(
        user=user,
        scope=scope,
        writes=[FileWrite(path, content)],
        origin=origin,
        source=source,
        # The person typed or confirmed every rule; the note is theirs to shape.
        machine=False,
        base_hashes={path: current.sha256 if current else ABSENT},
        summary=summary,
        conversation_ref=conversation_ref,
        message_ref=message_ref,
    )


def _current(user: User, path: str) -> MemoryFile | None:
    return MemoryFile.objects.filter(scope__kind="user", scope__owner=user, path=path).first()


def skill_rules_replace(
    *, user: User, addon_id: str, skill: str, title: str, rules: list[str], source: str
) -> None:
    """The skill pages' editor: the whole list at once (an empty list deletes the note)."""
    path = skill_note_path(addon_id, skill)
    current = _current(user, path)
    if current is None and not rules:
        return
    try:
        _write(
            user=user,
            path=path,
            current=current,
            content=render_rules(title, rules) if rules else None,
            origin=ChangeSet.Origin.PERSON,
            source=source,
            summary=f"Learned rules of {title}",
        )
    except NothingToChange:
        return


def skill_rule_append(
    *,
    user: User,
    addon_id: str,
    skill: str,
    title: str,
    text: str,
    origin: str,
    source: str,
    conversation_ref: str = "",
    message_ref: str = "",
) -> ChangeSet:
    """One confirmed rule added to a skill's learned rules (a rule card, Remember as rule)."""
    path = skill_note_path(addon_id, skill)
    current = _current(user, path)
    rules = parse_rules(current.content) if current else []
    return _write(
        user=user,
        path=path,
        current=current,
        content=render_rules(title, [*rules, text]),
        origin=origin,
        source=source,
        summary=f"Rule for {title}: {text}",
        conversation_ref=conversation_ref,
        message_ref=message_ref,
    )
