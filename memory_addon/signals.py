"""What the memory services announce: some signals after commit, some inside the change.

After commit: the live pages listen (memory_addon/events.py). The services cannot call
them directly: the pages read through the services, and the import would go in a circle.

Inside the transaction: apps above memory (bridges' outbox, B4) write their rows in the
change's own transaction, so a rolled-back change leaves nothing and a listener's failure
undoes the change. Memory never names who listens.
"""

from __future__ import annotations

from functools import partial

from django.db import transaction
from django.dispatch import Signal

memory_changed = Signal()  # user_id, change_set_id
proposal_added = Signal()  # user_id, proposal_id
proposal_removed = Signal()  # user_id, proposal_id
proposals_counted = Signal()  # user_id, pending_count

# Sent inside the transaction (plain `send`: a failing listener fails the change).
change_set_written = Signal()  # user_id, change_set_id, scope_id, origin, source, file_count
proposal_created = Signal()  # user_id, proposal_id, scope_id, action, source
proposal_resolved = Signal()  # user_id, proposal_id, state, change_set_id


def send_on_commit(signal: Signal, **values: int) -> None:
    """Send after commit, never for a rollback; a failing listener is logged and never
    undoes the saved change."""
    transaction.on_commit(partial(signal.send, sender=None, **values), robust=True)
