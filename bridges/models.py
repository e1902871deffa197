"""Messaging bridges (H4) and outgoing events (B4): inbound messages, callbacks, the outbox."""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.db import models
from django.utils import timezone

from accounts import crypto


class InboundMessage(models.Model):
    """One message a bridge posted; the unique (binding, webhook_id) makes a replay a no-op."""

    class State(models.TextChoices):
        RECEIVED = "received", "Received"
        ANSWERING = "answering", "Answering"
        ANSWERED = "answered", "Answered"
        FAILED = "failed", "Failed"

    class Callback(models.TextChoices):
        NONE = "none", "No callback"
        PENDING = "pending", "Waiting to be sent"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Failed"

    binding = models.ForeignKey(
        "accounts.MessagingBinding", on_delete=models.CASCADE, related_name="inbound_messages"
    )
    webhook_id = models.CharField(max_length=200)
    kind = models.CharField(max_length=16)
    sender = models.CharField(max_length=200, blank=True)
    # The platform's ids: the sender's (Telegram from.id, Slack user), the chat and thread
    # the message came from, which the answer names so the bridge can route it.
    sender_id = models.CharField(max_length=200, blank=True, default="")
    chat_id = models.CharField(max_length=200, blank=True, default="")
    thread_id = models.CharField(max_length=200, blank=True, default="")
    text = models.TextField()
    state = models.CharField(max_length=16, choices=State.choices, default=State.RECEIVED)
    error = models.CharField(max_length=500, blank=True)
    answer = models.ForeignKey(
        "chat.Message", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    answer_text = models.TextField(blank=True)
    proposals = models.PositiveIntegerField(default=0)
    callback_state = models.CharField(
        max_length=16, choices=Callback.choices, default=Callback.NONE
    )
    callback_attempts = models.PositiveIntegerField(default=0)
    callback_next_at = models.DateTimeField(null=True, blank=True)
    callback_deadline = models.DateTimeField(null=True, blank=True)
    # A worker sending the callback holds this lease; a dead worker's lease runs out.
    callback_lease_until = models.DateTimeField(null=True, blank=True)
    callback_error = models.CharField(max_length=500, blank=True)
    callback_delivered_at = models.DateTimeField(null=True, blank=True)
    received_at = models.DateTimeField(auto_now_add=True)
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering: ClassVar = ["-received_at", "-id"]
        constraints: ClassVar = [
            models.UniqueConstraint(
                fields=["binding", "webhook_id"], name="one_inbound_per_webhook_id"
            ),
        ]
        indexes: ClassVar = [
            models.Index(fields=["callback_state", "callback_next_at"], name="bridges_cb_due_idx"),
        ]

    def __str__(self) -> str:
        return f"Inbound {self.webhook_id} ({self.state})"


class EventEndpoint(models.Model):
    """An integrator's URL that receives signed memory events (B4)."""

    class EventType(models.TextChoices):
        MEMORY_CHANGED = "memory.changed", "memory.changed"
        PROPOSAL_CREATED = "proposal.created", "proposal.created"
        PROPOSAL_RESOLVED = "proposal.resolved", "proposal.resolved"
        KNOWLEDGE_INDEXED = "knowledge.indexed", "knowledge.indexed"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="event_endpoints"
    )
    # Set when an organization admin registered it: it receives every member's events.
    organization = models.ForeignKey(
        "accounts.Organization",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="event_endpoints",
    )
    url = models.URLField(max_length=500)
    description = models.CharField(max_length=200, blank=True)
    event_types = models.JSONField(default=list)
    enabled = models.BooleanField(default=True)
    secret_encrypted = models.TextField(editable=False)
    next_sequence = models.BigIntegerField(default=1)
    # One sender at a time per endpoint keeps the order; a dead sender's lease runs out.
    lease_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering: ClassVar = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.url

    @property
    def secret(self) -> str:
        return crypto.decrypt(self.secret_encrypted)

    @secret.setter
    def secret(self, value: str) -> None:
        self.secret_encrypted = crypto.encrypt(value)


class OutboxEvent(models.Model):
    """One event for one endpoint, written in the transaction of the change it reports."""

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Failed"

    endpoint = models.ForeignKey(EventEndpoint, on_delete=models.CASCADE, related_name="events")
    sequence = models.BigIntegerField()
    webhook_id = models.CharField(max_length=64, unique=True)
    event_type = models.CharField(max_length=40)
    payload = models.JSONField()
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    deadline_at = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering: ClassVar = ["endpoint", "sequence"]
        constraints: ClassVar = [
            models.UniqueConstraint(
                fields=["endpoint", "sequence"], name="one_event_per_endpoint_sequence"
            ),
        ]
        indexes: ClassVar = [
            models.Index(fields=["endpoint", "state", "sequence"], name="bridges_outbox_due_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} #{self.sequence}"


class DeliveryAttempt(models.Model):
    """The delivery log: one row per POST of an event (first try, retry or redelivery)."""

    event = models.ForeignKey(OutboxEvent, on_delete=models.CASCADE, related_name="attempts_log")
    attempted_at = models.DateTimeField(auto_now_add=True)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    ok = models.BooleanField(default=False)
    error = models.CharField(max_length=500, blank=True)
    duration_ms = models.PositiveIntegerField(default=0)
    manual = models.BooleanField(default=False, help_text="A redelivery someone asked for.")

    class Meta:
        ordering: ClassVar = ["-attempted_at", "-id"]

    def __str__(self) -> str:
        return f"Attempt on {self.event_id}: {self.status_code or self.error}"


class DeliveryTarget(models.Model):
    """One outside receiver (an event endpoint or a binding's callback URL): the claim that
    keeps a single POST in flight to it, and its circuit breaker."""

    endpoint = models.OneToOneField(
        EventEndpoint,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="delivery_target",
    )
    binding = models.OneToOneField(
        "accounts.MessagingBinding",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="delivery_target",
    )
    # Held only while a POST is out; a worker killed mid-call loses it when it runs out.
    in_flight_until = models.DateTimeField(null=True, blank=True)
    consecutive_failures = models.PositiveIntegerField(default=0)
    # Open circuit: nothing is sent before this; the cool-down doubles on each failed probe.
    paused_until = models.DateTimeField(null=True, blank=True)
    pause_seconds = models.FloatField(default=0)
    pause_reason = models.CharField(max_length=500, blank=True)

    class Meta:
        constraints: ClassVar = [
            models.CheckConstraint(
                condition=models.Q(endpoint__isnull=False, binding__isnull=True)
                | models.Q(endpoint__isnull=True, binding__isnull=False),
                name="delivery_target_is_one_receiver",
            ),
        ]

    def __str__(self) -> str:
        return f"Delivery target {self.endpoint_id or self.binding_id}"

    @property
    def is_paused(self) -> bool:
        return self.paused_until is not None and self.paused_until > timezone.now()
