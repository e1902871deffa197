"""Collections (stores), their sources, documents, chunks with vectors, and jobs."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy
from pgvector.django import VectorField

from accounts import crypto
from knowledge.core.scanning import folder_path_problem

MIB = 1024 * 1024


class Store(models.Model):
    """A collection. Its embedding provider, model and dimension are fixed at creation."""

    class Provider(models.TextChoices):
        FASTEMBED = "fastembed", gettext_lazy("Local model (fastembed)")
        OPENAI = "openai", gettext_lazy("OpenAI-compatible server")
        NONE = "none", gettext_lazy("None (keyword search only)")

    class Backend(models.TextChoices):
        POSTGRES = "postgres", "This server's database (pgvector)"
        QDRANT = "qdrant", "A Qdrant service"

    class Language(models.TextChoices):
        # PostgreSQL text search configurations: stemming and stop words per language.
        ENGLISH = "english", gettext_lazy("English")
        GERMAN = "german", gettext_lazy("German")

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="knowledge_stores"
    )
    name = models.CharField(max_length=120)
    provider = models.CharField(max_length=16, choices=Provider.choices)
    model_name = models.CharField(max_length=200, blank=True)
    dimension = models.PositiveIntegerField(null=True, blank=True)
    ai_profile = models.ForeignKey(
        "accounts.AIProfile", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    language = models.CharField(
        max_length=16,
        choices=Language.choices,
        default=Language.ENGLISH,
        help_text="Stemming and stop words of keyword search; fixed when the collection is made.",
    )
    # Where the vectors live; chunk texts, keyword search and statistics stay in PostgreSQL.
    backend = models.CharField(max_length=16, choices=Backend.choices, default=Backend.POSTGRES)
    qdrant_url = models.CharField(max_length=500, blank=True)
    qdrant_collection = models.CharField(max_length=100, blank=True, editable=False)
    qdrant_api_key_encrypted = models.TextField(blank=True, editable=False)
    role_text = models.BooleanField(default=True)
    role_coding = models.BooleanField(default=False)
    autonomous_opt_in = models.BooleanField(
        default=False, help_text="Background and scheduled runs may retrieve from it."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["owner", "name"], name="unique_store_name_per_owner"),
        ]
        ordering: ClassVar = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def semantic(self) -> bool:
        return self.provider != self.Provider.NONE and bool(self.dimension)

    @property
    def index_name(self) -> str:
        return f"knowledge_chunk_hnsw_{self.pk}"

    @property
    def in_qdrant(self) -> bool:
        return self.backend == self.Backend.QDRANT

    @property
    def qdrant_api_key(self) -> str:
        return (
            crypto.decrypt(self.qdrant_api_key_encrypted) if self.qdrant_api_key_encrypted else ""
        )

    @qdrant_api_key.setter
    def qdrant_api_key(self, value: str) -> None:
        self.qdrant_api_key_encrypted = crypto.encrypt(value) if value else ""


class Source(models.Model):
    class Kind(models.TextChoices):
        FOLDER = "folder", gettext_lazy("Folder")
        UPLOAD = "upload", gettext_lazy("Uploaded files")

    class SyncMode(models.TextChoices):
        MANUAL = "manual", gettext_lazy("Manual")
        WATCH = "watch", gettext_lazy("Watch")

    class Status(models.TextChoices):
        NEW = "new", gettext_lazy("Not indexed yet")
        OK = "ok", gettext_lazy("OK")
        INDEXING = "indexing", gettext_lazy("Indexing")
        MISSING = "missing", gettext_lazy("Missing")
        ERROR = "error", gettext_lazy("Error")

    store = models.ForeignKey(Store, on_delete=models.CASCADE, related_name="sources")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    path = models.CharField(max_length=1024, help_text="Absolute folder on the server.")
    # Uploads: the names of the uploaded files, which people see instead of our copy's path.
    name = models.CharField(max_length=300, blank=True)
    include_globs = models.JSONField(default=list, blank=True)
    exclude_globs = models.JSONField(default=list, blank=True)
    use_gitignore = models.BooleanField(default=True)
    max_file_bytes = models.PositiveBigIntegerField(
        default=50 * MIB, validators=[MinValueValidator(MIB), MaxValueValidator(1024 * MIB)]
    )
    sync_mode = models.CharField(max_length=16, choices=SyncMode.choices, default=SyncMode.MANUAL)
    enabled = models.BooleanField(default=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.NEW)
    status_message = models.CharField(max_length=500, blank=True)
    file_count = models.PositiveIntegerField(default=0)
    chunk_count = models.PositiveIntegerField(default=0)
    problem_count = models.PositiveIntegerField(default=0)
    last_indexed_at = models.DateTimeField(null=True, blank=True)
    hashes = models.JSONField(default=dict, blank=True, help_text="Relative path → sha256.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering: ClassVar = ["path"]

    def __str__(self) -> str:
        return self.path

    @property
    def label(self) -> str:
        """What people see: a folder's path, never the server path of our upload copies."""
        if self.kind == self.Kind.FOLDER:
            return self.path
        return self.name or str(gettext_lazy("Uploaded files"))


