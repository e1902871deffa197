"""Learned skill rules kept before M21 become the notes they now live in (Memory/skills/),
so they are exported, restored and undone like every other rule."""

from __future__ import annotations

import hashlib
from typing import Any

from django.db import migrations

from addons.core.skill_rules import render_rules, rules_path

HOST_SKILLS = "_host"


def rules_to_notes(apps: Any, schema_editor: Any) -> None:
    skill_rule = apps.get_model("addons", "SkillRule")
    scope_model = apps.get_model("memory_addon", "MemoryScope")
    file_model = apps.get_model("memory_addon", "MemoryFile")
    for rule in skill_rule.objects.exclude(text=""):
        scope, _ = scope_model.objects.get_or_create(kind="user", owner_id=rule.user_id)
        addon_id = "" if rule.addon_id == HOST_SKILLS else rule.addon_id
        path = rules_path(addon_id, rule.skill)
        if file_model.objects.filter(scope=scope, path=path).exists():
            continue
        lines = [line.strip() for line in rule.text.split("\n") if line.strip()]
        content = render_rules(f"{rule.addon_id} · {rule.skill}", lines)
        file_model.objects.create(
            scope=scope,
            path=path,
            content=content,
            sha256=hashlib.sha256(content.encode("utf-8")).hexdigest(),
            size=len(content.encode("utf-8")),
        )


class Migration(migrations.Migration):
    dependencies = [
        ("memory_addon", "0007_scope_per_external_chat"),
        ("addons", "0003_hostskill_skilltag_skilluse"),
    ]

    operations = [migrations.RunPython(rules_to_notes, migrations.RunPython.noop)]
