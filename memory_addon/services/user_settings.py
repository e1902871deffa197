"""The memory add-on's own settings and switch, on top of the platform's sdk.userSettings."""

from __future__ import annotations

import json
import logging

from accounts.models import User
from addons.selectors import addon_setting_get, declared_setting
from addons.services import addon_user_set_enabled
from memory_addon.addons import LEARNING, MEMORY_ADDON, SAVE_MODE, SKILL_RULES, SaveMode

logger = logging.getLogger(__name__)


def save_mode_for(user: User) -> SaveMode:
    """The person's save mode; anything unreadable means 'ask'."""
    try:
        value = addon_setting_get(user=user, addon=MEMORY_ADDON, key=SAVE_MODE)
        return _save_mode_checked(value)
    except Exception:  # a broken row or a database hiccup must never widen saving
        logger.warning("save-mode of user %s unreadable; asking", user.pk, exc_info=True)
        return "ask"


def save_mode_stored(stored: str | None, *, user_pk: int) -> SaveMode:
    """The save mode from its stored JSON text, read along with another query (the policy);
    None when the person never chose one. Unreadable means 'ask', as in save_mode_for."""
    try:
        declared = declared_setting(MEMORY_ADDON, SAVE_MODE)
        return _save_mode_checked(declared.default if stored is None else json.loads(stored))
    except Exception:  # a broken row must never widen saving
        logger.warning("save-mode of user %s unreadable; asking", user_pk, exc_info=True)
        return "ask"


def _save_mode_checked(value: object) -> SaveMode:
    mode = declared_setting(MEMORY_ADDON, SAVE_MODE).check(value)
    return "auto" if mode == "auto" else "never" if mode == "never" else "ask"


def addon_set_enabled(*, user: User, addon: str, enabled: bool) -> None:
    """Turn an add-on on or off for a person; its files are never touched."""
    addon_user_set_enabled(user=user, addon_id=addon, enabled=enabled)


def learning_suggests_for(user: User) -> bool:
    """The person's learning switch (Suggest rules / Off); Off shows no rule card."""
    try:
        value = addon_setting_get(user=user, addon=MEMORY_ADDON, key=LEARNING)
        return bool(declared_setting(MEMORY_ADDON, LEARNING).check(value) != "off")
    except Exception:
        logger.warning("learning switch of user %s unreadable; off", user.pk, exc_info=True)
        return False


def skill_rules_allowed_for(user: User) -> bool:
    """The person's own "may create skills and save learned rules in them" (default on)."""
    try:
        value = addon_setting_get(user=user, addon=MEMORY_ADDON, key=SKILL_RULES)
        return bool(declared_setting(MEMORY_ADDON, SKILL_RULES).check(value))
    except Exception:  # unreadable: the narrower choice, as for the save mode
        logger.warning("skill-rules of user %s unreadable; off", user.pk, exc_info=True)
        return False
