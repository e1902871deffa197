"""Memory storage: scopes of Markdown files as rows, change sets with history, proposals,
and the approved reference files of other tools that go along with the memory block."""

from __future__ import annotations

import hashlib
from typing import ClassVar

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy
from pgvector.django import VectorField


class MemoryScope(models.Model):
    """A folder of memory files: a user's notes, an agent's, a conversation's, or a project bank.

    Organization rules are not a scope: they live on Organization.rules, read-only here.
    """

    class Kind(models.TextChoices):
        USER = "user", gettext_lazy("My memory")
        AGENT = "agent", gettext_lazy("Agent memory")
        CHANNEL = "channel", gettext_lazy("Conversation memory")
        PROJECT = "project", gettext_lazy("Project memory bank")

    kind = models.CharField(max_length=16, choices=Kind.choices)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="memory_scopes",
    )
    agent = models.ForeignKey(
        "accounts.Agent", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    binding = models.ForeignKey(
        "accounts.MessagingBinding",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
    )
    # A conversation scope is one external chat of its binding (its chat and thread id);
    # "" is the binding's first conversation, from before chats were told apart.
    chat_key = models.CharField(max_length=401, blank=True, default="")
    project_key = models.CharField(max_length=128, blank=True)
    project_name = models.CharField(max_length=200, blank=True)
    enabled = models.BooleanField(default=True, help_text="For project banks: on/off keeps files.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(
                fields=["owner"], condition=Q(kind="user"), name="one_user_scope"
            ),
            models.UniqueConstraint(
                fields=["agent"], condition=Q(kind="agent"), name="one_scope_per_agent"
            ),
            models.UniqueConstraint(
                fields=["binding", "chat_key"],
                condition=Q(kind="channel"),
                name="one_scope_per_external_chat",
            ),
            models.UniqueConstraint(
                fields=["owner", "project_key"],
                condition=Q(kind="project"),
                name="one_bank_per_project",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} #{self.pk}"


class MemoryFile(models.Model):
    scope = models.ForeignKey(MemoryScope, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(max_length=200)
    content = models.TextField(blank=True)
    sha256 = models.CharField(max_length=64)
    size = models.PositiveIntegerField(default=0)
    # Hash of the content as the machine last wrote it: while it still matches,
    # the whole file is machine text and the machine may replace it.
    machine_sha256 = models.CharField(max_length=64, blank=True)
    # Kept by PostgreSQL: the keyword search reads it instead of parsing every file of
    # the scope again for each query (services/note_search.py).
    search_vector = models.GeneratedField(
        expression=SearchVector("content", config="simple"),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["scope", "path"], name="unique_path_per_scope"),
        ]
        indexes: ClassVar = [
            GinIndex(fields=["search_vector"], name="memory_file_search_vector"),
        ]
        ordering: ClassVar = ["path"]

    def __str__(self) -> str:
        return self.path

    def set_content(self, content: str) -> None:
        self.content = content
        self.sha256 = content_hash(content)
        self.size = len(content.encode("utf-8"))


def content_hash(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


EMPTY_HASH = content_hash("")


class ChangeSet(models.Model):
    """One change of one or more files of a scope, applied in one transaction."""

    class Origin(models.TextChoices):
        PERSON = "person", gettext_lazy("You")
        ASSISTANT = "assistant", gettext_lazy("Assistant (confirmed)")
        AUTOMATIC = "automatic", gettext_lazy("Automatic")
        RESTORE = "restore", gettext_lazy("Restore")
        UNDO = "undo", gettext_lazy("Undo")

    class Source(models.TextChoices):
        PAGE = "page", gettext_lazy("Page")
        API = "api", gettext_lazy("API")
        CHAT = "chat", gettext_lazy("Chat")
        BRIDGE = "bridge", gettext_lazy("Messaging bridge")
        LEARNING = "learning", gettext_lazy("Rule learning")
        CLEANUP = "cleanup", gettext_lazy("Clean-up")
        IMPORT = "import", gettext_lazy("Import")

    scope = models.ForeignKey(MemoryScope, on_delete=models.CASCADE, related_name="change_sets")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memory_change_sets"
    )
    origin = models.CharField(max_length=16, choices=Origin.choices)
    source = models.CharField(max_length=16, choices=Source.choices)
    summary = models.CharField(max_length=300, blank=True)
    conversation_ref = models.CharField(max_length=200, blank=True)
    message_ref = models.CharField(max_length=200, blank=True)
    agent = models.ForeignKey(
        "accounts.Agent", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    undoes = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="undone_by"
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering: ClassVar = ["-created_at", "-id"]
        indexes: ClassVar = [
            models.Index(fields=["user", "origin", "-created_at"], name="changeset_audit_idx"),
        ]

    def __str__(self) -> str:
        return f"Change set #{self.pk} ({self.origin})"


class FileChange(models.Model):
    """One file's before and after text in a change set; the rows are the history."""

    change_set = models.ForeignKey(ChangeSet, on_delete=models.CASCADE, related_name="changes")
    scope = models.ForeignKey(MemoryScope, on_delete=models.CASCADE, related_name="versions")
    path = models.CharField(max_length=200)
    # NULL and "" differ here: NULL means the file did not exist / was deleted.
    before = models.TextField(null=True, blank=True)  # noqa: DJ001
    after = models.TextField(null=True, blank=True)  # noqa: DJ001
    before_sha256 = models.CharField(max_length=64, blank=True)
    after_sha256 = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering: ClassVar = ["-created_at", "-id"]
        indexes: ClassVar = [
            models.Index(fields=["scope", "-created_at", "-id"], name="filechange_history_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.path} in change set #{self.change_set_id}"


class Proposal(models.Model):
    """A change the model asked for; waits for the person to confirm it."""

    class State(models.TextChoices):
        PENDING = "pending", gettext_lazy("Pending")
        CONFIRMED = "confirmed", gettext_lazy("Confirmed")
        REJECTED = "rejected", gettext_lazy("Rejected")
        EXPIRED = "expired", gettext_lazy("Expired")

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memory_proposals"
    )
    scope = models.ForeignKey(MemoryScope, on_delete=models.CASCADE, related_name="proposals")
    state = models.CharField(
        max_length=16, choices=State.choices, default=State.PENDING, db_index=True
    )
    operations = models.JSONField(help_text="The file operations, as the model asked for them.")
    base_hashes = models.JSONField(help_text="Hash of each touched file when proposed.")
    reason = models.CharField(max_length=500, blank=True)
    why_waiting = models.CharField(max_length=300, blank=True)
    source = models.CharField(max_length=16, choices=ChangeSet.Source.choices)
    conversation_ref = models.CharField(max_length=200, blank=True)
    message_ref = models.CharField(max_length=200, blank=True)
    agent = models.ForeignKey(
        "accounts.Agent", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    change_set = models.OneToOneField(
        ChangeSet, null=True, blank=True, on_delete=models.SET_NULL, related_name="proposal"
    )
    # The saved note this one may contradict, as it was when proposed (M23); see
    # services/proposals/conflicts.py for the shape. NULL: no conflict found.
    conflict = models.JSONField(null=True, blank=True)
    # Where an imported item came from (M23): source kind, file, item, original id and
    # date. NULL for the model's own proposals.
    provenance = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(db_index=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering: ClassVar = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"Proposal #{self.pk} ({self.state})"


class NoteEmbedding(models.Model):
    """A note file's vector for semantic list_memory (M4), refreshed by a Celery job.

    `sha256` is the content that was embedded: a file whose hash differs is embedded
    again on the next refresh. `model_name` ties the vector to its model; a search only
    compares vectors of the model it embedded the query with.
    """

    file = models.OneToOneField(
        MemoryFile, on_delete=models.CASCADE, primary_key=True, related_name="embedding"
    )
    model_name = models.CharField(max_length=200)
    dimension = models.PositiveIntegerField()
    sha256 = models.CharField(max_length=64)
    # No fixed dimension: the person's embedding model decides it.
    vector = VectorField()
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.file_id} ({self.model_name})"


class BankSwitch(models.Model):
    """A project bank turned on or off: who, when and from where (the banks page lists them)."""

    scope = models.ForeignKey(MemoryScope, on_delete=models.CASCADE, related_name="switches")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    enabled = models.BooleanField()
    source = models.CharField(max_length=16, choices=ChangeSet.Source.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering: ClassVar = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.scope_id} {'on' if self.enabled else 'off'}"


class ReferenceFile(models.Model):
    """Another tool's rule file the person approved to be sent as reference data."""

    class Origin(models.TextChoices):
        UPLOAD = "upload", "Uploaded"
        FOLDER = "folder", "Server folder"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="approved_reference_files"
    )
    name = models.CharField(max_length=255)
    tool = models.CharField(max_length=80, blank=True)
    origin = models.CharField(max_length=16, choices=Origin.choices)
    # For a folder file: its absolute path under a folder an admin allowed.
    path = models.CharField(max_length=1024, blank=True)
    # The uploaded text (an upload has no other copy); empty for folder files.
    content = models.TextField(blank=True)
    approved_sha256 = models.CharField(max_length=64, blank=True)
    approved_at = models.DateTimeField(null=True, blank=True)
    send = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # Moved here from learning (issue 28): the table keeps its name.
        db_table = "learning_referencefile"
        ordering: ClassVar = ["name", "id"]
        constraints: ClassVar = [
            models.UniqueConstraint(
                fields=["owner", "path"],
                condition=Q(origin="folder"),
                name="one_reference_per_folder_file",
            ),
        ]

    def __str__(self) -> str:
        return self.name
