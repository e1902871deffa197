from __future__ import annotations

from datetime import datetime

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


class SkillOut(Schema):
    addon: str = Field(description='The add-on, or "_host" for a skill the host made for you.')
    name: str
    title: str
    description: str
    topics: list[str] = Field(description="The add-on's own topics of the skill.")
    tags: list[str] = Field(description="Your topics: a rule on one of them goes to this skill.")
    rules: list[str]
    sent_count: int
    last_sent_at: datetime | None
    host_made: bool
    new: bool = Field(description='Made by the assistant and not opened yet ("NEW").')


class HostSkillIn(Schema):
    name: str = Field(max_length=40, examples=["python"])
    title: str = Field(max_length=80, examples=["Python"])
    instructions: str = Field("", max_length=4000)


class HostSkillEditIn(Schema):
    title: str = Field(max_length=80)
    instructions: str = Field("", max_length=4000)


class SkillTagsIn(Schema):
    topics: list[str] = Field(max_length=20, examples=[["python", "pytest"]])
