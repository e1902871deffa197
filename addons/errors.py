"""Add-on refusals: the host's one refusal hierarchy, with the statuses the library needs."""

from __future__ import annotations

from host.errors import ChangeRefused, NotAllowed, Refusal


class AddonNotFound(Refusal):
    status = 404


class AddonConflict(Refusal):
    status = 409


class UnknownSetting(Refusal):
    status = 404


__all__ = ["AddonConflict", "AddonNotFound", "ChangeRefused", "NotAllowed", "UnknownSetting"]
