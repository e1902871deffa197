"""What the chat announces; apps above it (learning) listen, the chat never names them."""

from __future__ import annotations

from django.dispatch import Signal

# An answer ended complete (its text stored and shown); sent outside any transaction.
answer_completed = Signal()  # answer_id
