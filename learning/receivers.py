"""Learning's listeners to the chat (connected in learning/apps.py)."""

from __future__ import annotations

from learning.services.rules import rule_check_after_answer


def answer_completed(sender: object, *, answer_id: int, **_signal: object) -> None:
    """Rule learning (M13) looks at the person's message once the answer is complete."""
    rule_check_after_answer(answer_id=answer_id)
