from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods
from django_ratelimit.core import is_ratelimited

from accounts.auth import signed_in_user
from accounts.forms import AgentForm, AIProfileForm, ApiTokenForm, OrganizationForm, SignupForm
from accounts.models import Agent, AIProfile, ApiToken, EstimateComplexity
from accounts.probe import ConnectionProblem, server_models
from accounts.selectors import (
    agent_for_user,
    estimate_complexity_for,
    membership_of,
    profile_for_user,
    token_for_user,
)
from accounts.services import (
    agent_delete as agent_delete_service,
)
from accounts.services import (
    agent_save,
    ai_profile_save,
    api_token_create,
    api_token_revoke,
    api_token_set_reads_own_rule_files,
    estimate_complexity_set,
    organization_save,
    site_settings_get,
    user_sign_up,
)
from accounts.services import ai_profile_delete as ai_profile_delete_service
from host.errors import Refusal
from host.show_once import show_once, take_shown


class SignInView(auth_views.LoginView):
    template_name = "accounts/login.html"
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        return {**super().get_context_data(**kwargs), "signup_enabled": _signup_enabled()}

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        # Wrong passwords pause one account at one address (accounts/throttle.py); this
        # bounds one address trying many accounts.
        if is_ratelimited(
            request,
            group="signin",
            key="ip",
            rate=settings.SIGNIN_RATE,
            method="POST",
            increment=True,
        ):
            return rate_limited(request)
        return super().post(request, *args, **kwargs)


def _signup_enabled() -> bool:
    return site_settings_get().signup_enabled


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    if not _signup_enabled():
        return render(request, "accounts/signup_closed.html", status=403)
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        if _signups_exhausted(request):
            form.add_error(
                None,
                _(
                    "Too many accounts were created from your network recently. "
                    "Try again in an hour or ask an administrator."
                ),
            )
            return render(request, "accounts/signup.html", {"form": form}, status=429)
        user = user_sign_up(
            username=form.cleaned_data["username"],
            email=form.cleaned_data.get("email") or "",
            password=form.cleaned_data["password1"],
        )
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        return redirect("home")
    return render(request, "accounts/signup.html", {"form": form})


def _signups_exhausted(request: HttpRequest) -> bool:
    """Sign-ups per client address (django-ratelimit over the shared cache)."""
    return bool(
        is_ratelimited(
            request,
            group="signup",
            key="ip",
            rate=settings.SIGNUP_RATE,
            method="POST",
            increment=True,
        )
    )


