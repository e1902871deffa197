from __future__ import annotations

from host.errors import MemoryRefusal


class KnowledgeRefusal(MemoryRefusal):
    """A collection action the rules do not allow; the message says why and what to do."""


class JobBusy(KnowledgeRefusal):
    status = 409


class IndexMismatch(KnowledgeRefusal):
    status = 409
