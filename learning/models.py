"""Rule suggestions and daily limits (M13), clean-up jobs (M12)."""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.db import models
from django.db.models import Q


class RuleSuggestion(models.Model):
    """A lasting rule found in (or picked from) one of the person's messages.

    A detected suggestion exists at most once per message, so a message whose rule was
    postponed or rejected is never sent to detection again.
    """

    class Origin(models.TextChoices):
        DETECTED = "detected", "Detected"
        MANUAL = "manual", "Remember as rule"

    class State(models.TextChoices):
        DETECTING = "detecting", "Queued for checking"
        RUNNING = "running", "Being checked"
        NO_RULE = "no_rule", "No rule"
        DROPPED = "dropped", "Dropped"
        PENDING = "pending", "Waiting for you"
        POSTPONED = "postponed", "Not now"
        NEVER = "never", "Never"
        SAVED = "saved", "Saved"
        UNDONE = "undone", "Saved, then undone"

    class Target(models.TextChoices):
        USER = "user", "Your memory"
        AGENT = "agent", "Agent memory"
        CONVERSATION = "conversation", "Conversation memory"
        SKILL = "skill", "A skill's learned rules"
        NEW_SKILL = "new_skill", "A new skill"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="rule_suggestions"
    )
    conversation = models.ForeignKey(
        "chat.Conversation", on_delete=models.CASCADE, related_name="rule_suggestions"
    )
    user_message = models.ForeignKey("chat.Message", on_delete=models.CASCADE, related_name="+")
    # SET_NULL: a regenerated answer must not make the message count as never checked.
    answer = models.ForeignKey(
        "chat.Message", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    origin = models.CharField(max_length=16, choices=Origin.choices)
    state = models.CharField(max_length=16, choices=State.choices, db_index=True)
    text = models.CharField(max_length=300, blank=True)
    cue = models.CharField(max_length=60, blank=True)
    target = models.CharField(max_length=16, choices=Target.choices, default=Target.USER)
    agent = models.ForeignKey(
        "accounts.Agent", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # A skill target (M21): the add-on (addons.models.HOST_SKILLS for a host-made skill),
    # the skill's name and its title as the card shows it.
    skill_addon = models.CharField(max_length=40, blank=True)
    skill_name = models.CharField(max_length=40, blank=True)
    skill_title = models.CharField(max_length=80, blank=True)
    change_set = models.ForeignKey(
        "memory_addon.ChangeSet",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    reason = models.CharField(max_length=300, blank=True)
    ask_again_at = models.DateTimeField(null=True, blank=True)
    saved_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering: ClassVar = ["created_at", "id"]
        constraints: ClassVar = [
            models.UniqueConstraint(
                fields=["user_message"],
                condition=Q(origin="detected"),
                name="one_detection_per_message",
            ),
            models.UniqueConstraint(
                fields=["answer"],
                condition=Q(origin="detected"),
                name="one_rule_card_per_answer",
            ),
        ]

    def __str__(self) -> str:
        return f"Rule suggestion #{self.pk} ({self.state})"


class LearningDay(models.Model):
    """Detection calls and cards of one person on one day (limits 10 and 3)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    calls = models.PositiveIntegerField(default=0)
    cards = models.PositiveIntegerField(default=0)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["user", "day"], name="one_learning_day_per_user"),
        ]

    def __str__(self) -> str:
        return f"{self.day}: {self.calls} calls, {self.cards} cards"


class CleanupJob(models.Model):
    """One AI clean-up call for a scope (merge entries or shorten paragraphs) and its result."""

    class Kind(models.TextChoices):
        MERGE = "merge", "Merge machine entries"
        SHORTEN = "shorten", "Shorten your paragraphs"

    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Asking the AI"
        READY = "ready", "Ready to review"
        REFUSED = "refused", "Not usable"
        APPLIED = "applied", "Applied"
        DISMISSED = "dismissed", "Dismissed"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    scope = models.ForeignKey(
        "memory_addon.MemoryScope", on_delete=models.CASCADE, related_name="+"
    )
    kind = models.CharField(max_length=16, choices=Kind.choices)
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED)
    base_sha256 = models.CharField(max_length=64)
    proposed = models.TextField(blank=True)
    error = models.CharField(max_length=500, blank=True)
    change_set = models.ForeignKey(
        "memory_addon.ChangeSet", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering: ClassVar = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.kind} job #{self.pk} ({self.state})"


class TriageCard(models.Model):
    """The complexity estimate before one eligible turn (M20) and the person's answer.

    One per answer: a turn queued again after the card (or its timeout) is not estimated
    a second time. Only `waiting` parks the turn; every other state lets it run.
    """

    class State(models.TextChoices):
        SIMPLE = "simple", "Looked simple: ran as asked"
        WAITING = "waiting", "Waiting for you"
        PROCEEDED = "proceeded", "Proceeded with a plan"
        EXPIRED = "expired", "No answer in time: ran as asked"
        FAILED = "failed", "Estimate failed: ran as asked"
        STOPPED = "stopped", "Stopped while it waited"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    conversation = models.ForeignKey(
        "chat.Conversation", on_delete=models.CASCADE, related_name="triage_cards"
    )
    user_message = models.ForeignKey("chat.Message", on_delete=models.CASCADE, related_name="+")
    answer = models.OneToOneField(
        "chat.Message", on_delete=models.CASCADE, related_name="triage_card"
    )
    state = models.CharField(max_length=16, choices=State.choices, db_index=True)
    mode = models.CharField(max_length=16)  # the setting that applied: automatic or always
    looks_complex = models.BooleanField(default=False)
    reasons = models.JSONField(default=list, blank=True)
    options = models.JSONField(default=list, blank=True)  # learning.core.triage.Option, stored
    # What the person chose: an option's number, or -1 for their own idea.
    chosen = models.IntegerField(null=True, blank=True)
    plan = models.TextField(blank=True)
    notice = models.CharField(max_length=300, blank=True)  # why it failed, in one line
    rule = models.ForeignKey(
        RuleSuggestion, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering: ClassVar = ["created_at", "id"]
        indexes: ClassVar = [
            models.Index(fields=["state", "expires_at"], name="learning_triage_due_idx")
        ]

    def __str__(self) -> str:
        return f"Triage card #{self.pk} ({self.state})"