def rate_limited(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return render(request, "accounts/rate_limited.html", status=429)


@login_required
@require_http_methods(["GET", "POST"])
def settings_page(request: HttpRequest) -> HttpResponse:
    user = signed_in_user(request)
    error = ""
    if request.method == "POST":
        try:
            estimate_complexity_set(user=user, mode=str(request.POST.get("estimate_complexity")))
        except (Refusal, ValidationError) as refusal:
            error = refusal.message if isinstance(refusal, Refusal) else " ".join(refusal.messages)
        else:
            messages.success(request, _("Saved your AI settings."))
            return redirect("accounts:settings")
    context = {
        "profiles": AIProfile.objects.filter(owner=user),
        "complexity": estimate_complexity_for(user),
        "complexity_choices": EstimateComplexity.choices,
        "complexity_error": error,
    }
    return render(request, "accounts/settings.html", context, status=400 if error else 200)


@login_required
@require_http_methods(["GET", "POST"])
def ai_profile_edit(request: HttpRequest, profile_id: int | None = None) -> HttpResponse:
    owner = signed_in_user(request)
    profile = profile_for_user(owner, profile_id) if profile_id else AIProfile(owner=owner)
    form = AIProfileForm(request.POST or None, instance=profile)
    if request.method == "POST" and request.POST.get("action") == "test":
        return _ai_profile_test(request, form, profile)
    if request.method == "POST" and form.is_valid():
        try:
            ai_profile_save(profile=form.save(commit=False), api_key=form.cleaned_data["api_key"])
        except ValidationError as error:
            form.add_error(None, error)
        else:
            messages.success(
                request, _("Saved the AI profile “%(name)s”.") % {"name": profile.name}
            )
            return redirect("accounts:settings")
    return render(request, "accounts/ai_profile_form.html", {"form": form, "profile": profile})


def _ai_profile_test(request: HttpRequest, form: AIProfileForm, profile: AIProfile) -> HttpResponse:
    """Test connection: list the server's models with the address and key in the form."""
    base_url = str(request.POST.get("base_url", "")).strip()
    api_key = str(request.POST.get("api_key", "")).strip() or (
        profile.api_key if profile.pk else ""
    )
    context: dict[str, Any] = {"form": form, "profile": profile, "tested": True}
    if not base_url:
        context["test_error"] = _("Enter the server address first.")
    else:
        try:
            names = server_models(base_url=base_url, api_key=api_key)
        except ConnectionProblem as problem:
            context["test_error"] = str(problem)
        else:
            context["server_models"] = names
            if names:  # the model field becomes a list of what the server offers
                typed = str(request.POST.get("model", "")).strip()
                choices = [(name, name) for name in names]
                if typed and typed not in names:
                    choices.insert(0, (typed, typed))
                form.fields["model"].widget = forms.Select(choices=choices)
    form.errors.clear()  # a test is not a save: no "this field is required" yet
    status = 200 if "server_models" in context else 400
    return render(request, "accounts/ai_profile_form.html", context, status=status)


@login_required
@require_http_methods(["POST"])
def ai_profile_delete(request: HttpRequest, profile_id: int) -> HttpResponse:
    profile = profile_for_user(signed_in_user(request), profile_id)
    name = profile.name
    ai_profile_delete_service(profile=profile)
    messages.success(request, _("Deleted the AI profile “%(name)s”.") % {"name": name})
    return redirect("accounts:settings")


@login_required
def agent_list(request: HttpRequest) -> HttpResponse:
    agents = Agent.objects.filter(owner=signed_in_user(request))
    return render(request, "accounts/agents.html", {"agents": agents})


@login_required
@require_http_methods(["GET", "POST"])
def agent_edit(request: HttpRequest, agent_id: int | None = None) -> HttpResponse:
    owner = signed_in_user(request)
    agent = agent_for_user(owner, agent_id) if agent_id else Agent(owner=owner)
    form = AgentForm(request.POST or None, instance=agent, owner=owner)
    if request.method == "POST" and form.is_valid():
        # Its memory exists from the start, so the Memory tab and the API can show it.
        saved = agent_save(agent=form.save(commit=False))
        messages.success(request, _("Saved the agent “%(name)s”.") % {"name": saved.name})
        return redirect("accounts:agent_edit", agent_id=saved.pk)
    return render(request, "accounts/agent_form.html", {"form": form, "agent": agent})


@login_required
@require_http_methods(["GET", "POST"])
def agent_delete(request: HttpRequest, agent_id: int) -> HttpResponse:
    """Asks first (a page, not only a dialog); deleting removes the agent and its memory."""
    agent = agent_for_user(signed_in_user(request), agent_id)
    if request.method == "POST":
        name = agent.name
        agent_delete_service(agent=agent)
        messages.success(
            request, _("Deleted the agent “%(name)s” and its memory.") % {"name": name}
        )
        return redirect("accounts:agents")
    return render(request, "accounts/agent_delete.html", {"agent": agent})


def signed_out(request: HttpRequest) -> HttpResponse:
    messages.success(request, _("You are signed out."))
    return redirect("accounts:login")


@login_required
@require_http_methods(["GET", "POST"])
def api_tokens_page(request: HttpRequest) -> HttpResponse:
    """Settings → API tokens: create (the token is shown once, in this answer), list, revoke."""
    owner = signed_in_user(request)
    form = ApiTokenForm(request.POST or None)
    created: tuple[ApiToken, str] | None = None
    if request.method == "POST" and form.is_valid():
        try:
            token, secret = api_token_create(
                user=owner,
                name=form.cleaned_data["name"],
                scope=form.cleaned_data["scope"],
                expires_at=form.expires_at(),
                reads_own_rule_files=form.cleaned_data["reads_own_rule_files"],
            )
        except ValidationError as error:
            form.add_error(None, error)
        else:
            return show_once(request, "accounts:api_tokens", token.pk, secret)
    once = take_shown(request, "accounts:api_tokens")
    if once:
        created = token_for_user(owner, once[0]), once[1]
    tokens = ApiToken.objects.filter(user=owner)
    response = render(
        request,
        "accounts/api_tokens.html",
        {
            "form": form,
            "tokens": tokens,
            "created": created[0] if created else None,
            "created_token": created[1] if created else "",
            "now": timezone.now(),
            "api_base": request.build_absolute_uri("/api/"),
            "mcp_url": request.build_absolute_uri("/mcp/"),
        },
        status=400 if form.errors else 200,
    )
    return response


@login_required
@require_http_methods(["POST"])
def api_token_rule_files_page(request: HttpRequest, token_id: int) -> HttpResponse:
    token = token_for_user(signed_in_user(request), token_id)
    on = request.POST.get("reads_own_rule_files") == "on"
    api_token_set_reads_own_rule_files(token=token, on=on)
    messages.success(
        request,
        (
            _("“%(name)s” reads its own rule files: its turn context leaves reference files out.")
            if on
            else _("“%(name)s” gets your approved reference files in its turn context.")
        )
        % {"name": token.name},
    )
    return redirect("accounts:api_tokens")


@login_required
@require_http_methods(["POST"])
def api_token_revoke_page(request: HttpRequest, token_id: int) -> HttpResponse:
    token = token_for_user(signed_in_user(request), token_id)
    api_token_revoke(token=token)
    messages.success(
        request, _("Revoked the token “%(name)s”. It no longer works.") % {"name": token.name}
    )
    return redirect("accounts:api_tokens")


@login_required
@require_http_methods(["GET", "POST"])
def organization_page(request: HttpRequest) -> HttpResponse:
    """The person's organization: its rules and policy; its admins change them here."""
    user = signed_in_user(request)
    membership = membership_of(user)
    if membership is None:
        return render(request, "accounts/organization.html", {"membership": None})
    organization = membership.organization
    is_admin = membership.role == membership.Role.ADMIN
    if request.method == "POST" and not is_admin:
        raise PermissionDenied(_("Only an admin of the organization can change it."))
    form = OrganizationForm(request.POST or None, instance=organization) if is_admin else None
    if form is not None and request.method == "POST" and form.is_valid():
        try:
            organization_save(user=user, organization=form.save(commit=False))
        except ValidationError as error:
            form.add_error(None, error)
        else:
            messages.success(request, _("Saved the organization's rules and policy."))
            return redirect("accounts:organization")
    context = {
        "membership": membership,
        "organization": organization,
        "is_admin": is_admin,
        "form": form,
    }
    return render(request, "accounts/organization.html", context)
