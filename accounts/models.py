from __future__ import annotations

import uuid
from collections.abc import Collection
from datetime import datetime
from typing import ClassVar

from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models.functions import Lower
from django.utils.translation import gettext_lazy

from accounts import crypto
from host.core.secret_guard import find_secret
from host.secret_text import secret_refusal
from host.stored_secrets import stored_secrets


def validate_no_secret(value: str, *, known: Collection[str] = ()) -> None:
    """Text every model reads (organization rules, agent instructions) holds no secret,
    neither one by its shape nor one the host keeps for the people who read it (`known`)."""
    finding = find_secret(value, known=known)
    if finding:
        raise ValidationError(secret_refusal(finding))


class EstimateComplexity(models.TextChoices):
    """M20: whether a triage card may come before an eligible turn."""

    OFF = "off", gettext_lazy("Off")
    AUTOMATIC = "automatic", gettext_lazy("Automatic")
    ALWAYS = "always", gettext_lazy("Always")


class User(AbstractUser):
    """Our own user model from the first migration, so it can grow without a data move."""

    # "" until the person chooses: the organization's value applies, else Off.
    estimate_complexity = models.CharField(
        max_length=16, choices=EstimateComplexity.choices, blank=True, default=""
    )

    class Meta(AbstractUser.Meta):
        swappable = "AUTH_USER_MODEL"


class Organization(models.Model):
    class MemoryMode(models.TextChoices):
        ON = "on", gettext_lazy("On")
        READ_ONLY = "read_only", gettext_lazy("Read-only")
        OFF = "off", gettext_lazy("Off")

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=80, unique=True)
    memory_mode = models.CharField(max_length=16, choices=MemoryMode.choices, default=MemoryMode.ON)
    learning_enabled = models.BooleanField(default=True)
    # M21: members' rules may go to skills (and the host may make skills for them).
    skills_enabled = models.BooleanField(default=True)
    budget_cap_tokens = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Upper bound for the memory block of one turn, in estimated tokens.",
    )
    reference_files_enabled = models.BooleanField(default=True)
    # M20: "" leaves it to each member; locked makes the value the members' own.
    estimate_complexity = models.CharField(
        max_length=16, choices=EstimateComplexity.choices, blank=True, default=""
    )
    estimate_complexity_locked = models.BooleanField(default=False)
    rules = models.TextField(
        blank=True, help_text="Organization rules in Markdown; read-only for members."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    members: models.ManyToManyField[User, Membership] = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="organizations"
    )

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        # The rules go first into every member's prompt.
        members = list(self.members.values_list("pk", flat=True)) if self.pk else []
        known = [secret for pk in members for secret in stored_secrets(pk)]
        try:
            validate_no_secret(self.rules, known=known)
        except ValidationError as error:
            raise ValidationError({"rules": error}) from error


class Membership(models.Model):
    class Role(models.TextChoices):
        MEMBER = "member", gettext_lazy("Member")
        ADMIN = "admin", gettext_lazy("Admin")

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    joined_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["organization", "user"], name="unique_membership"),
            # One organization per user for now: its policy must be unambiguous.
            models.UniqueConstraint(fields=["user"], name="one_organization_per_user"),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.organization} ({self.role})"


class SiteSettings(models.Model):
    """Settings an admin changes at run time; a single row."""

    signup_enabled = models.BooleanField(default=True)

    class Meta:
        verbose_name = "site settings"
        verbose_name_plural = "site settings"

    def __str__(self) -> str:
        return "Site settings"


class Agent(models.Model):
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="agents"
    )
    name = models.CharField(max_length=120)
    slug = models.SlugField(max_length=80)
    instructions = models.TextField(blank=True)
    memory_allowed = models.BooleanField(
        default=False, help_text="The agent's chats read memory only when this is on."
    )
    may_propose = models.BooleanField(
        default=False, help_text="The agent may propose memory changes for you to confirm."
    )
    # M20: off means no triage card before this agent's turns.
    planning = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["owner", "slug"], name="unique_agent_slug_per_owner"),
        ]
        ordering: ClassVar = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        known = stored_secrets(self.owner_id) if self.owner_id else ()
        try:
            validate_no_secret(self.instructions, known=known)
        except ValidationError as error:
            raise ValidationError({"instructions": error}) from error


