"""How long a sign-in is paused for one account from one client address.

django-axes counts wrong passwords per (username, address) pair and asks this for the
pause (AXES_COOLOFF_TIME): the limit's worth of tries come free, then every further
wrong password while paused doubles the pause. Nobody at another address is slowed
down, so a stranger cannot lock the owner out of their account.
"""

from __future__ import annotations

from datetime import timedelta

from axes.helpers import get_client_username
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Sum
from django.http import HttpRequest

from host.client_address import client_address

# 2**30 times any pause is far past the cap: bounds the arithmetic, not the policy.
_MAX_DOUBLINGS = 30


def pause_after(failures: int) -> timedelta:
    first = timedelta(hours=float(settings.SIGNIN_COOLOFF_HOURS))
    longest = timedelta(hours=float(settings.SIGNIN_COOLOFF_MAX_HOURS))
    doublings = min(max(0, failures - int(settings.AXES_FAILURE_LIMIT)), _MAX_DOUBLINGS)
    return min(first * (1 << doublings), longest)


def sign_in_pause(request: HttpRequest | None = None) -> timedelta:
    if request is None:  # axes' clean-up without a request: keep every pause whole
        return timedelta(hours=settings.SIGNIN_COOLOFF_MAX_HOURS)
    failures = AccessAttempt.objects.filter(
        username=get_client_username(request), ip_address=client_address(request)
    ).aggregate(total=Sum("failures_since_start"))["total"]
    return pause_after(failures or 0)
