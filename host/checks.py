"""Django's deploy checks, seeing the middleware of host/inline_middleware.py.

Django finds its security, CSRF, clickjacking and session middleware in MIDDLEWARE by
their exact dotted names, so it takes our subclasses of them for missing ones: it warns
that they are missing (those three warnings are silenced in settings) and skips every
check that depends on them (HSTS, the SSL redirect, secure cookies...). Here those
checks run again with each subclass named as the Django class it extends.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.conf import settings
from django.core import checks
from django.core.checks.security import base, csrf, sessions

from host import inline_middleware

# The warning that a middleware is missing, under our own id: Django's is silenced.
OUR_IDS = {
    "security.W001": "host.W001",
    "security.W002": "host.W002",
    "security.W003": "host.W003",
}

MIDDLEWARE_CHECKS: tuple[Callable[..., list[checks.CheckMessage]], ...] = (
    base.check_security_middleware,
    base.check_xframe_options_middleware,
    base.check_sts,
    base.check_sts_include_subdomains,
    base.check_sts_preload,
    base.check_content_type_nosniff,
    base.check_ssl_redirect,
    base.check_xframe_deny,
    base.check_referrer_policy,
    base.check_cross_origin_opener_policy,
    csrf.check_csrf_middleware,
    csrf.check_csrf_cookie_secure,
    sessions.check_session_cookie_secure,
    sessions.check_session_cookie_httponly,
)


def django_names() -> dict[str, str]:
    """Each inline middleware's dotted path, mapped to the Django class it extends."""
    names = {}
    for value in vars(inline_middleware).values():
        if (
            isinstance(value, type)
            and issubclass(value, inline_middleware.InlineHooks)
            and value is not inline_middleware.InlineHooks
        ):
            django_class = value.__mro__[2]  # (the class, InlineHooks, Django's class)
            path = f"{value.__module__}.{value.__qualname__}"
            names[path] = f"{django_class.__module__}.{django_class.__qualname__}"
    return names


@checks.register(checks.Tags.security, deploy=True)
def check_security_with_inline_middleware(
    app_configs: Sequence[Any] | None, **kwargs: Any
) -> list[checks.CheckMessage]:
    from django.test.utils import override_settings  # only `check` needs it

    renamed = django_names()
    middleware = [renamed.get(path, path) for path in settings.MIDDLEWARE]
    messages: list[checks.CheckMessage] = []
    with override_settings(MIDDLEWARE=middleware):
        for check in MIDDLEWARE_CHECKS:
            messages.extend(check(app_configs))
    for message in messages:
        message.id = OUR_IDS.get(message.id or "", message.id)
    return messages
