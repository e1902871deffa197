"""Domain errors of every app, mapped once to HTTP by the API root (config/api.py)."""

from __future__ import annotations

from typing import Any


class Refusal(Exception):
    """What the rules do not allow, in any app; the message is for people and models.

    Every app's domain errors derive from it, and the API root maps it to HTTP once.
    """

    status = 400

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class ChangeRefused(Refusal):
    pass


class PathNotAllowed(ChangeRefused):
    pass


class NothingToChange(ChangeRefused):
    """The change set would leave every file as it is."""


class SecretRefused(ChangeRefused):
    pass


class LimitExceeded(ChangeRefused):
    pass


class StaleBase(Refusal):
    """The file changed since the version the change was based on."""

    status = 409


class NotAllowed(Refusal):
    """Policy, save mode or rights forbid it."""

    status = 403


class ProposalClosed(Refusal):
    """Confirming or rejecting a proposal that is no longer pending."""

    status = 409
