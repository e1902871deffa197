"""What the add-on pages show about one add-on: manifest, permissions, skills, settings kit."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext

from accounts.models import User
from addons.core.manifest import PERMISSIONS, SettingDecl
from addons.selectors import (
    AddonState,
    addon_settings_values,
    skill_rules,
    switched_off_by,
    user_enabled,
)


@dataclass(frozen=True)
class SettingRow:
    declared: SettingDecl
    value: Any
    dom_id: str

    @property
    def value_json(self) -> str:
        return json.dumps(self.value)

    def choice_rows(self) -> list[dict[str, Any]]:
        return [
            {
                "choice": choice,
                "json": json.dumps(choice.value),
                "checked": choice.value == self.value,
                "default": choice.value == self.declared.default,
                "dom_id": f"{self.dom_id}-{number}",
            }
            for number, choice in enumerate(self.declared.choices)
        ]


def setting_rows(user: User, state: AddonState) -> list[SettingRow]:
    values = addon_settings_values(user=user, addon=state.id)
    return [
        SettingRow(declared, values[declared.key], f"setting-{state.id}-{declared.key}")
        for declared in state.manifest.settings
    ]


def addon_details(user: User, state: AddonState) -> dict[str, Any]:
    """What the add-on page and the memory page both show: manifest, skills, settings."""
    rules = skill_rules(user, state.id)
    return {
        "state": state,
        "manifest": state.manifest,
        "manifest_json": json.dumps(state.manifest.as_json(), indent=2, ensure_ascii=False),
        "permissions": [(p, gettext(PERMISSIONS[p])) for p in state.manifest.permissions],
        "skills": [
            (skill, text, len(text.split("\n")) if text else 0)
            for skill in state.manifest.skills
            for text in [rules.get(skill.name, "")]
        ],
        "settings_rows": setting_rows(user, state),
        "enabled_for_me": user_enabled(state, switched_off_by(user)),
    }
