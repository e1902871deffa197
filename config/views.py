"""Project pages: health checks, the home redirect, the theme switch, the error pages and
the site icon."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST
from django.views.defaults import page_not_found

from config.theme import THEME_COOKIE, THEME_COOKIE_AGE, THEMES
from host import health


@require_GET
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness: the process answers and reaches its database and Redis."""
    healthy, body = health.report()
    return JsonResponse(body, status=200 if healthy else 503)


@require_GET
@never_cache
def readyz(request: HttpRequest) -> JsonResponse:
    """Readiness: also a Celery worker answers, so jobs will run."""
    healthy, body = health.report(ready=True)
    return JsonResponse(body, status=200 if healthy else 503)


def home(request: HttpRequest) -> HttpResponse:
    return redirect("chat")


@require_POST
def set_theme(request: HttpRequest) -> HttpResponse:
    """The theme switch beside the language switch: back to the page it was sent from."""
    theme = request.POST.get("theme", "")
    if theme not in THEMES:
        return HttpResponseBadRequest(
            _("theme must be one of: %(choices)s.") % {"choices": ", ".join(THEMES)},
            content_type="text/plain; charset=utf-8",
        )
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        target = "/"
    response = redirect(target)
    response.set_cookie(
        THEME_COOKIE,
        theme,
        max_age=THEME_COOKIE_AGE,
        samesite="Lax",
        secure=request.is_secure(),
        httponly=True,
    )
    return response


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """An address that leads nowhere: API and MCP clients get JSON, people the page."""
    if request.path_info.startswith(("/api/", "/mcp/")):
        return JsonResponse({"detail": "Not found."}, status=404)
    return page_not_found(request, exception)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """A request Django could not read (too many files or fields, broken data): say why.

    API and MCP clients read JSON, so they get the reason as `detail`, not a web page.
    """
    if request.path_info.startswith(("/api/", "/mcp/")):
        if isinstance(exception, RequestDataTooBig):
            detail = _(
                "The request body is larger than the limit of %(size)s KiB; send less at a time."
            ) % {"size": settings.DATA_UPLOAD_MAX_MEMORY_SIZE // 1024}
        elif isinstance(exception, TooManyFilesSent):
            detail = _(
                "The request holds more than %(files)s files; send at most %(files)s at a time."
            ) % {"files": settings.DATA_UPLOAD_MAX_NUMBER_FILES}
        elif "header size" in str(exception):  # Django's 1,024 bytes of one part's headers
            detail = _(
                "A file's name is too long to be read (a part's headers hold at most "
                "1,024 bytes); rename it to something shorter."
            )
        elif isinstance(exception, TooManyFieldsSent):
            detail = _("The request holds more than %(fields)s fields; send fewer at a time.") % {
                "fields": settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
            }
        else:
            detail = _("The request could not be read: it holds too many fields or broken data.")
        return JsonResponse({"detail": detail}, status=400)
    context = {"max_files": settings.DATA_UPLOAD_MAX_NUMBER_FILES}
    return render(request, "400.html", context, status=400)


def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask for /favicon.ico on their own: the site's icon, not a 404."""
    return redirect(static("favicon.svg"), permanent=True)
