"""The error answers most memory endpoints declare."""

from __future__ import annotations

from memory_addon.schemas import ErrorOut

ERRORS = {400: ErrorOut, 403: ErrorOut, 404: ErrorOut, 409: ErrorOut}
