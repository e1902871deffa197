from __future__ import annotations

from host.errors import Refusal


class KnowledgeRefusal(Refusal):
    """A collection action the rules do not allow; the message says why and what to do."""


class JobBusy(KnowledgeRefusal):
    status = 409


class IndexMismatch(KnowledgeRefusal):
    status = 409


class StoreReadOnly(KnowledgeRefusal):
    """The person may read the collection but not manage it."""

    status = 403
