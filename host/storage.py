"""A person's storage across apps: memory files, project banks, uploaded documents.

Apps register a counter (bytes a person uses in that app); quota checks add them up,
so no app has to import another app's models.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings

from host.errors import LimitExceeded

_counters: list[Callable[[int], int]] = []


def register_storage_counter(counter: Callable[[int], int]) -> None:
    if counter not in _counters:
        _counters.append(counter)


def storage_used(user_id: int) -> int:
    return sum(counter(user_id) for counter in _counters)


def storage_check(user_id: int, adding: int) -> None:
    """Refuse `adding` more bytes when the person's storage would pass its quota."""
    if adding <= 0:
        return
    used = storage_used(user_id)
    limit = settings.PERSON_STORAGE_MAX_BYTES
    if used + adding > limit:
        raise LimitExceeded(
            f"This would use {(used + adding) // 1024} KiB of your storage; the limit is "
            f"{limit // 1024} KiB (memory, project banks and uploaded documents together). "
            "Delete something first."
        )
