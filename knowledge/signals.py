"""What the knowledge services announce, inside the transaction of the change.

Apps above knowledge (bridges' outbox, B4) write their rows in the same commit, so a
listener's failure undoes the change; knowledge never names who listens.
"""

from __future__ import annotations

from django.dispatch import Signal

knowledge_indexed = Signal()  # user_id, store_id, source_id, job_id, counts
