"""Settings → Messaging (bindings) and Settings → Outgoing events (endpoints, delivery log)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.auth import signed_in_user
from accounts.models import MessagingBinding, Organization
from bridges import selectors
from bridges.forms import BindingForm, EndpointForm
from bridges.outbox import event_redeliver
from bridges.services import (
    BridgeRefused,
    binding_create,
    binding_delete,
    binding_rotate_secret,
    binding_set_enabled,
    endpoint_create,
    endpoint_delete,
)
from host.show_once import show_once, take_shown


def _binding_rows(request: HttpRequest) -> list[dict[str, Any]]:
    owner = signed_in_user(request)
    return [
        {
            "binding": binding,
            "url": request.build_absolute_uri(reverse("bridges:webhook", args=[binding.public_id])),
            "deliveries": selectors.deliveries_for(binding),
        }
        for binding in selectors.bindings_for(owner)
    ]


def _messaging(
    request: HttpRequest,
    form: BindingForm,
    *,
    shown: MessagingBinding | None = None,
    secret: str = "",
    status: int = 200,
) -> HttpResponse:
    return render(
        request,
        "bridges/messaging.html",
        {
            "form": form,
            "rows": _binding_rows(request),
            "shown": shown,
            "secret": secret,
            "grace_hours": settings.BRIDGE_SECRET_GRACE_HOURS,
        },
        status=status,
    )


@login_required
@require_http_methods(["GET", "POST"])
def messaging_page(request: HttpRequest) -> HttpResponse:
    """Create a binding (its secret is shown once, in this answer), list, manage."""
    owner = signed_in_user(request)
    form = BindingForm(request.POST or None, owner=owner)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            binding, secret = binding_create(
                owner=owner,
                kind=data["kind"],
                title=data["title"],
                callback_url=data["callback_url"] or "",
                agent=data["agent"],
                ai_profile=data["ai_profile"],
                secret=data["secret"] or "",
            )
        except BridgeRefused as refusal:
            form.add_error(None, refusal.message)
        else:
            return show_once(request, "bridges:messaging", binding.pk, secret)
    once = take_shown(request, "bridges:messaging")
    if once:
        shown = selectors.binding_for(owner, once[0])
        return _messaging(request, form, shown=shown, secret=once[1])
    return _messaging(request, form, status=400 if form.errors else 200)


@login_required
@require_POST
def binding_rotate_page(request: HttpRequest, binding_id: int) -> HttpResponse:
    owner = signed_in_user(request)
    binding = selectors.binding_for(owner, binding_id)
    secret = binding_rotate_secret(binding=binding)
    return show_once(request, "bridges:messaging", binding.pk, secret)


@login_required
@require_POST
def binding_enabled_page(request: HttpRequest, binding_id: int) -> HttpResponse:
    binding = selectors.binding_for(signed_in_user(request), binding_id)
    binding_set_enabled(binding=binding, enabled=request.POST.get("enabled") == "on")
    return redirect("bridges:messaging")


@login_required
@require_POST
def binding_delete_page(request: HttpRequest, binding_id: int) -> HttpResponse:
    binding = selectors.binding_for(signed_in_user(request), binding_id)
    binding_delete(binding=binding)
    messages.success(
        request,
        _("Deleted the binding “%(name)s”. Its conversation notes stay on the Files page.")
        % {"name": binding.title},
    )
    return redirect("bridges:messaging")


@login_required
@require_GET
def binding_deliveries(request: HttpRequest, binding_id: int) -> HttpResponse:
    """The htmx partial that refreshes a binding's last deliveries."""
    binding = selectors.binding_for(signed_in_user(request), binding_id)
    return render(
        request,
        "bridges/messaging.html#deliveries",
        {"row": {"binding": binding, "deliveries": selectors.deliveries_for(binding)}},
    )


# --- Outgoing events --------------------------------------------------------------


def _admin_organization(request: HttpRequest) -> Organization | None:
    return Organization.objects.filter(
        membership__user=signed_in_user(request), membership__role="admin"
    ).first()


@login_required
@require_http_methods(["GET", "POST"])
def events_page(request: HttpRequest) -> HttpResponse:
    owner = signed_in_user(request)
    form = EndpointForm(request.POST or None)
    organization = _admin_organization(request)
    created = None
    secret = ""
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            created, secret = endpoint_create(
                owner=owner,
                url=data["url"],
                event_types=list(data["event_types"]),
                description=data["description"],
                organization=organization if data["for_organization"] else None,
            )
        except BridgeRefused as refusal:
            form.add_error(None, refusal.message)
        else:
            return show_once(request, "bridges:events", created.pk, secret)
    once = take_shown(request, "bridges:events")
    if once:
        created, secret = selectors.endpoint_for(owner, once[0]), once[1]
    rows = [
        {"endpoint": endpoint, "events": selectors.recent_events(endpoint)}
        for endpoint in selectors.endpoints_for(owner)
    ]
    return render(
        request,
        "bridges/events.html",
        {
            "form": form,
            "rows": rows,
            "created": created,
            "secret": secret,
            "organization": organization,
        },
        status=400 if form.errors else 200,
    )


@login_required
@require_POST
def endpoint_delete_page(request: HttpRequest, endpoint_id: int) -> HttpResponse:
    endpoint = selectors.endpoint_for(signed_in_user(request), endpoint_id)
    endpoint_delete(endpoint=endpoint)
    return redirect("bridges:events")


@login_required
@require_POST
def event_redeliver_page(request: HttpRequest, event_id: int) -> HttpResponse:
    event = selectors.event_for(signed_in_user(request), event_id)
    event_redeliver(event=event)
    messages.success(
        request, _("Event #%(sequence)s is queued to be sent again.") % {"sequence": event.sequence}
    )
    return redirect("bridges:events")
