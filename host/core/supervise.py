"""When to restart a crashed child of `manage.py serve`, and when to give up.

Pure logic: the command feeds in how long the child ran; the policy answers with a
delay before the next start, or None once the child crashed too often in a row.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class RestartPolicy:
    max_crashes: int = 5
    # A child that ran at least this long was healthy: its next crash counts as the first.
    stable_seconds: float = 60.0
    backoff_seconds: float = 1.0
    backoff_max_seconds: float = 30.0
    crashes: int = 0

    def crashed(self, *, ran_for: float) -> float | None:
        """Record a crash; the wait before restarting, or None to give up."""
        if ran_for >= self.stable_seconds:
            self.crashes = 0
        self.crashes += 1
        if self.crashes >= self.max_crashes:
            return None
        return float(min(self.backoff_max_seconds, self.backoff_seconds * 2 ** (self.crashes - 1)))


@dataclass
class ReadinessStreak:
    """Readiness that keeps failing counts as a crash: how many checks failed in a row."""

    failures_allowed: int = 3
    failures: int = 0

    def checked(self, *, ready: bool) -> bool:
        """Record one check; True once `failures_allowed` checks in a row failed."""
        self.failures = 0 if ready else self.failures + 1
        return self.failures >= self.failures_allowed
