"""Conversations with an AI profile, their messages, and scheduled prompts."""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy
from pgvector.django import VectorField

from memory_addon.turns import chat_key_of

STALLED_AFTER_SECONDS = 30


class Conversation(models.Model):
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations"
    )
    title = models.CharField(max_length=200, blank=True)
    ai_profile = models.ForeignKey(
        "accounts.AIProfile", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    agent = models.ForeignKey(
        "accounts.Agent", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    stores = models.ManyToManyField("knowledge.Store", blank=True, related_name="+")
    # Set for the conversation a messaging bridge talks in: its turns read and propose
    # into that binding's conversation notes (M10) and always ask first (M9).
    binding = models.ForeignKey(
        "accounts.MessagingBinding",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    # The platform's chat (Telegram chat, Slack channel, standard bridge chat_id) and
    # thread in it: one conversation each. Both "" for a binding's first conversation.
    external_chat = models.CharField(max_length=200, blank=True, default="")
    external_thread = models.CharField(max_length=200, blank=True, default="")
    # The per-request switch of M16: off sends no memory and proposes nothing. In a
    # temporary chat it is the person's "reads memory" choice.
    memory_on = models.BooleanField(default=True)
    # A temporary chat (M22) never writes memory, is never listed, and is deleted once
    # closed (closed_at) or CHAT_TEMPORARY_KEEP_HOURS after it started.
    temporary = models.BooleanField(default=False)
    closed_at = models.DateTimeField(null=True, blank=True)
    run_kind = models.CharField(max_length=16, default="interactive")
    # The collection files attached in the chat go to; made on the first attach.
    own_store = models.ForeignKey(
        "knowledge.Store", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # An edit of an earlier message starts a copy; it names the conversation it came from.
    edited_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering: ClassVar = ["-updated_at", "-id"]
        indexes: ClassVar = [
            models.Index(fields=["owner", "-updated_at"], name="chat_conversation_recent_idx"),
            models.Index(
                fields=["created_at"],
                condition=Q(temporary=True),
                name="chat_conversation_temp_idx",
            ),
        ]
        constraints: ClassVar = [
            models.UniqueConstraint(
                fields=["binding", "external_chat", "external_thread"],
                condition=Q(binding__isnull=False) & ~Q(external_chat=""),
                name="one_conversation_per_external_chat",
            ),
            # A messaging app's conversation lives on in that app: it cannot be temporary.
            models.CheckConstraint(
                condition=Q(temporary=False) | Q(binding__isnull=True),
                name="temporary_conversation_has_no_binding",
            ),
        ]

    def __str__(self) -> str:
        return self.title or f"Conversation {self.pk}"

    @property
    def chat_key(self) -> str:
        """The external chat as one string: its memory scope's key."""
        return chat_key_of(self.external_chat, self.external_thread)


class PinnedContext(models.Model):
    """The host context a conversation's model got at its fixed place (B9): sent again
    byte for byte each turn, so a provider's prompt cache holds; changes go as reminders."""

    conversation = models.OneToOneField(
        Conversation, on_delete=models.CASCADE, primary_key=True, related_name="pinned_context"
    )
    text = models.TextField()
    sha256 = models.CharField(max_length=64)
    # Pinned for a model on this machine: unmasked, so never re-sent to a remote one.
    local = models.BooleanField(default=False)
    pinned_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"pinned context of conversation {self.conversation_id}"


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user", gettext_lazy("You")
        ASSISTANT = "assistant", gettext_lazy("Assistant")

    class State(models.TextChoices):
        STREAMING = "streaming", gettext_lazy("Answering")
        COMPLETE = "complete", gettext_lazy("Complete")
        FAILED = "failed", gettext_lazy("Failed")
        STOPPED = "stopped", gettext_lazy("Stopped")
        # Parked on a question to the person (M19): no worker holds it meanwhile.
        WAITING = "waiting", gettext_lazy("Waiting for you")

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="messages"
    )
    role = models.CharField(max_length=16, choices=Role.choices)
    content = models.TextField(blank=True)
    # Every tool call of the answer, in order: {round, id, name, arguments, ok, result}.
    tool_calls = models.JSONField(default=list, blank=True)
    model = models.CharField(max_length=200, blank=True)
    usage = models.JSONField(default=dict, blank=True)
    state = models.CharField(max_length=16, choices=State.choices, default=State.COMPLETE)
    error = models.TextField(blank=True)
    # What went to the model with this answer (M15) and the excerpts it could cite (K7).
    sent_along = models.JSONField(default=dict, blank=True)
    citations = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    first_token_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Updated while a worker streams the answer; a stale one means the worker died.
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering: ClassVar = ["created_at", "id"]
        indexes: ClassVar = [
            models.Index(fields=["state", "heartbeat_at"], name="chat_message_state_idx")
        ]

    def __str__(self) -> str:
        return f"{self.role} message {self.pk}"

    @property
    def seems_stalled(self) -> bool:
        """Streaming, but its worker has not written for a while (it writes every few seconds)."""
        if self.state != self.State.STREAMING or self.started_at is None or not self.heartbeat_at:
            return False
        return (timezone.now() - self.heartbeat_at).total_seconds() > STALLED_AFTER_SECONDS

    @property
    def duration_ms(self) -> int | None:
        if self.started_at and self.finished_at:
            return int((self.finished_at - self.started_at).total_seconds() * 1000)
        return None


class MessageEmbedding(models.Model):
    """A message's vector for past-chat search (B10), made by a job after it is stored.

    `sha256` is the text that was embedded; a search compares only vectors of the model
    it embedded the query with. Temporary chats (M22) are never embedded.
    """

    message = models.OneToOneField(
        Message, on_delete=models.CASCADE, primary_key=True, related_name="embedding"
    )
    # The conversation's owner, kept here so a search scans only that person's vectors
    # (an exact scan: a shared HNSW index filtered per person would miss neighbours).
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    model_name = models.CharField(max_length=200)
    # No fixed dimension: the person's embedding model decides it.
    dimension = models.PositiveIntegerField()
    sha256 = models.CharField(max_length=64)
    vector = VectorField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes: ClassVar = [
            models.Index(
                fields=["owner", "model_name", "dimension"], name="chat_msgembedding_owner_idx"
            )
        ]

    def __str__(self) -> str:
        return f"Embedding of message {self.message_id}"


class Question(models.Model):
    """A question the model asked the person during an answer (M19).

    The answer's turn is parked while it waits: `resume` keeps what the model said and
    was told since the prompt, so a new chat job continues the same answer.
    """

    class State(models.TextChoices):
        WAITING = "waiting", gettext_lazy("Waiting for you")
        ANSWERED = "answered", gettext_lazy("Answered")
        DECIDED = "decided", gettext_lazy("Decided without you")

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chat_questions"
    )
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="questions")
    # Counts up within the answer; a messaging app shows it, and a reply may name it.
    number = models.PositiveSmallIntegerField()
    call_id = models.CharField(max_length=200)
    text = models.TextField()
    why = models.TextField()
    options = models.JSONField(default=list)  # the recommended one first
    state = models.CharField(max_length=16, choices=State.choices, default=State.WAITING)
    answer = models.TextField(blank=True)
    rule = models.CharField(max_length=300, blank=True)
    # {"tail": model messages after the prompt, "round": the round to go on with}
    resume = models.JSONField(default=dict)
    asked_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    answered_at = models.DateTimeField(null=True, blank=True)
    resumed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering: ClassVar = ["asked_at", "id"]
        indexes: ClassVar = [
            models.Index(fields=["state", "expires_at"], name="chat_question_due_idx")
        ]
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["message", "number"], name="one_question_number")
        ]

    def __str__(self) -> str:
        return f"Question {self.number} of message {self.message_id}"


class Schedule(models.Model):
    """A prompt run in the background on a profile/agent (H9): every N minutes or daily."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chat_schedules"
    )
    name = models.CharField(max_length=120)
    prompt = models.TextField()
    ai_profile = models.ForeignKey("accounts.AIProfile", on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(
        "accounts.Agent", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Only collections that opted in to autonomous runs are searched (K7).
    stores = models.ManyToManyField("knowledge.Store", blank=True, related_name="+")
    every_minutes = models.PositiveIntegerField(null=True, blank=True)
    daily_at = models.TimeField(null=True, blank=True, help_text="UTC time of a daily run.")
    enabled = models.BooleanField(default=True)
    next_run_at = models.DateTimeField()
    last_run_at = models.DateTimeField(null=True, blank=True)
    last_conversation = models.ForeignKey(
        Conversation, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering: ClassVar = ["name"]
        indexes: ClassVar = [
            models.Index(fields=["enabled", "next_run_at"], name="chat_schedule_due_idx")
        ]

    def __str__(self) -> str:
        return self.name
