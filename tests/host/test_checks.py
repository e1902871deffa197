"""Django's deploy checks still guard the middleware we replaced with inline subclasses."""

from __future__ import annotations

from django.conf import settings
from django.test import override_settings

from host.checks import check_security_with_inline_middleware


def _ids() -> set[str]:
    return {message.id or "" for message in check_security_with_inline_middleware(None)}


def _without(path: str) -> list[str]:
    assert path in settings.MIDDLEWARE
    return [entry for entry in settings.MIDDLEWARE if entry != path]


@override_settings(
    SECURE_HSTS_SECONDS=31536000,
    SECURE_HSTS_INCLUDE_SUBDOMAINS=True,
    SECURE_HSTS_PRELOAD=True,
    SECURE_SSL_REDIRECT=True,
    SESSION_COOKIE_SECURE=True,
    CSRF_COOKIE_SECURE=True,
)
def test_a_production_configuration_passes_the_checks_of_the_replaced_middleware():
    assert _ids() == set()


@override_settings(SECURE_HSTS_SECONDS=0, SECURE_SSL_REDIRECT=False)
def test_the_checks_django_skips_for_our_security_middleware_still_run():
    ids = _ids()
    assert {"security.W004", "security.W008"} <= ids


@override_settings(SESSION_COOKIE_SECURE=False, CSRF_COOKIE_SECURE=False)
def test_insecure_cookies_are_reported_through_our_session_and_csrf_middleware():
    ids = _ids()
    assert "security.W012" in ids
    assert "security.W016" in ids


def test_a_missing_security_middleware_is_reported_under_our_own_id():
    with override_settings(MIDDLEWARE=_without("host.inline_middleware.SecurityMiddleware")):
        assert "host.W001" in _ids()
    with override_settings(MIDDLEWARE=_without("host.inline_middleware.CsrfViewMiddleware")):
        assert "host.W003" in _ids()
    with override_settings(MIDDLEWARE=_without("host.inline_middleware.XFrameOptionsMiddleware")):
        assert "host.W002" in _ids()
