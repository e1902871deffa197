"""What bridges does when the chat announces something (connected in apps.ready)."""

from __future__ import annotations

from typing import Any

from bridges.services import decided_answer_send


def decided_answer_ended(sender: object, *, answer_id: int, question_id: int, **_: Any) -> None:
    decided_answer_send(answer_id=answer_id, question_id=question_id)
