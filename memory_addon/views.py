from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from memory_addon import health


@require_GET
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    healthy, body = health.report()
    return JsonResponse(body, status=200 if healthy else 503)


def home(request: HttpRequest) -> HttpResponse:
    return redirect("chat")


@login_required
def section(request: HttpRequest, section: str) -> HttpResponse:
    return render(request, f"sections/{section}.html", {"section": section})
