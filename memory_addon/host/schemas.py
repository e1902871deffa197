"""The error body every endpoint of every app answers with."""

from __future__ import annotations

from ninja import Schema


class ErrorOut(Schema):
    detail: str
