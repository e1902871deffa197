"""What changed between two versions of a context block, line by line (B9).

A client keeps the old block at a fixed prompt position (so a provider's prompt cache
holds) and is told only the lines added and removed since. Order inside the block is
not part of the delta: the model needs to know what is new and what is gone.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from host.core.tokens import estimate_tokens


@dataclass(frozen=True)
class LineDelta:
    added: list[str]
    removed: list[str]

    @property
    def empty(self) -> bool:
        return not self.added and not self.removed

    def tokens(self) -> int:
        return estimate_tokens("\n".join([*self.added, *self.removed]))

    def too_big(self, new: str, *, max_tokens: int) -> bool:
        """Past the bound the whole new block is cheaper to read than the delta: more
        than `max_tokens`, or more than half of the new block."""
        tokens = self.tokens()
        return tokens > max_tokens or 2 * tokens > estimate_tokens(new)


def line_delta(old: str, new: str) -> LineDelta:
    """Lines of `new` that `old` lacks, and lines of `old` that `new` lacks, each in its
    own block's order; a line that appears twice counts twice; blank lines are ignored."""
    old_lines = [line for line in old.split("\n") if line.strip()]
    new_lines = [line for line in new.split("\n") if line.strip()]
    return LineDelta(
        added=_missing(new_lines, Counter(old_lines)),
        removed=_missing(old_lines, Counter(new_lines)),
    )


def _missing(lines: list[str], present: Counter[str]) -> list[str]:
    left = Counter(present)
    out = []
    for line in lines:
        if left[line]:
            left[line] -= 1
        else:
            out.append(line)
    return out


__all__ = ["LineDelta", "line_delta"]
