"""Domain errors of every app, mapped once to HTTP by the API root (config/api.py)."""

from __future__ import annotations

from typing import Any


class MemoryRefusal(Exception):
    """A change or read that the rules do not allow; the message is for people and models."""

    status = 400

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class ChangeRefused(MemoryRefusal):
    pass


class PathNotAllowed(ChangeRefused):
    pass


class NothingToChange(ChangeRefused):
    """The change set would leave every file as it is."""


class SecretRefused(ChangeRefused):
    pass


class LimitExceeded(ChangeRefused):
    pass


class StaleBase(MemoryRefusal):
    """The file changed since the version the change was based on."""

    status = 409


class NotAllowed(MemoryRefusal):
    """Policy, save mode or rights forbid it."""

    status = 403


class ProposalClosed(MemoryRefusal):
    """Confirming or rejecting a proposal that is no longer pending."""

    status = 409
