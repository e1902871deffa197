"""Add-on refusals: the host's one refusal hierarchy, with the statuses the library needs."""

from __future__ import annotations

from host.errors import ChangeRefused, MemoryRefusal, NotAllowed


class AddonNotFound(MemoryRefusal):
    status = 404


class AddonConflict(MemoryRefusal):
    status = 409


class UnknownSetting(MemoryRefusal):
    status = 404


__all__ = ["AddonConflict", "AddonNotFound", "ChangeRefused", "NotAllowed", "UnknownSetting"]
