"""What installing a package over an installed add-on changes (an update in place).

Pure: no Django. The plan is shown before the update and sent along with a refusal, so
an administrator sees which files, settings and permissions change and whether the
package is older than what is installed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Literal

from addons.core.manifest import Manifest
from addons.core.package import Package

_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")

Direction = Literal["new", "upgrade", "same", "downgrade"]


def version_key(version: str) -> tuple[int, int, int, int, tuple[tuple[int, int | str], ...]]:
    """Semantic-version order: a pre-release sorts before its release; build data is ignored."""
    match = _VERSION.match(version)
    if match is None:  # the manifest schema only lets semantic versions in
        raise ValueError(f"version: {version!r} is not a semantic version")
    major, minor, patch, pre = match.groups()
    if pre is None:
        return int(major), int(minor), int(patch), 1, ()
    parts = tuple((0, int(part)) if part.isdigit() else (1, part) for part in pre.split("."))
    return int(major), int(minor), int(patch), 0, parts


@dataclass(frozen=True)
class UpdatePlan:
    addon_id: str
    name: str
    from_version: str | None  # None: not installed yet
    to_version: str
    direction: Direction
    added_files: tuple[str, ...] = ()
    changed_files: tuple[str, ...] = ()
    removed_files: tuple[str, ...] = ()
    added_settings: tuple[str, ...] = ()
    changed_settings: tuple[str, ...] = ()
    removed_settings: tuple[str, ...] = ()
    new_permissions: tuple[str, ...] = ()
    dropped_permissions: tuple[str, ...] = ()

    @property
    def changes_anything(self) -> bool:
        return bool(
            self.direction != "same"
            or self.added_files
            or self.changed_files
            or self.removed_files
            or self.added_settings
            or self.changed_settings
            or self.removed_settings
            or self.new_permissions
            or self.dropped_permissions
        )

    def as_json(self) -> dict[str, object]:
        return asdict(self)


def _direction(installed: str, offered: str) -> Direction:
    old, new = version_key(installed), version_key(offered)
    if new > old:
        return "upgrade"
    return "same" if new == old else "downgrade"


def update_plan(
    *, installed: Manifest | None, installed_files: Mapping[str, bytes], package: Package
) -> UpdatePlan:
    new = package.manifest
    if installed is None:
        return UpdatePlan(
            addon_id=new.id,
            name=new.name,
            from_version=None,
            to_version=new.version,
            direction="new",
            added_files=tuple(sorted(package.files)),
            added_settings=tuple(s.key for s in new.settings),
            new_permissions=tuple(new.permissions),
        )
    old_files, new_files = set(installed_files), set(package.files)
    old_settings = {s.key: s.model_dump(mode="json") for s in installed.settings}
    new_settings = {s.key: s.model_dump(mode="json") for s in new.settings}
    return UpdatePlan(
        addon_id=new.id,
        name=new.name,
        from_version=installed.version,
        to_version=new.version,
        direction=_direction(installed.version, new.version),
        added_files=tuple(sorted(new_files - old_files)),
        changed_files=tuple(
            sorted(p for p in old_files & new_files if installed_files[p] != package.files[p])
        ),
        removed_files=tuple(sorted(old_files - new_files)),
        added_settings=tuple(k for k in new_settings if k not in old_settings),
        changed_settings=tuple(
            k for k in new_settings if k in old_settings and old_settings[k] != new_settings[k]
        ),
        removed_settings=tuple(k for k in old_settings if k not in new_settings),
        new_permissions=tuple(p for p in new.permissions if p not in installed.permissions),
        dropped_permissions=tuple(p for p in installed.permissions if p not in new.permissions),
    )
