"""Row ids from untrusted text (query strings, form fields, references)."""

from __future__ import annotations

from collections.abc import Iterable


def row_id(value: str | None) -> int | None:
    """The id in `value` when it is ASCII digits that fit a bigint, else None.

    `str.isdigit` also accepts "²" and "٣" (int() fails on the first, accepts the
    second), and a 40-digit number is a database error: neither may become a 500.
    """
    if value and value.isascii() and value.isdecimal() and len(value) <= 18:
        return int(value)
    return None


def row_ids(values: Iterable[str], limit: int = 200) -> list[int]:
    found = (row_id(value) for value in values)
    return [value for value in found if value is not None][:limit]
