"""Reads of the add-on library: what is installed, what is active for a person, what is on offer."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from importlib.metadata import EntryPoint, entry_points

from django.contrib.postgres.expressions import ArraySubquery
from django.db.models import OuterRef
from django.db.models.functions import JSONObject
from django.utils.translation import gettext
from pydantic import JsonValue

from accounts.models import User
from addons.builtins import BUILTINS, builtin_manifest
from addons.core.manifest import Manifest, ManifestError, SettingDecl, manifest_parse
from addons.core.package import package_of_entry_point
from addons.errors import AddonNotFound, UnknownSetting
from addons.models import (
    HOST_SKILLS,
    AddonInstallation,
    AddonLogEntry,
    AddonSetting,
    HostSkill,
    InstalledAddon,
    SkillRule,
    SkillTag,
    SkillUse,
)

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "memory_host.addons"


@dataclass(frozen=True)
class AddonState:
    manifest: Manifest
    source: str
    enabled: bool  # on for the server
    row: InstalledAddon | None

    @property
    def id(self) -> str:
        return self.manifest.id

    @property
    def source_label(self) -> str:
        return str(InstalledAddon.Source(self.source).label)

    @property
    def builtin(self) -> bool:
        return self.source == InstalledAddon.Source.BUILTIN


def _state(row: InstalledAddon) -> AddonState | None:
    builtin = builtin_manifest(row.addon_id)
    try:
        manifest = builtin or manifest_parse(row.manifest)
    except ManifestError:  # stored by an older host: shown as broken, never run
        logger.warning("Installed add-on %s has an unreadable manifest", row.addon_id)
        return None
    return AddonState(manifest, row.source, row.enabled, row)


def installed_addons() -> list[AddonState]:
    """Every installed add-on, built-in ones first; one query."""
    return _states(InstalledAddon.objects.all())


def _states(installed: Iterable[InstalledAddon]) -> list[AddonState]:
    rows = {row.addon_id: row for row in installed}
    states = []
    for addon_id, builtin in BUILTINS.items():
        manifest = builtin.manifest
        row = rows.pop(addon_id, None)
        # A built-in add-on with no row is on: it has not been switched off on this server.
        states.append(
            AddonState(manifest, InstalledAddon.Source.BUILTIN, row.enabled if row else True, row)
        )
    states += [state for row in rows.values() if (state := _state(row))]
    return states


def installed_addon(addon_id: str) -> AddonState | None:
    if (builtin := builtin_manifest(addon_id)) is not None:
        row = InstalledAddon.objects.filter(addon_id=addon_id).first()
        return AddonState(
            builtin,
            InstalledAddon.Source.BUILTIN,
            row.enabled if row else True,
            row,
        )
    row = InstalledAddon.objects.filter(addon_id=addon_id).first()
    return _state(row) if row else None


def switched_off_by(user: User) -> set[str]:
    """Add-ons the person turned off for themselves."""
    return set(
        AddonInstallation.objects.filter(user=user, enabled=False).values_list("addon", flat=True)
    )


def user_enabled(state: AddonState, switched_off: set[str]) -> bool:
    """On for the person: on for the server and, where the manifest lets people choose, for them."""
    if not state.enabled:
        return False
    return not (state.manifest.user_toggle and state.id in switched_off)


def addon_enabled(*, user: User, addon: str) -> bool:
    """On for this person (on for the server and not switched off by them)."""
    state = installed_addon(addon)
    return state is not None and user_enabled(state, switched_off_by(user))


def declared_setting(addon: str, key: str) -> SettingDecl:
    """The setting an installed add-on declares under this key (any add-on, H5)."""
    # A built-in add-on is always installed and its manifest ships with the code: no row
    # to read (its on/off switch says nothing about what it declares).
    manifest = builtin_manifest(addon)
    if manifest is None:
        state = installed_addon(addon)
        if state is None:
            raise UnknownSetting(f"There is no installed add-on {addon!r}.")
        manifest = state.manifest
    setting = manifest.setting(key)
    if setting is None:
        declared = ", ".join(s.key for s in manifest.settings) or "none"
        raise UnknownSetting(
            f"The add-on {addon!r} declares no setting {key!r} (it declares: {declared})."
        )
    return setting


def addon_settings_values(*, user: User, addon: str) -> dict[str, JsonValue]:
    """Every declared setting of an add-on with the person's value or its default."""
    state = installed_addon(addon)
    if state is None:
        raise UnknownSetting(f"There is no installed add-on {addon!r}.")
    stored = dict(AddonSetting.objects.filter(user=user, addon=addon).values_list("key", "value"))
    values: dict[str, JsonValue] = {}
    for declared in state.manifest.settings:
        value = stored.get(declared.key, declared.default)
        try:
            values[declared.key] = declared.check(value)
        except ValueError:  # declared differently by a newer version: the default again
            values[declared.key] = declared.default
    return values


