"""Budget packing for the memory block of one turn (M3).

Items are sent whole or not at all. An item that does not fit is skipped and a
smaller later item may still go. Mandatory items (organization rules) are always
sent and use up room first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Candidate[T]:
    value: T
    tokens: int
    size: int  # bytes, for the per-turn byte cap
    mandatory: bool = False


@dataclass(frozen=True)
class Packed[T]:
    sent: list[Candidate[T]]
    left_out: list[Candidate[T]]
    tokens: int
    size: int

    @property
    def omitted(self) -> int:
        return len(self.left_out)


def pack[T](
    candidates: Sequence[Candidate[T]], *, max_tokens: int, max_bytes: int | None = None
) -> Packed[T]:
    """Choose items in order, skipping those that would break a limit."""
    tokens = sum(c.tokens for c in candidates if c.mandatory)
    size = sum(c.size for c in candidates if c.mandatory)
    sent: list[Candidate[T]] = []
    left_out: list[Candidate[T]] = []
    for candidate in candidates:
        if candidate.mandatory:
            sent.append(candidate)
            continue
        fits_tokens = tokens + candidate.tokens <= max_tokens
        fits_bytes = max_bytes is None or size + candidate.size <= max_bytes
        if fits_tokens and fits_bytes:
            sent.append(candidate)
            tokens += candidate.tokens
            size += candidate.size
        else:
            left_out.append(candidate)
    return Packed(sent=sent, left_out=left_out, tokens=tokens, size=size)
