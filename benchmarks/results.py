"""docs/benchmarks.md: each benchmark rewrites its own section between its markers."""

from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"


def write_section(name: str, body: str) -> None:
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    text = (
        RESULTS.read_text() if RESULTS.exists() else "# Benchmarks\n\nProduced by `make bench`.\n"
    )
    section = f"{start}\n{body.rstrip()}\n{end}"
    if start in text:
        head, rest = text.split(start, 1)
        text = head + section + rest.split(end, 1)[1]
    else:
        text = text.rstrip() + "\n\n" + section + "\n"
    RESULTS.write_text(text)
