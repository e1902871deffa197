from __future__ import annotations

import difflib


def unified_diff(before: str, after: str, *, path: str, context: int = 3) -> str:
    """A unified diff of two texts; empty when they are equal."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{path}",
        tofile=f"b/{path}",
        n=context,
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
