"""Where a person's learned skill rules are stored.

The memory add-on keeps them as notes in the person's memory (one change set per write,
undo, audit, export) and registers its writer from its own ready(); the platform never
names it. Without a registered writer the rules go straight to SkillRule.
"""

from __future__ import annotations

from typing import Protocol

from accounts.models import User


class RulesWriter(Protocol):
    def __call__(
        self, *, user: User, addon_id: str, skill: str, title: str, rules: list[str], source: str
    ) -> None: ...


_writers: list[RulesWriter] = []


def rules_writer_register(writer: RulesWriter) -> None:
    _writers[:] = [writer]


def rules_writer() -> RulesWriter | None:
    return _writers[0] if _writers else None
