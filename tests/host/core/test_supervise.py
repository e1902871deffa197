"""The restart policy of manage.py serve: backoff, give up, reset after a healthy run;
readiness that keeps failing."""

from __future__ import annotations

from host.core.supervise import ReadinessStreak, RestartPolicy


def test_the_pause_doubles_up_to_the_maximum():
    policy = RestartPolicy(max_crashes=10, backoff_seconds=1, backoff_max_seconds=5)
    delays = [policy.crashed(ran_for=0.1) for _ in range(5)]
    assert delays == [1, 2, 4, 5, 5]


def test_five_crashes_in_a_row_give_up():
    policy = RestartPolicy(max_crashes=5)
    delays = [policy.crashed(ran_for=0.1) for _ in range(5)]
    assert None not in delays[:4]
    assert delays[4] is None


def test_a_child_that_stayed_up_starts_counting_again():
    policy = RestartPolicy(max_crashes=3, stable_seconds=60, backoff_seconds=1)
    assert policy.crashed(ran_for=1) == 1
    assert policy.crashed(ran_for=1) == 2
    assert policy.crashed(ran_for=61) == 1  # it ran long enough: a first crash again
    assert policy.crashed(ran_for=1) == 2
    assert policy.crashed(ran_for=1) is None


def test_readiness_counts_as_failed_only_after_checks_fail_in_a_row():
    streak = ReadinessStreak(failures_allowed=3)
    answers = [streak.checked(ready=ready) for ready in (False, False, True, False, False)]
    assert answers == [False] * 5  # a passing check starts the count again
    assert streak.checked(ready=False) is True
