"""What the memory services announce once a change has committed.

The live pages listen (memory_addon/events.py). The services cannot call them directly:
the pages read through the services, and the import would go in a circle.
"""

from __future__ import annotations

from functools import partial

from django.db import transaction
from django.dispatch import Signal

memory_changed = Signal()  # user_id, change_set_id
proposal_added = Signal()  # user_id, proposal_id
proposal_removed = Signal()  # user_id, proposal_id
proposals_counted = Signal()  # user_id, pending_count


def send_on_commit(signal: Signal, **values: int) -> None:
    """Send after commit, never for a rollback; a failing listener is logged and never
    undoes the saved change."""
    transaction.on_commit(partial(signal.send, sender=None, **values), robust=True)