class Document(models.Model):
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="documents")
    path = models.CharField(max_length=1024)
    sha256 = models.CharField(max_length=64)
    format = models.CharField(max_length=40)
    size = models.PositiveBigIntegerField()
    indexed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["source", "path"], name="unique_document_per_source"),
        ]

    def __str__(self) -> str:
        return self.path


class Chunk(models.Model):
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    # Denormalized so retrieval filters by store and source without joins.
    store = models.ForeignKey(Store, on_delete=models.CASCADE, related_name="+")
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="+")
    ordinal = models.PositiveIntegerField()
    page = models.PositiveIntegerField(null=True, blank=True)
    text = models.TextField()
    token_count = models.PositiveIntegerField()
    # No fixed dimension: each store's HNSW index casts to its own (see services).
    embedding = VectorField(null=True, blank=True)
    # The store's text search configuration, the text's search vector and its length
    # (BM25's document length: terms after stop words) are set by one database trigger
    # (migrations 0004 and 0010) on every insert path, ORM, COPY or raw SQL; the vector is
    # computed once per row. Writes to them are ignored unless the text changes.
    language = models.CharField(max_length=16, db_default="english", editable=False)
    search = SearchVectorField(null=True, editable=False)
    search_length = models.IntegerField(null=True, editable=False)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["document", "ordinal"], name="unique_chunk_ordinal"),
        ]
        indexes: ClassVar = [
            models.Index(fields=["store", "source"], name="chunk_store_source_idx"),
            GinIndex(fields=["search"], name="chunk_search_gin"),
        ]

    def __str__(self) -> str:
        return f"{self.document_id}#{self.ordinal}"


class KeywordStats(models.Model):
    """BM25's whole-store numbers: chunk count and total length (maintained by triggers)."""

    store = models.OneToOneField(
        Store, on_delete=models.CASCADE, primary_key=True, related_name="keyword_stats"
    )
    chunks = models.BigIntegerField(default=0)
    tokens = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.store_id}: {self.chunks} chunks"


class KeywordTerm(models.Model):
    """Document frequency of one lexeme in one store (BM25's idf), kept by triggers.

    The statement-level triggers on knowledge_chunk (migration 0004) add a commit's
    inserted chunks and subtract its deleted ones in the same transaction, so the
    numbers change exactly when an index version becomes visible.
    """

    # No index of its own: the (store, term) one serves both, and with a second one the
    # planner, on statistics taken before a bulk load, scanned every term of the store.
    store = models.ForeignKey(Store, on_delete=models.CASCADE, related_name="+", db_index=False)
    term = models.TextField()
    df = models.BigIntegerField()

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["store", "term"], name="unique_keyword_term"),
        ]

    def __str__(self) -> str:
        return f"{self.term} ({self.df})"


class StagedChunk(models.Model):
    """Chunks an index job prepared; they become Chunks in the job's final commit."""

    job = models.ForeignKey("Job", on_delete=models.CASCADE, related_name="staged")
    path = models.CharField(max_length=1024)
    ordinal = models.PositiveIntegerField()
    page = models.PositiveIntegerField(null=True, blank=True)
    text = models.TextField()
    token_count = models.PositiveIntegerField()
    embedding = VectorField(null=True, blank=True)
    # For a store in Qdrant: the Chunk id taken before the commit, so the vector can be
    # written under it first (it is only found once the commit makes the chunk exist).
    chunk_id = models.BigIntegerField(null=True, blank=True)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["job", "path", "ordinal"], name="unique_staged_chunk"),
        ]

    def __str__(self) -> str:
        return f"{self.path}#{self.ordinal}"