def addon_setting_get(*, user: User, addon: str, key: str) -> JsonValue:
    declared = declared_setting(addon, key)
    row = AddonSetting.objects.filter(user=user, addon=addon, key=key).first()
    return declared.default if row is None else row.value


@dataclass(frozen=True)
class HostSkillText:
    name: str
    title: str
    instructions: str


@dataclass(frozen=True)
class TurnAddons:
    """Everything a turn reads about add-ons for one person, fetched in one query."""

    installed: list[InstalledAddon]
    switched_off: set[str]
    rules: dict[tuple[str, str], str] = field(default_factory=dict)  # (add-on, skill) -> rules
    settings: dict[tuple[str, str], JsonValue] = field(
        default_factory=dict
    )  # (add-on, key) -> value
    host_skills: list[HostSkillText] = field(default_factory=list)

    def active(self) -> list[AddonState]:
        return [
            state for state in _states(self.installed) if user_enabled(state, self.switched_off)
        ]


_INSTALLED_FIELDS = ("addon_id", "source", "entry_point", "manifest", "enabled")


def turn_addon_columns() -> dict[str, ArraySubquery]:
    """Columns to add to a query on the User table (the person is its row): the installed
    add-ons, the person's switches, learned skill rules and add-on settings, each as an
    array, so a turn reads them with whatever else it reads about the person."""
    return {
        "addons_installed": ArraySubquery(
            InstalledAddon.objects.order_by()
            .annotate(j=JSONObject(pk="pk", **{name: name for name in _INSTALLED_FIELDS}))
            .values("j")
        ),
        "addons_off": ArraySubquery(
            AddonInstallation.objects.filter(user=OuterRef("pk"), enabled=False)
            .order_by()
            .values("addon")
        ),
        "addons_rules": ArraySubquery(
            SkillRule.objects.filter(user=OuterRef("pk"))
            .order_by()
            .annotate(j=JSONObject(addon="addon_id", skill="skill", text="text"))
            .values("j")
        ),
        "addons_settings": ArraySubquery(
            AddonSetting.objects.filter(user=OuterRef("pk"))
            .order_by()
            .annotate(j=JSONObject(addon="addon", key="key", value="value"))
            .values("j")
        ),
        "addons_host_skills": ArraySubquery(
            HostSkill.objects.filter(owner=OuterRef("pk"))
            .order_by("name")
            .annotate(j=JSONObject(name="name", title="title", instructions="instructions"))
            .values("j")
        ),
    }


def _column(row: Mapping[str, object], name: str) -> list[JsonValue]:
    value = row.get(name)
    return value if isinstance(value, list) else []


def _objects(row: Mapping[str, object], name: str) -> list[dict[str, JsonValue]]:
    return [item for item in _column(row, name) if isinstance(item, dict)]


def turn_addons_from(row: Mapping[str, object]) -> TurnAddons:
    """TurnAddons from a row that has the columns of `turn_addon_columns`."""
    installed = [
        InstalledAddon(pk=pk, **{name: item[name] for name in _INSTALLED_FIELDS})
        for item in _objects(row, "addons_installed")
        if isinstance(pk := item["pk"], int)
    ]
    return TurnAddons(
        installed=installed,
        switched_off={str(addon) for addon in _column(row, "addons_off")},
        rules={
            (str(r["addon"]), str(r["skill"])): str(r["text"])
            for r in _objects(row, "addons_rules")
        },
        settings={
            (str(r["addon"]), str(r["key"])): r["value"] for r in _objects(row, "addons_settings")
        },
        host_skills=[
            HostSkillText(str(r["name"]), str(r["title"]), str(r["instructions"]))
            for r in _objects(row, "addons_host_skills")
        ],
    )


def turn_addons(user: User) -> TurnAddons:
    """The person's add-on state for a turn: one query."""
    row = User.objects.filter(pk=user.pk).values(**turn_addon_columns()).first() or {}
    return turn_addons_from(row)


@dataclass(frozen=True)
class Offered:
    name: str  # the entry point's name
    distribution: str
    manifest: Manifest | None
    problem: str = ""
    installed_version: str = ""  # set when this add-on is installed and the version differs


