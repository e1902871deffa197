"""Reads of the add-on library: what is installed, what is active for a person, what is on offer."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points

from accounts.models import User
from addons.core.manifest import Manifest, ManifestError, manifest_parse
from addons.core.package import package_of_entry_point
from addons.models import InstalledAddon, SkillRule
from memory_addon.addons import BUILTIN_MANIFESTS
from memory_addon.models import AddonInstallation

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
    builtin = BUILTIN_MANIFESTS.get(row.addon_id)
    try:
        manifest = builtin or manifest_parse(row.manifest)
    except ManifestError:  # stored by an older host: shown as broken, never run
        logger.warning("Installed add-on %s has an unreadable manifest", row.addon_id)
        return None
    return AddonState(manifest, row.source, row.enabled, row)


def installed_addons() -> list[AddonState]:
    """Every installed add-on, built-in ones first; one query."""
    rows = {row.addon_id: row for row in InstalledAddon.objects.all()}
    states = []
    for addon_id, manifest in BUILTIN_MANIFESTS.items():
        row = rows.pop(addon_id, None)
        # A built-in add-on with no row is on: it has not been switched off on this server.
        states.append(
            AddonState(manifest, InstalledAddon.Source.BUILTIN, row.enabled if row else True, row)
        )
    states += [state for row in rows.values() if (state := _state(row))]
    return states


def installed_addon(addon_id: str) -> AddonState | None:
    if addon_id in BUILTIN_MANIFESTS:
        row = InstalledAddon.objects.filter(addon_id=addon_id).first()
        return AddonState(
            BUILTIN_MANIFESTS[addon_id],
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


def active_addons(user: User) -> list[AddonState]:
    """The add-ons whose skills, context files and pages this person's turns may use."""
    off = switched_off_by(user)
    return [state for state in installed_addons() if user_enabled(state, off)]


@dataclass(frozen=True)
class Offered:
    name: str  # the entry point's name
    distribution: str
    manifest: Manifest | None
    problem: str = ""


def entry_point_find(name: str) -> EntryPoint | None:
    return next((ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == name), None)


def offered_addons(installed: set[str]) -> list[Offered]:
    """Add-ons that installed Python distributions offer and that are not installed yet."""
    offered = []
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda item: item.name):
        distribution = ep.dist.name if ep.dist else ""
        try:
            package = package_of_entry_point(ep)
        except Exception as error:  # a broken distribution is listed with its reason
            offered.append(Offered(ep.name, distribution, None, str(error)[:300]))
            continue
        if package.manifest.id not in installed:
            offered.append(Offered(ep.name, distribution, package.manifest))
    return offered


def skill_rules(user: User, addon_id: str) -> dict[str, str]:
    return dict(SkillRule.objects.filter(user=user, addon_id=addon_id).values_list("skill", "text"))
