from __future__ import annotations

from ninja import Schema
from pydantic import Field, JsonValue


class AddonOut(Schema):
    id: str
    name: str
    version: str
    author: str
    description: str
    source: str
    enabled_for_server: bool
    enabled_for_me: bool
    user_toggle: bool
    manifest: dict[str, JsonValue]


class EnabledIn(Schema):
    enabled: bool


class EntryPointIn(Schema):
    name: str = Field(max_length=200, examples=["tone-of-voice"])


class RemovalOut(Schema):
    addon_id: str
    deleted_package_files: int
    kept_settings: int
    kept_rules: int
    kept_note: str


class SkillRulesIn(Schema):
    text: str = Field(max_length=4000, examples=["Answer in British English."])


class SkillRulesOut(Schema):
    addon: str
    skill: str
    text: str


class SettingOut(Schema):
    addon: str
    key: str
    value: JsonValue


class SettingIn(Schema):
    value: JsonValue
