"""Add-ons that come with the host. Each registers itself from its app's AppConfig.ready(),
so the add-on platform never imports the apps built on it."""

from __future__ import annotations

from dataclasses import dataclass

from addons.core.manifest import Manifest


@dataclass(frozen=True)
class BuiltinAddon:
    manifest: Manifest
    # The URL name of the add-on's own page, shown instead of the library's detail page.
    page: str
    # Its skills only make sense in a turn whose memory block may be read.
    needs_memory: bool = False


BUILTINS: dict[str, BuiltinAddon] = {}


def builtin_addon_register(addon: BuiltinAddon) -> None:
    BUILTINS[addon.manifest.id] = addon


def builtin_manifest(addon_id: str) -> Manifest | None:
    builtin = BUILTINS.get(addon_id)
    return builtin.manifest if builtin else None
