"""Learned skill rules follow their note (M21): every change of a ``skills/`` file of a
person's own memory updates the rules a turn sends with the skill, in the same
transaction, whichever path wrote it (rule card, Files page, REST, MCP, undo, restore)."""

from __future__ import annotations

from collections.abc import Sequence

from addons.core.skill_rules import (
    SKILLS_FOLDER,
    RulesRefused,
    check_rules,
    parse_rules,
    parse_title,
    skill_of_path,
)
from addons.models import HOST_SKILLS, HostSkill, SkillRule
from host.errors import ChangeRefused
from memory_addon.models import FileChange, MemoryScope


def skill_rules_follow(scope: MemoryScope, rows: Sequence[FileChange]) -> None:
    """Refuse a rules file over a limit (the whole change fails), else store its rules."""
    if scope.kind != MemoryScope.Kind.USER or scope.owner_id is None:
        return
    for row in rows:
        if not row.path.startswith(f"{SKILLS_FOLDER}/"):
            continue
        found = skill_of_path(row.path)
        if found is None:
            continue
        addon_id = found.addon_id or HOST_SKILLS
        owned = SkillRule.objects.filter(
            user_id=scope.owner_id, addon_id=addon_id, skill=found.skill
        )
        if row.after is None:
            owned.delete()
            continue
        rules = parse_rules(row.after)
        try:
            check_rules(rules)
        except RulesRefused as refusal:
            raise ChangeRefused(f"{row.path}: {refusal}") from None
        if not found.addon_id:
            # A restored or hand-written rules file brings its host-made skill back.
            HostSkill.objects.get_or_create(
                owner_id=scope.owner_id,
                name=found.skill,
                defaults={"title": parse_title(row.after) or found.skill},
            )
        SkillRule.objects.update_or_create(
            user_id=scope.owner_id,
            addon_id=addon_id,
            skill=found.skill,
            defaults={"text": "\n".join(rules)},
        )
