"""Shapes every endpoint of every app shares: the error body, moments given by a client."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated

from django.utils import timezone
from ninja import Schema
from pydantic import AfterValidator

# PostgreSQL's timestamptz takes offsets up to 15:59; Python's up to 23:59.
_LARGEST_OFFSET = timedelta(hours=15, minutes=59)


class ErrorOut(Schema):
    detail: str


def storable_moment(value: datetime) -> datetime:
    """A moment the database can store and read back: with a time zone (a naive one is
    in the site's), an offset PostgreSQL accepts, inside the years 1 to 9999 in UTC."""
    try:
        if timezone.is_naive(value):
            value = timezone.make_aware(value)
        offset = value.utcoffset() or timedelta(0)
        if abs(offset) > _LARGEST_OFFSET:
            raise ValueError("the time zone offset must lie between -15:59 and +15:59")
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError("the moment must lie between the years 1 and 9999 (in UTC)") from None


Moment = Annotated[datetime, AfterValidator(storable_moment)]
