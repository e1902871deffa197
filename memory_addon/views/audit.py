"""The audit page: what was saved without asking, newest first."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from accounts.auth import signed_in_user
from memory_addon.models import ChangeSet
from memory_addon.selectors import change_sets_for_user
from memory_addon.services.scopes import scope_folder


@login_required
@require_GET
def audit_page(request: HttpRequest) -> HttpResponse:
    change_sets = list(
        change_sets_for_user(signed_in_user(request))
        .filter(origin=ChangeSet.Origin.AUTOMATIC)
        .select_related("scope__agent", "scope__binding")[:200]
    )
    rows = [(cs, scope_folder(cs.scope)) for cs in change_sets]
    return render(request, "memory/audit.html", {"rows": rows})