class Job(models.Model):
    class Kind(models.TextChoices):
        SCAN = "scan", gettext_lazy("Scan")
        INDEX = "index", gettext_lazy("Index")

    class State(models.TextChoices):
        # In line behind the job the collection runs now; it starts when that one ends.
        WAITING = "waiting", gettext_lazy("Waiting for the collection's current job")
        QUEUED = "queued", gettext_lazy("Queued")
        RUNNING = "running", gettext_lazy("Running")
        REVIEW = "review", gettext_lazy("Waiting for your review")
        SUCCEEDED = "succeeded", gettext_lazy("Done")
        FAILED = "failed", gettext_lazy("Failed")
        CANCELLED = "cancelled", gettext_lazy("Cancelled")
        DISMISSED = "dismissed", gettext_lazy("Dismissed")

    # Active: the collection's one job at a time. Pending: not settled yet.
    ACTIVE_STATES = (State.QUEUED, State.RUNNING)
    PENDING_STATES = (State.WAITING, State.QUEUED, State.RUNNING)

    store = models.ForeignKey(Store, on_delete=models.CASCADE, related_name="jobs")
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="jobs")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED)
    progress = models.PositiveSmallIntegerField(default=0)
    counts = models.JSONField(default=dict, blank=True)
    problems = models.JSONField(default=list, blank=True)
    review = models.JSONField(default=list, blank=True, help_text="Scan rows for the review.")
    cancel_requested = models.BooleanField(default=False)
    error = models.CharField(max_length=500, blank=True)
    scan_job = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    requeues = models.PositiveSmallIntegerField(
        default=0, help_text="Times the stale-job reaper sent this job again after its worker died."
    )

    class Meta:
        constraints: ClassVar = [
            # One scan or index job per store at a time.
            models.UniqueConstraint(
                fields=["store"],
                condition=Q(state__in=["queued", "running"]),
                name="one_active_job_per_store",
            ),
        ]
        ordering: ClassVar = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.kind} job #{self.pk} ({self.state})"


class FolderGrant(models.Model):
    """An admin lets a person, or every member of an organization, index one server folder (K2).

    The folder must lie under one of KNOWLEDGE_ALLOWED_ROOTS, which stay the outer bound:
    a grant outside them counts for nothing. Sub-folders are included. Without a grant only
    superusers may use the allowed roots.
    """

    path = models.CharField(
        max_length=1024,
        help_text="Absolute folder under one of KNOWLEDGE_ALLOWED_ROOTS; sub-folders included.",
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="knowledge_folder_grants",
    )
    organization = models.ForeignKey(
        "accounts.Organization",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="knowledge_folder_grants",
    )
    note = models.CharField(max_length=200, blank=True, help_text="Why, for other admins.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints: ClassVar = [
            models.CheckConstraint(
                condition=Q(user__isnull=False, organization__isnull=True)
                | Q(user__isnull=True, organization__isnull=False),
                name="folder_grant_to_user_or_organization",
                violation_error_message="Grant the folder to a person or an organization.",
            ),
            models.UniqueConstraint(fields=["path", "user"], name="unique_folder_grant_user"),
            models.UniqueConstraint(
                fields=["path", "organization"], name="unique_folder_grant_organization"
            ),
        ]
        ordering: ClassVar = ["path"]

    def __str__(self) -> str:
        return f"{self.path} → {self.user or self.organization}"

    def clean(self) -> None:
        problem = folder_path_problem(self.path)
        if problem:
            raise ValidationError({"path": problem})
        path = Path(self.path)
        if not path.is_absolute() or str(path) != self.path or ".." in path.parts:
            raise ValidationError({"path": "Give the plain absolute path, such as /srv/docs."})
        roots = [Path(root).resolve() for root in settings.KNOWLEDGE_ALLOWED_ROOTS]
        if not any(path == root or path.is_relative_to(root) for root in roots):
            where = ", ".join(str(root) for root in roots) or "none are set"
            raise ValidationError(
                {"path": f"The folder must be under KNOWLEDGE_ALLOWED_ROOTS ({where})."}
            )


class StoreShare(models.Model):
    """Who besides the owner may use a collection.

    A share with an organization lets its members read and its admins manage; a share
    with a person names what they may do. A person outside the sharer's organization
    cannot be named, so a share never reaches across organizations.
    """

    class Access(models.TextChoices):
        READ = "read", gettext_lazy("Read")
        MANAGE = "manage", gettext_lazy("Manage")

    store = models.ForeignKey(Store, on_delete=models.CASCADE, related_name="shares")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="knowledge_shares",
    )
    organization = models.ForeignKey(
        "accounts.Organization",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="knowledge_shares",
    )
    # For an organization the members' access is always read and its admins' manage.
    access = models.CharField(max_length=8, choices=Access.choices, default=Access.READ)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints: ClassVar = [
            models.CheckConstraint(
                condition=Q(user__isnull=False, organization__isnull=True)
                | Q(user__isnull=True, organization__isnull=False),
                name="store_share_to_user_or_organization",
            ),
            models.UniqueConstraint(fields=["store", "user"], name="unique_store_share_user"),
            models.UniqueConstraint(
                fields=["store", "organization"], name="unique_store_share_organization"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.store_id} → {self.user or self.organization} ({self.access})"
