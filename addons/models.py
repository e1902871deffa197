"""Installed add-ons, their files, skill rules, and people's settings and switches (H5)."""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class InstalledAddon(models.Model):
    """An add-on installed on this server. Built-in add-ons need no row until changed."""

    class Source(models.TextChoices):
        BUILTIN = "builtin", _("Comes with the host")
        UPLOAD = "upload", _("Uploaded package")
        ENTRY_POINT = "entry_point", _("Installed Python distribution")

    addon_id = models.CharField(max_length=40, unique=True)
    source = models.CharField(max_length=20, choices=Source.choices)
    entry_point = models.CharField(max_length=200, blank=True)
    manifest = models.JSONField()
    enabled = models.BooleanField(default=False)
    # Installed by `memory-host addon dev`: reinstalled on every edit of the author's folder.
    dev = models.BooleanField(default=False)
    installed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    installed_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering: ClassVar = ["addon_id"]

    def __str__(self) -> str:
        return f"{self.addon_id} ({'on' if self.enabled else 'off'})"


class AddonFile(models.Model):
    """One file of an installed package, kept in the database (no folder to escape from)."""

    addon = models.ForeignKey(InstalledAddon, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(max_length=200)
    content = models.BinaryField()
    size = models.PositiveIntegerField()

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["addon", "path"], name="unique_addon_file"),
        ]

    def __str__(self) -> str:
        return f"{self.addon.addon_id}/{self.path}"


class SkillRule(models.Model):
    """The learned rules of one skill for one person: plain lines they can read and edit."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="skill_rules"
    )
    addon_id = models.CharField(max_length=40)
    skill = models.CharField(max_length=40)
    text = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["user", "addon_id", "skill"], name="unique_skill_rule"),
        ]

    def __str__(self) -> str:
        return f"{self.addon_id}/{self.skill}"


class AddonSetting(models.Model):
    """A per-user value of a setting an add-on declared (read/written via sdk.userSettings)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="addon_settings"
    )
    addon = models.CharField(max_length=80)
    key = models.CharField(max_length=80)
    value = models.JSONField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "memory_addon_addonsetting"  # made by the memory add-on; kept on the move
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["user", "addon", "key"], name="unique_addon_setting"),
        ]

    def __str__(self) -> str:
        return f"{self.addon}.{self.key}"


class AddonInstallation(models.Model):
    """Whether a person runs an add-on. No row means the built-in default (on)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="addon_installations"
    )
    addon = models.CharField(max_length=80)
    enabled = models.BooleanField(default=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "memory_addon_addoninstallation"
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["user", "addon"], name="unique_addon_installation"),
        ]

    def __str__(self) -> str:
        return f"{self.addon} ({'on' if self.enabled else 'off'})"


# The add-on id under which host-made skills keep their tags, rules and statistics. A
# manifest id never starts with "_", so no add-on can take it.
HOST_SKILLS = "_host"


class HostSkill(models.Model):
    """A skill the host made for one person (M21), carried in turns like add-on skills."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="host_skills"
    )
    name = models.CharField(max_length=40)  # a manifest-style key: python, c-sharp …
    title = models.CharField(max_length=80)
    instructions = models.TextField(blank=True)
    created_by_assistant = models.BooleanField(default=False)
    # Until the person opens the skill's page, it carries the "NEW" badge.
    opened_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering: ClassVar = ["name"]
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["owner", "name"], name="unique_host_skill_name"),
        ]

    def __str__(self) -> str:
        return self.title

    @property
    def is_new(self) -> bool:
        return self.created_by_assistant and self.opened_at is None


class SkillTag(models.Model):
    """A topic a person gave a skill (an add-on's or a host-made one); routes rules to it."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    addon_id = models.CharField(max_length=40)
    skill = models.CharField(max_length=40)
    topic = models.CharField(max_length=40)

    class Meta:
        ordering: ClassVar = ["topic"]
        constraints: ClassVar = [
            models.UniqueConstraint(
                fields=["user", "addon_id", "skill", "topic"], name="unique_skill_tag"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.addon_id}/{self.skill}: {self.topic}"


class SkillUse(models.Model):
    """How often a skill went along in a person's turns, and when last (M21 statistics)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    addon_id = models.CharField(max_length=40)
    skill = models.CharField(max_length=40)
    sent_count = models.PositiveIntegerField(default=0)
    last_sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["user", "addon_id", "skill"], name="unique_skill_use"),
        ]

    def __str__(self) -> str:
        return f"{self.addon_id}/{self.skill}: {self.sent_count}"


class AddonLogEntry(models.Model):
    """What happened to an add-on on this server, for its administrators' log view."""

    class Action(models.TextChoices):
        INSTALLED = "installed", "Installed"
        UPDATED = "updated", "Updated"
        REFUSED = "refused", "Install refused"
        SWITCHED = "switched", "Switched on or off"
        REMOVED = "removed", "Removed"

    addon_id = models.CharField(max_length=200, blank=True)  # blank: the package had no id
    action = models.CharField(max_length=20, choices=Action.choices)
    detail = models.TextField()
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering: ClassVar = ["-created_at", "-pk"]
        indexes: ClassVar = [models.Index(fields=["addon_id", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.addon_id or '?'} {self.action}"
