"""What the chat announces; apps above it (learning) listen, the chat never names them."""

from __future__ import annotations

from django.dispatch import Signal

# An answer ended complete (its text stored and shown); sent outside any transaction.
answer_completed = Signal()  # answer_id
# An answer that went on after its question was decided without the person (M19: the
# timeout) ended, in any state; a messaging bridge sends it back. Outside any transaction.
decided_answer_ended = Signal()  # answer_id, question_id
