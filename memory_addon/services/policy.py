"""Organization policy, the person's add-on switch and the kill switch (M16), in one read."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from django.conf import settings
from django.db import connection
from django.db.models import Exists, OuterRef, QuerySet, Subquery

from accounts.models import Membership, User
from addons.models import AddonInstallation, AddonSetting, InstalledAddon
from addons.selectors import TurnAddons, turn_addon_columns, turn_addons_from
from host.compiled import CompiledQuery
from memory_addon.addons import MEMORY_ADDON, SAVE_MODE, SaveMode
from memory_addon.models import ReferenceFile
from memory_addon.services.user_settings import save_mode_stored

# An organization's memory mode (accounts.Organization.MemoryMode values).
MemoryMode = Literal["on", "read_only", "off"]


@dataclass(frozen=True)
class Policy:
    memory_mode: MemoryMode
    learning: bool
    budget_cap: int | None
    reference_files: bool
    rules: str
    organization_name: str
    addon_enabled: bool = True  # the person's own on/off of the Short memory add-on
    # The person's add-on state, when read with the policy (policy_for(with_addons=True)).
    addons: TurnAddons | None = None
    # Whether the person has reference files marked to send: a turn without any skips
    # their query (read in the same row, so it costs nothing).
    has_reference_files: bool = True
    # Whether the organization lets rules go to skills (M21); the person may still say no.
    skills: bool = True
    # The person's save mode (read in the same row: a save needs it with the policy).
    save_mode: SaveMode = "ask"


def kill_switch_on() -> bool:
    return bool(settings.MEMORY_AI_MEMORY == "off")


def _policy_query(user_pk: int, with_addons: bool) -> QuerySet[User, Any]:
    membership = Membership.objects.filter(user=OuterRef("pk"))
    return (
        User.objects.filter(pk=user_pk)
        .values(
            addon=Subquery(
                AddonInstallation.objects.filter(user=OuterRef("pk"), addon=MEMORY_ADDON).values(
                    "enabled"
                )[:1]
            ),
            has_reference_files=Exists(
                ReferenceFile.objects.filter(owner=OuterRef("pk"), send=True)
            ),
            server_off=Exists(InstalledAddon.objects.filter(addon_id=MEMORY_ADDON, enabled=False)),
            save_mode=Subquery(
                AddonSetting.objects.filter(
                    user=OuterRef("pk"), addon=MEMORY_ADDON, key=SAVE_MODE
                ).values("value")[:1]
            ),
            has_organization=Subquery(membership.values("organization_id")[:1]),
            memory_mode=Subquery(membership.values("organization__memory_mode")[:1]),
            learning=Subquery(membership.values("organization__learning_enabled")[:1]),
            budget_cap=Subquery(membership.values("organization__budget_cap_tokens")[:1]),
            reference_files=Subquery(
                membership.values("organization__reference_files_enabled")[:1]
            ),
            rules=Subquery(membership.values("organization__rules")[:1]),
            skills=Subquery(membership.values("organization__skills_enabled")[:1]),
            organization_name=Subquery(membership.values("organization__name")[:1]),
            **(turn_addon_columns() if with_addons else {}),
        )
        .order_by()[:1]
    )


_POLICY = CompiledQuery(lambda user_pk: _policy_query(user_pk, False), "user_pk")
_POLICY_WITH_ADDONS = CompiledQuery(lambda user_pk: _policy_query(user_pk, True), "user_pk")
_JSON_ARRAYS = ("addons_installed", "addons_rules", "addons_settings", "addons_host_skills")


def _policy_row(user_pk: int, with_addons: bool) -> dict[str, Any]:
    sql, params = (_POLICY_WITH_ADDONS if with_addons else _POLICY).sql(user_pk=user_pk)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        values = cursor.fetchone()
        names = [column.name for column in cursor.description or ()]
    if values is None:
        return {}
    row = dict(zip(names, values, strict=True))
    for name in _JSON_ARRAYS:  # jsonb items arrive as text, as for a JSONField
        if name in row:
            row[name] = [
                json.loads(item) if isinstance(item, str) else item for item in row[name] or []
            ]
    return row


def policy_for(user: User, *, with_addons: bool = False) -> Policy:
    """One query: the organization's policy fields and the add-on switch of the person.

    with_addons: the same query also reads the person's add-on state for a turn
    (installed add-ons, switches, skill rules, settings) for addon_context_build.
    """
    row: Mapping[str, Any] = _policy_row(user.pk, with_addons)
    # No row: the built-in default, on. An administrator may switch it off for everyone.
    addon_enabled = row.get("addon") is not False and not row.get("server_off")
    addons = turn_addons_from(row) if with_addons else None
    has_reference_files = bool(row.get("has_reference_files"))
    save_mode = save_mode_stored(row.get("save_mode"), user_pk=user.pk)
    if not row.get("has_organization"):
        return Policy(
            "on",
            True,
            None,
            True,
            "",
            "",
            addon_enabled,
            addons,
            has_reference_files,
            save_mode=save_mode,
        )
    return Policy(
        memory_mode=row["memory_mode"],
        learning=row["learning"],
        budget_cap=row["budget_cap"],
        reference_files=row["reference_files"],
        rules=(row["rules"] or "").strip(),
        organization_name=row["organization_name"],
        addon_enabled=addon_enabled,
        addons=addons,
        has_reference_files=has_reference_files,
        skills=row["skills"],
        save_mode=save_mode,
    )
