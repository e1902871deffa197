from __future__ import annotations

from django.core.exceptions import PermissionDenied

from host.errors import Refusal


class KnowledgeRefusal(Refusal):
    """A collection action the rules do not allow; the message says why and what to do."""


class JobBusy(KnowledgeRefusal):
    status = 409


class StoreGone(KnowledgeRefusal):
    """The collection was deleted while the request was under way."""

    status = 404


class IndexMismatch(KnowledgeRefusal):
    status = 409


class StoreReadOnly(KnowledgeRefusal, PermissionDenied):
    """The person may read the collection but not manage it: 403 from the API root's
    Refusal handler and, as a PermissionDenied, from every page view with its reason."""

    status = 403
