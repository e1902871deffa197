"""Add-on pages: the library, one add-on's page, removal, and sandboxed add-on pages (H5)."""

from __future__ import annotations

import mimetypes
import secrets

from csp.decorators import csp
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.clickjacking import xframe_options_sameorigin
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.auth import signed_in_user
from addons.builtins import BUILTINS
from addons.core.package import MAX_PACKAGE_BYTES
from addons.core.update import UpdatePlan
from addons.models import HOST_SKILLS, AddonFile
from addons.pages import addon_details
from addons.selectors import (
    AddonState,
    SkillView,
    addon_log,
    installed_addon,
    installed_addons,
    offered_addons,
    person_skill,
    person_skills,
    switched_off_by,
    user_enabled,
)
from addons.services import (
    Installed,
    UpdateChoice,
    addon_entry_point_plan,
    addon_install_entry_point,
    addon_install_zip,
    addon_removal_plan,
    addon_remove,
    addon_set_enabled,
    addon_user_set_enabled,
    addon_zip_plan,
    host_skill_create,
    host_skill_delete,
    host_skill_opened,
    skill_rules_save,
    skill_tags_set,
)
from host.errors import Refusal

# Add-on pages run in a sandboxed iframe with an opaque origin and may not connect
# anywhere: their script cannot use the person's session on the host. The only way out
# is postMessage to the host page, which answers sdk.userSettings for that add-on alone.
SANDBOX_CSP = {
    "default-src": ["'none'"],
    "script-src": ["'self'"],
    "style-src": ["'self'", "'unsafe-inline'"],
    "img-src": ["'self'", "data:"],
    "font-src": ["'self'"],
    "connect-src": ["'none'"],
    "form-action": ["'none'"],
    "base-uri": ["'none'"],
    "frame-ancestors": ["'self'"],
    "sandbox": ["allow-scripts"],
}
# An uploaded update waits here while the administrator reads what it changes.
_UPLOAD_KEY = "addons:upload:{user}:{token}"
_UPLOAD_SECONDS = 15 * 60
_TYPES = {".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}


def _state_or_404(addon_id: str) -> AddonState:
    state = installed_addon(addon_id)
    if state is None:
        raise Http404
    return state


@login_required
@require_GET
def library(request: HttpRequest) -> HttpResponse:
    user = signed_in_user(request)
    off = switched_off_by(user)
    states = installed_addons()
    installed = [(state, user_enabled(state, off)) for state in states]
    versions = {state.id: state.manifest.version for state in states}
    offered = offered_addons(versions) if user.is_superuser else []
    return render(
        request,
        "addons/library.html",
        {
            "installed": installed,
            "offered": offered,
            "is_admin": user.is_superuser,
            "max_kib": MAX_PACKAGE_BYTES // 1024,
        },
    )


def _choice(request: HttpRequest) -> UpdateChoice:
    return UpdateChoice(
        update=request.POST.get("update") == "1",
        consent=frozenset(request.POST.getlist("consent")),
        downgrade=request.POST.get("downgrade") == "1",
    )


def _installed(request: HttpRequest, installed: Installed) -> HttpResponse:
    plan = installed.plan
    if plan.direction == "new":
        messages.success(
            request,
            _("Installed %(addon_id)s. It is off until you turn it on.")
            % {"addon_id": plan.addon_id},
        )
    else:
        messages.success(
            request,
            _("Updated %(name)s to version %(version)s; everyone's settings were kept.")
            % {"name": plan.name, "version": plan.to_version},
        )
    return redirect("addons:detail", addon_id=plan.addon_id)


def _confirm_update(request: HttpRequest, plan: UpdatePlan, **form: str) -> HttpResponse:
    return render(request, "addons/update_confirm.html", {"plan": plan, "form": form})


@login_required
@require_POST
def install_upload(request: HttpRequest) -> HttpResponse:
    user = signed_in_user(request)
    # An update's confirmation posts back the token of the package uploaded before it.
    token = request.POST.get("token", "")
    if token:
        data = cache.get(_UPLOAD_KEY.format(user=user.pk, token=token[:64]))
        if data is None:
            messages.error(request, _("That upload has expired; upload the package again."))
            return redirect("addons:library")
    else:
        upload = request.FILES.get("package")
        if upload is None:
            messages.error(request, _("Choose an add-on package (.zip) to install."))
            return redirect("addons:library")
        if upload.size is not None and upload.size > MAX_PACKAGE_BYTES:
            messages.error(
                request,
                _("The package is %(size)s KiB; at most %(limit)s KiB is allowed.")
                % {"size": (upload.size + 1023) // 1024, "limit": MAX_PACKAGE_BYTES // 1024},
            )
            return redirect("addons:library")
        data = upload.read()
    try:
        choice = _choice(request)
        if not choice.update:
            plan = addon_zip_plan(user=user, data=data)
            if plan.direction != "new":
                token = secrets.token_urlsafe(24)
                cache.set(_UPLOAD_KEY.format(user=user.pk, token=token), data, _UPLOAD_SECONDS)
                return _confirm_update(request, plan, token=token)
        installed = addon_install_zip(user=user, data=data, choice=choice)
    except Refusal as refusal:
        messages.error(request, _("Not installed: %(message)s") % {"message": refusal.message})
        return redirect("addons:library")
    if token:
        cache.delete(_UPLOAD_KEY.format(user=user.pk, token=token[:64]))
    return _installed(request, installed)


@login_required
@require_POST
def install_entry_point(request: HttpRequest) -> HttpResponse:
    user = signed_in_user(request)
    name = request.POST.get("name", "")[:200]
    try:
        choice = _choice(request)
        if not choice.update:
            plan = addon_entry_point_plan(user=user, name=name)
            if plan.direction != "new":
                return _confirm_update(request, plan, name=name)
        installed = addon_install_entry_point(user=user, name=name, choice=choice)
    except Refusal as refusal:
        messages.error(request, _("Not installed: %(message)s") % {"message": refusal.message})
        return redirect("addons:library")
    return _installed(request, installed)


@login_required
@require_GET
def log(request: HttpRequest) -> HttpResponse:
    """Administrators: what happened to add-ons here, newest first (one add-on with ?addon=)."""
    if not signed_in_user(request).is_superuser:
        raise Http404
    addon_id = request.GET.get("addon", "")[:200]
    return render(
        request,
        "addons/log.html",
        {"entries": addon_log(addon_id=addon_id), "addon_id": addon_id},
    )


@login_required
@require_GET
def detail(request: HttpRequest, addon_id: str) -> HttpResponse:
    if builtin := BUILTINS.get(addon_id):
        return redirect(builtin.page)
    user = signed_in_user(request)
    state = _state_or_404(addon_id)
    return render(
        request,
        "addons/detail.html",
        {**addon_details(user, state), "is_admin": user.is_superuser},
    )


def _back(request: HttpRequest, addon_id: str, skill: str = "") -> HttpResponse:
    if addon_id == HOST_SKILLS:
        return redirect("addons:skill", addon_id=addon_id, name=skill)
    if builtin := BUILTINS.get(addon_id):
        return redirect(builtin.page)
    return redirect("addons:detail", addon_id=addon_id)


@login_required
@require_POST
def set_enabled(request: HttpRequest, addon_id: str) -> HttpResponse:
    enabled = request.POST.get("enabled") == "1"
    try:
        addon_set_enabled(user=signed_in_user(request), addon_id=addon_id, enabled=enabled)
    except Refusal as refusal:
        if refusal.status == 404:
            raise Http404 from None
        messages.error(request, refusal.message)
        return _back(request, addon_id)
    messages.success(
        request,
        _("The add-on is on for this server.")
        if enabled
        else "The add-on is off for everyone: nothing of it is read; its files are kept.",
    )
    return _back(request, addon_id)


@login_required
@require_POST
def set_enabled_for_me(request: HttpRequest, addon_id: str) -> HttpResponse:
    enabled = request.POST.get("enabled") == "1"
    try:
        addon_user_set_enabled(user=signed_in_user(request), addon_id=addon_id, enabled=enabled)
    except Refusal as refusal:
        if refusal.status == 404:
            raise Http404 from None
        messages.error(request, refusal.message)
        return _back(request, addon_id)
    messages.success(
        request,
        _("The add-on is on for you.")
        if enabled
        else "The add-on is off for you: nothing of it is read; its files and your settings "
        "are kept.",
    )
    return _back(request, addon_id)


@login_required
@require_http_methods(["GET", "POST"])
def remove(request: HttpRequest, addon_id: str) -> HttpResponse:
    user = signed_in_user(request)
    try:
        plan = addon_removal_plan(addon_id=addon_id)
    except Refusal as refusal:
        if refusal.status == 404:
            raise Http404 from None
        messages.error(request, refusal.message)
        return _back(request, addon_id)
    if request.method == "POST":
        try:
            addon_remove(user=user, addon_id=addon_id)
        except Refusal as refusal:
            messages.error(request, refusal.message)
            return _back(request, addon_id)
        messages.success(
            request,
            _(
                "Removed %(name)s. Kept: %(kept_settings)s setting value(s), "
                "%(kept_rules)s skill rule set(s) and everyone's files."
            )
            % {
                "name": plan.name,
                "kept_settings": plan.kept_settings,
                "kept_rules": plan.kept_rules,
            },
        )
        return redirect("addons:library")
    return render(
        request, "addons/remove_confirm.html", {"plan": plan, "is_admin": user.is_superuser}
    )


@login_required
@require_POST
def rules_save(request: HttpRequest, addon_id: str, skill: str) -> HttpResponse:
    try:
        skill_rules_save(
            user=signed_in_user(request),
            addon_id=addon_id,
            skill=skill,
            text=request.POST.get("text", "")[:8000],
        )
    except Refusal as refusal:
        if refusal.status == 404:
            raise Http404 from None
        messages.error(request, _("Rules not saved: %(message)s") % {"message": refusal.message})
        return _back(request, addon_id, skill)
    messages.success(request, _("Saved the learned rules of %(skill)s.") % {"skill": skill})
    return _back(request, addon_id, skill)


def _active_for(request: HttpRequest, addon_id: str) -> AddonState:
    state = installed_addon(addon_id)
    if state is None or not user_enabled(state, switched_off_by(signed_in_user(request))):
        raise Http404  # off for this person: its pages are not read either
    return state


@login_required
@require_GET
def page_frame(request: HttpRequest, addon_id: str, number: int) -> HttpResponse:
    state = _active_for(request, addon_id)
    if not 0 <= number < len(state.manifest.pages):
        raise Http404
    return render(
        request,
        "addons/page_frame.html",
        {"manifest": state.manifest, "page": state.manifest.pages[number]},
    )


@xframe_options_sameorigin
@csp(SANDBOX_CSP)  # type: ignore[arg-type]
@require_GET
def package_file(request: HttpRequest, addon_id: str, path: str) -> HttpResponse:
    """A file of an add-on's package, served with the sandbox policy (never as the host).

    A page needs a signed-in person who has the add-on on. Its scripts, styles and images
    are requested from the sandbox's opaque origin, which carries no session cookie, so
    they are served while the add-on is on for the server (like the host's static files).
    """
    kind = path.lower()
    if kind.endswith(".html"):
        if not request.user.is_authenticated:
            raise Http404
        _active_for(request, addon_id)
    else:
        state = installed_addon(addon_id)
        if state is None or not state.enabled:
            raise Http404
    row = AddonFile.objects.filter(addon__addon_id=addon_id, path=path).only("content").first()
    if row is None or kind.endswith(".md"):  # context files go to the model, not the browser
        raise Http404
    suffix = path[path.rfind(".") :].lower() if "." in path else ""
    content_type = _TYPES.get(suffix) or mimetypes.guess_type(path)[0] or "application/octet-stream"
    if content_type.startswith("text/") or content_type.endswith(("json", "javascript")):
        content_type += "; charset=utf-8"
    return HttpResponse(bytes(row.content), content_type=content_type)


# --- Skills (M21) ---------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def skills_page(request: HttpRequest) -> HttpResponse:
    """Every skill of the person, with its rules chip and the NEW badge; a form for a new one."""
    user = signed_in_user(request)
    if request.method == "POST":
        try:
            skill = host_skill_create(
                user=user,
                name=request.POST.get("name", "").strip()[:40],
                title=request.POST.get("title", "")[:80],
                instructions=request.POST.get("instructions", "")[:4000],
            )
        except Refusal as refusal:
            messages.error(
                request, _("The skill was not made: %(message)s") % {"message": refusal.message}
            )
        else:
            return redirect("addons:skill", addon_id=HOST_SKILLS, name=skill.name)
    return render(request, "addons/skills.html", {"skills": person_skills(user)})


def _skill_or_404(request: HttpRequest, addon_id: str, name: str) -> SkillView:
    try:
        return person_skill(signed_in_user(request), addon_id, name)
    except Refusal:
        raise Http404 from None


@login_required
@require_GET
def skill_page(request: HttpRequest, addon_id: str, name: str) -> HttpResponse:
    skill = _skill_or_404(request, addon_id, name)
    was_new = skill.is_new
    if skill.host_skill is not None:
        # Opening it is what the "NEW" badge waits for (a column, never a new row).
        host_skill_opened(skill=skill.host_skill)
    return render(request, "addons/skill.html", {"skill": skill, "was_new": was_new})


@login_required
@require_POST
def skill_tags(request: HttpRequest, addon_id: str, name: str) -> HttpResponse:
    skill = _skill_or_404(request, addon_id, name)
    topics = request.POST.get("topics", "")[:1000].split(",")
    try:
        skill_tags_set(user=signed_in_user(request), addon_id=addon_id, skill=name, topics=topics)
    except Refusal as refusal:
        messages.error(request, _("Topics not saved: %(message)s") % {"message": refusal.message})
    else:
        messages.success(request, _("Saved the topics of %(skill)s.") % {"skill": skill.title})
    return redirect("addons:skill", addon_id=addon_id, name=name)


@login_required
@require_POST
def skill_delete(request: HttpRequest, addon_id: str, name: str) -> HttpResponse:
    skill = _skill_or_404(request, addon_id, name)
    if skill.host_skill is None:
        raise Http404
    host_skill_delete(skill=skill.host_skill, source="page")
    messages.success(
        request,
        _("Deleted the skill %(skill)s and its rules; undo it in the history to get them back.")
        % {"skill": skill.title},
    )
    return redirect("addons:skills")