def entry_point_find(name: str) -> EntryPoint | None:
    return next((ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == name), None)


def offered_addons(installed: Mapping[str, str]) -> list[Offered]:
    """Add-ons that installed Python distributions offer: not installed yet, or in another
    version than the installed one (an update). `installed` maps add-on ids to versions."""
    offered = []
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda item: item.name):
        distribution = ep.dist.name if ep.dist else ""
        try:
            package = package_of_entry_point(ep)
        except Exception as error:  # a broken distribution is listed with its reason
            offered.append(Offered(ep.name, distribution, None, str(error)[:300]))
            continue
        version = installed.get(package.manifest.id)
        if version is None:
            offered.append(Offered(ep.name, distribution, package.manifest))
        elif version != package.manifest.version:
            offered.append(Offered(ep.name, distribution, package.manifest, "", version))
    return offered


def skill_rules(user: User, addon_id: str) -> dict[str, str]:
    return dict(SkillRule.objects.filter(user=user, addon_id=addon_id).values_list("skill", "text"))


@dataclass(frozen=True)
class SkillView:
    """A skill as one person sees it: an active add-on's or one the host made for them."""

    addon_id: str  # HOST_SKILLS for a host-made skill
    name: str
    title: str
    description: str
    builtin_topics: tuple[str, ...]
    tags: tuple[str, ...]  # the person's own topics
    rules: tuple[str, ...]
    sent_count: int
    last_sent_at: datetime | None
    host_skill: HostSkill | None = None

    @property
    def key(self) -> str:
        return f"{self.addon_id}/{self.name}"

    @property
    def is_new(self) -> bool:
        return self.host_skill is not None and self.host_skill.is_new

    @property
    def rules_text(self) -> str:
        return "\n".join(self.rules)


def person_skills(user: User) -> list[SkillView]:
    """Every skill of the person's active add-ons and every skill the host made for them,
    with their tags, learned rules and statistics: five queries, however many there are."""
    tags: dict[tuple[str, str], list[str]] = {}
    for addon_id, skill, topic in SkillTag.objects.filter(user=user).values_list(
        "addon_id", "skill", "topic"
    ):
        tags.setdefault((addon_id, skill), []).append(topic)
    rules = {
        (addon_id, skill): tuple(line for line in text.split("\n") if line.strip())
        for addon_id, skill, text in SkillRule.objects.filter(user=user).values_list(
            "addon_id", "skill", "text"
        )
    }
    uses = {(row.addon_id, row.skill): row for row in SkillUse.objects.filter(user=user)}

    def view(
        addon_id: str,
        name: str,
        title: str,
        description: str,
        builtin_topics: tuple[str, ...],
        host_skill: HostSkill | None = None,
    ) -> SkillView:
        use = uses.get((addon_id, name))
        return SkillView(
            addon_id=addon_id,
            name=name,
            title=title,
            description=description,
            tags=tuple(tags.get((addon_id, name), ())),
            rules=rules.get((addon_id, name), ()),
            sent_count=use.sent_count if use else 0,
            last_sent_at=use.last_sent_at if use else None,
            builtin_topics=builtin_topics,
            host_skill=host_skill,
        )

    switched_off = switched_off_by(user)
    views = [
        view(
            state.id,
            s.name,
            # The built-in add-on's words are in the site's catalogue (addon_text).
            f"{gettext(state.manifest.name)} · {gettext(s.label)}",
            gettext(s.description),
            builtin_topics=s.topics,
        )
        for state in installed_addons()
        if user_enabled(state, switched_off)
        for s in state.manifest.skills
    ]
    views += [
        view(HOST_SKILLS, h.name, h.title, h.instructions, builtin_topics=(), host_skill=h)
        for h in HostSkill.objects.filter(owner=user)
    ]
    return views


def person_skill(user: User, addon_id: str, name: str) -> SkillView:
    """One skill the person may see; a foreign or missing one is not found (404)."""
    found = next(
        (s for s in person_skills(user) if s.addon_id == addon_id and s.name == name), None
    )
    if found is None:
        raise AddonNotFound(f"You have no skill {addon_id}/{name}.")
    return found


def addon_log(*, addon_id: str = "", limit: int = 200) -> list[AddonLogEntry]:
    """The newest log entries, of one add-on or of all; one query."""
    entries = AddonLogEntry.objects.select_related("user")
    if addon_id:
        entries = entries.filter(addon_id=addon_id)
    return list(entries[:limit])
