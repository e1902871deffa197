from __future__ import annotations

from datetime import datetime
from typing import Literal

from ninja import Schema
from pydantic import Field, JsonValue


class UpdatePlanOut(Schema):
    addon_id: str
    name: str
    from_version: str | None = Field(description="The installed version; null when not installed.")
    to_version: str
    direction: Literal["new", "upgrade", "same", "downgrade"]
    added_files: list[str]
    changed_files: list[str]
    removed_files: list[str]
    added_settings: list[str]
    changed_settings: list[str]
    removed_settings: list[str]
    new_permissions: list[str] = Field(description="Updating needs consent to each of these.")
    dropped_permissions: list[str]


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
    dev: bool = Field(False, description="Installed from an author's folder in development.")
    manifest: dict[str, JsonValue]
    changes: UpdatePlanOut | None = Field(None, description="What an install or update changed.")


class UpdateIn(Schema):
    """How to treat an add-on of the same id that is already installed."""

    update: bool = Field(False, description="Replace the installed version in place.")
    consent: list[str] = Field(
        [], description="New permissions you agree to (each one the update adds)."
    )
    downgrade: bool = Field(False, description="Allow an older version over a newer one.")
    dev: bool = Field(
        False, description="Mark it as in development (`memory-host addon dev` sends this)."
    )


class EnabledIn(Schema):
    enabled: bool


class EntryPointNameIn(Schema):
    name: str = Field(max_length=200, examples=["tone-of-voice"])


class EntryPointIn(EntryPointNameIn, UpdateIn):
    pass


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
