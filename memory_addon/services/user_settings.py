"""Per-user add-on settings behind sdk.userSettings, validated against the manifest."""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction

from accounts.models import User
from memory_addon.addons import MANIFESTS, MEMORY_ADDON, SAVE_MODE, DeclaredSetting
from memory_addon.errors import ChangeRefused, MemoryRefusal
from memory_addon.models import AddonInstallation, AddonSetting

logger = logging.getLogger(__name__)


class UnknownSetting(MemoryRefusal):
    status = 404


def declared_setting(addon: str, key: str) -> DeclaredSetting:
    manifest = MANIFESTS.get(addon)
    setting = manifest.setting(key) if manifest else None
    if setting is None:
        raise UnknownSetting(f"The add-on {addon!r} declares no setting {key!r}.")
    return setting


def addon_setting_get(*, user: User, addon: str, key: str) -> Any:
    declared = declared_setting(addon, key)
    row = AddonSetting.objects.filter(user=user, addon=addon, key=key).first()
    return declared.default if row is None else row.value


def addon_setting_put(*, user: User, addon: str, key: str, value: Any) -> Any:
    declared = declared_setting(addon, key)
    try:
        clean = declared.validate(value)
    except ValueError as error:
        raise ChangeRefused(str(error)) from error
    with transaction.atomic(durable=True):
        AddonSetting.objects.update_or_create(
            user=user, addon=addon, key=key, defaults={"value": clean}
        )
    return clean


def save_mode_for(user: User) -> str:
    """The person's save mode; anything unreadable means 'ask'."""
    try:
        value = addon_setting_get(user=user, addon=MEMORY_ADDON, key=SAVE_MODE)
        return declared_setting(MEMORY_ADDON, SAVE_MODE).validate(value)
    except Exception:  # a broken row or a database hiccup must never widen saving
        logger.warning("save-mode of user %s unreadable; asking", user.pk, exc_info=True)
        return "ask"


def addon_enabled(*, user: User, addon: str) -> bool:
    row = AddonInstallation.objects.filter(user=user, addon=addon).first()
    return True if row is None else row.enabled


def addon_set_enabled(*, user: User, addon: str, enabled: bool) -> None:
    """Turn an add-on on or off for a person; its files are never touched."""
    if addon not in MANIFESTS:
        raise UnknownSetting(f"There is no add-on {addon!r}.")
    with transaction.atomic(durable=True):
        AddonInstallation.objects.update_or_create(
            user=user, addon=addon, defaults={"enabled": enabled}
        )
