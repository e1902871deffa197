"""The memory add-on's own settings and switch, on top of the platform's sdk.userSettings."""

from __future__ import annotations

import logging

from accounts.models import User
from addons.selectors import addon_setting_get, declared_setting
from addons.services import addon_user_set_enabled
from memory_addon.addons import MEMORY_ADDON, SAVE_MODE, SaveMode

logger = logging.getLogger(__name__)


def save_mode_for(user: User) -> SaveMode:
    """The person's save mode; anything unreadable means 'ask'."""
    try:
        value = addon_setting_get(user=user, addon=MEMORY_ADDON, key=SAVE_MODE)
        mode = declared_setting(MEMORY_ADDON, SAVE_MODE).check(value)
        return "auto" if mode == "auto" else "never" if mode == "never" else "ask"
    except Exception:  # a broken row or a database hiccup must never widen saving
        logger.warning("save-mode of user %s unreadable; asking", user.pk, exc_info=True)
        return "ask"


def addon_set_enabled(*, user: User, addon: str, enabled: bool) -> None:
    """Turn an add-on on or off for a person; its files are never touched."""
    addon_user_set_enabled(user=user, addon_id=addon, enabled=enabled)
