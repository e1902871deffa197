"""The host's tables: answers kept for Idempotency-Key retries (host/idempotency.py) and
what deleted rows left on other servers (host/leftovers.py)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class IdempotentAnswer(models.Model):
    """The answer to a keyed write, stored in the write's own transaction: it exists
    exactly when the write committed, whatever happened to the worker or to Redis."""

    # sha256 of caller, method, path and key: the key itself is the client's text.
    name = models.CharField(max_length=64, primary_key=True)
    fingerprint = models.CharField(max_length=64)
    status = models.PositiveSmallIntegerField()
    content_type = models.CharField(max_length=255, blank=True)
    # The answer's headers a replay needs (host/idempotency.py, KEPT_HEADERS).
    headers = models.JSONField(default=dict, blank=True)
    content = models.BinaryField()
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    def __str__(self) -> str:
        return f"{self.name[:12]} → {self.status}"


class Leftover(models.Model):
    """Something a delete left outside PostgreSQL (a folder of objects on the shared
    storage, a Qdrant collection), written in the delete's own transaction: it exists
    exactly when the delete committed, and goes once the thing itself is removed."""

    kind = models.CharField(max_length=40)
    # What the kind's remover needs; never a secret in clear (keys stay encrypted).
    target = models.JSONField()
    created_at = models.DateTimeField(default=timezone.now)
    next_try_at = models.DateTimeField(default=timezone.now, db_index=True)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.CharField(max_length=500, blank=True)

    def __str__(self) -> str:
        return f"{self.kind} ({self.described})"

    @property
    def described(self) -> str:
        """The target for pages and logs: an API key stays out, even encrypted."""
        shown = {k: v for k, v in self.target.items() if not k.endswith("_encrypted")}
        return ", ".join(f"{key}: {value}" for key, value in shown.items())