class MessagingBinding(models.Model):
    """One external conversation (a Telegram chat, a Slack channel …) tied to a user.

    Its webhook (bridges app) is verified with the signing secret, stored encrypted. A
    rotated secret keeps the previous one valid until `previous_secret_expires_at`.
    A deleted binding keeps its row (with `deleted_at`) so its conversation notes stay
    until the person deletes them.
    """

    class Kind(models.TextChoices):
        STANDARD = "standard", gettext_lazy("Standard Webhooks")
        TELEGRAM = "telegram", gettext_lazy("Telegram")
        SLACK = "slack", gettext_lazy("Slack")

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="messaging_bindings"
    )
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    bridge = models.CharField(
        max_length=60, choices=Kind.choices, default=Kind.STANDARD, help_text="Bridge kind."
    )
    external_id = models.CharField(max_length=255)
    title = models.CharField(max_length=200, blank=True)
    callback_url = models.URLField(blank=True)
    agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    ai_profile = models.ForeignKey(
        "AIProfile", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    enabled = models.BooleanField(default=True)
    webhook_secret_encrypted = models.TextField(editable=False)
    # Slack signs its requests with the app's own signing secret; the binding's
    # webhook secret (a `whsec_` one) then signs only the answers back, and rotates.
    platform_secret_encrypted = models.TextField(blank=True, editable=False)
    previous_secret_encrypted = models.TextField(blank=True, editable=False)
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(
                fields=["owner", "bridge", "external_id"], name="unique_binding_per_conversation"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.bridge}:{self.title or self.external_id}"

    @property
    def webhook_secret(self) -> str:
        return crypto.decrypt(self.webhook_secret_encrypted)

    @webhook_secret.setter
    def webhook_secret(self, value: str) -> None:
        self.webhook_secret_encrypted = crypto.encrypt(value)

    @property
    def platform_secret(self) -> str:
        return (
            crypto.decrypt(self.platform_secret_encrypted) if self.platform_secret_encrypted else ""
        )

    @platform_secret.setter
    def platform_secret(self, value: str) -> None:
        self.platform_secret_encrypted = crypto.encrypt(value)

    def inbound_secrets(self, now: datetime) -> list[str]:
        """What the platform's requests are signed with."""
        return [self.platform_secret] if self.platform_secret_encrypted else self.valid_secrets(now)

    def valid_secrets(self, now: datetime) -> list[str]:
        """The current secret, and the previous one while its grace period lasts."""
        found = [self.webhook_secret]
        expires = self.previous_secret_expires_at
        if self.previous_secret_encrypted and expires is not None and expires > now:
            found.append(crypto.decrypt(self.previous_secret_encrypted))
        return found


class AIProfile(models.Model):
    """An OpenAI-compatible server and model the user's chats or collections use."""

    class Role(models.TextChoices):
        TEXT = "text", gettext_lazy("Text")
        CODING = "coding", gettext_lazy("Coding")
        EMBEDDING = "embedding", gettext_lazy("Embedding")

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="ai_profiles"
    )
    name = models.CharField(max_length=120)
    base_url = models.URLField(help_text="For example http://127.0.0.1:8080/v1")
    model = models.CharField(max_length=200)
    api_key_encrypted = models.TextField(blank=True, editable=False)
    context_window = models.PositiveIntegerField(
        default=8192, validators=[MinValueValidator(512), MaxValueValidator(10_000_000)]
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.TEXT)
    is_default = models.BooleanField(default=False)
    supports_tools = models.BooleanField(
        default=True,
        help_text="The model can call functions (tools). Without it, chats send the memory "
        "block only and cannot propose notes.",
    )
    strict_tools = models.BooleanField(
        default=False,
        help_text="The model supports strict tool schemas (OpenAI's strict mode): every field "
        "is sent, the optional ones as null.",
    )
    runs_locally = models.BooleanField(
        default=False,
        help_text="The model runs on this machine: what the host sends it is not masked. "
        "Leave off for any outside service.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(
                "owner",
                "role",
                condition=models.Q(is_default=True),
                name="one_default_profile_per_role",
            ),
            models.UniqueConstraint("owner", Lower("name"), name="unique_profile_name_per_owner"),
        ]
        ordering: ClassVar = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.model})"

    def clean(self) -> None:
        from host.outbound import OutboundRefused, check_outbound_url

        try:
            check_outbound_url(self.base_url, unresolvable_ok=True)
        except OutboundRefused as error:
            raise ValidationError({"base_url": str(error)}) from error

    @property
    def has_api_key(self) -> bool:
        return bool(self.api_key_encrypted)

    @property
    def api_key(self) -> str:
        return crypto.decrypt(self.api_key_encrypted) if self.api_key_encrypted else ""

    @api_key.setter
    def api_key(self, value: str) -> None:
        self.api_key_encrypted = crypto.encrypt(value) if value else ""


class ApiToken(models.Model):
    """A personal API token; only its hash is stored, the token is shown once."""

    class Scope(models.TextChoices):
        READ_WRITE = "read_write", gettext_lazy("Read and write")
        READ_ONLY = "read_only", gettext_lazy("Read only")
        BANK_ONLY = "bank_only", gettext_lazy("Project banks only")

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=12)
    token_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    scope = models.CharField(max_length=16, choices=Scope.choices, default=Scope.READ_WRITE)
    expires_at = models.DateTimeField(
        null=True, blank=True, help_text="After this moment the token no longer works."
    )
    # A coding agent (Claude Code, Cursor …) that loads CLAUDE.md or AGENTS.md itself
    # would otherwise get the approved copies a second time in the turn context.
    reads_own_rule_files = models.BooleanField(
        default=False,
        help_text="The client reads its own rule files: its turn context leaves reference "
        "files out.",
    )

    class Meta:
        ordering: ClassVar = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"
