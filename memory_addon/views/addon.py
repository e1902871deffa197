"""The Short memory add-on's own page and its on/off switch."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from accounts.auth import signed_in_user
from addons.pages import addon_details
from addons.selectors import addon_enabled, installed_addon
from memory_addon.addons import MEMORY_ADDON
from memory_addon.pages import banners_for
from memory_addon.services.user_settings import addon_set_enabled


@login_required
@require_GET
def addon_page(request: HttpRequest) -> HttpResponse:
    user = signed_in_user(request)
    state = installed_addon(MEMORY_ADDON)
    if state is None:  # built in, so always installed
        raise Http404
    return render(
        request,
        "memory/addon.html",
        {
            **addon_details(user, state),
            "enabled": addon_enabled(user=user, addon=MEMORY_ADDON),
            "is_admin": user.is_superuser,
            "banners": banners_for(user),
        },
    )


@login_required
@require_POST
def addon_toggle(request: HttpRequest) -> HttpResponse:
    enabled = request.POST.get("enabled") == "1"
    addon_set_enabled(user=signed_in_user(request), addon=MEMORY_ADDON, enabled=enabled)
    messages.success(
        request,
        _("Short memory is on.")
        if enabled
        else _("Short memory is off: the assistant reads nothing; your files are kept."),
    )
    return redirect("memory_addon_page")
