"""Per-user add-on settings behind sdk.userSettings, validated against the manifest."""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from pydantic import JsonValue

from accounts.models import User
from addons.core.manifest import SettingDecl
from addons.selectors import installed_addon, switched_off_by, user_enabled
from host.core.secret_guard import find_secret
from host.errors import ChangeRefused, MemoryRefusal, SecretRefused
from host.secret_text import secret_refusal
from memory_addon.addons import MEMORY_ADDON, SAVE_MODE, SaveMode
from memory_addon.models import AddonSetting

logger = logging.getLogger(__name__)


class UnknownSetting(MemoryRefusal):
    status = 404


def declared_setting(addon: str, key: str) -> SettingDecl:
    """The setting an installed add-on declares under this key (any add-on, H5)."""
    state = installed_addon(addon)
    if state is None:
        raise UnknownSetting(f"There is no installed add-on {addon!r}.")
    setting = state.manifest.setting(key)
    if setting is None:
        declared = ", ".join(s.key for s in state.manifest.settings) or "none"
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


def addon_setting_get(*, user: User, addon: str, key: str) -> Any:
    declared = declared_setting(addon, key)
    row = AddonSetting.objects.filter(user=user, addon=addon, key=key).first()
    return declared.default if row is None else row.value


def addon_setting_put(*, user: User, addon: str, key: str, value: Any) -> Any:
    declared = declared_setting(addon, key)
    try:
        clean = declared.check(value)
    except ValueError as error:
        raise ChangeRefused(str(error)) from error
    _refuse_secret_text(key, clean)
    with transaction.atomic(durable=True):
        AddonSetting.objects.update_or_create(
            user=user, addon=addon, key=key, defaults={"value": clean}
        )
    return clean


def _texts(value: JsonValue) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _texts(item)]
    if isinstance(value, list):
        return [text for item in value for text in _texts(item)]
    return []


def _refuse_secret_text(key: str, value: JsonValue) -> None:
    """Setting texts reach add-on prompts: no secret may be stored in one."""
    for text in _texts(value):
        finding = find_secret(text)
        if finding:
            raise SecretRefused(f"{key}: {secret_refusal(finding)}", kind=finding.kind)


def save_mode_for(user: User) -> SaveMode:
    """The person's save mode; anything unreadable means 'ask'."""
    try:
        value = addon_setting_get(user=user, addon=MEMORY_ADDON, key=SAVE_MODE)
        mode = declared_setting(MEMORY_ADDON, SAVE_MODE).check(value)
        return "auto" if mode == "auto" else "never" if mode == "never" else "ask"
    except Exception:  # a broken row or a database hiccup must never widen saving
        logger.warning("save-mode of user %s unreadable; asking", user.pk, exc_info=True)
        return "ask"


def addon_enabled(*, user: User, addon: str) -> bool:
    """On for this person (on for the server and not switched off by them)."""
    state = installed_addon(addon)
    return state is not None and user_enabled(state, switched_off_by(user))


def addon_set_enabled(*, user: User, addon: str, enabled: bool) -> None:
    """Turn an add-on on or off for a person; its files are never touched."""
    from addons.services import addon_user_set_enabled

    addon_user_set_enabled(user=user, addon_id=addon, enabled=enabled)
