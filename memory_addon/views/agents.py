"""An agent's memory: the Memory tab opened at the agent's scope."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET

from accounts.auth import signed_in_user
from accounts.selectors import agent_for_user
from memory_addon.services.scopes import agent_scope_find


@login_required
@require_GET
def agent_memory(request: HttpRequest, agent_id: int) -> HttpResponse:
    agent = agent_for_user(signed_in_user(request), agent_id)
    scope = agent_scope_find(agent)  # made when the agent was saved
    if scope is None:
        return redirect("memory")
    return redirect(f"{reverse('memory')}?scope={scope.pk}")
