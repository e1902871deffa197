"""Writes for accounts: each runs in one transaction."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Q
from django.db.models.functions import Now
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.models import (
    Agent,
    AIProfile,
    ApiToken,
    EstimateComplexity,
    Membership,
    MessagingBinding,
    Organization,
    SiteSettings,
    User,
)
from accounts.selectors import estimate_complexity_for
from host.compiled import CompiledQuery, model_columns, model_from_row
from host.errors import NotAllowed


def site_settings_get() -> SiteSettings:
    """A pure read: the saved site settings, or the defaults (not saved) before an admin
    changes them, so the sign-in and sign-up pages write nothing."""
    saved = SiteSettings.objects.filter(pk=1).first()
    return saved or SiteSettings(pk=1, signup_enabled=bool(settings.SIGNUP_ENABLED_DEFAULT))


def user_sign_up(*, username: str, email: str, password: str) -> User:
    """A new account from the sign-up form (already validated); its memory comes with it."""
    with transaction.atomic(durable=True):
        user = User(username=username, email=email)
        user.set_password(password)
        user.save()  # the post_save receiver makes the person's own memory scope
    return user


def agent_save(*, agent: Agent) -> Agent:
    """Save an agent the form filled in; a new one gets its memory scope in the same
    transaction (memory_addon/receivers.py), so the Memory tab and the API can show it.

    Its instructions go into every prompt of the agent: checked for secrets here too, so
    no caller that skips the form stores one."""
    agent.clean()
    with transaction.atomic(durable=True):
        agent.save()
    return agent


def organization_save(*, user: User, organization: Organization) -> Organization:
    """Save the rules and policy a form filled in; only an admin of the organization may.

    The rules go first into every member's prompt, so they are checked for secrets."""
    is_admin = Membership.objects.filter(
        organization=organization, user=user, role=Membership.Role.ADMIN
    ).exists()
    if not is_admin:
        raise PermissionDenied(_("Only an admin of the organization can change it."))
    organization.full_clean()
    with transaction.atomic(durable=True):
        organization.save()
    return organization


def estimate_complexity_set(*, user: User, mode: str) -> User:
    """The person's own "Estimate complexity"; refused while the organization locks it."""
    if mode not in EstimateComplexity.values:
        raise ValidationError({"estimate_complexity": _("Choose Off, Automatic or Always.")})
    setting = estimate_complexity_for(user)
    if setting.locked:
        raise NotAllowed(
            _(
                "estimate_complexity: %(organization)s has set and locked this setting; "
                "only an admin of the organization can change it."
            )
            % {"organization": setting.organization_name}
        )
    User.objects.filter(pk=user.pk).update(estimate_complexity=mode)
    user.estimate_complexity = mode
    return user


def agent_delete(*, agent: Agent) -> None:
    """Remove an agent; its memory scope and files go with it (cascade)."""
    with transaction.atomic(durable=True):
        agent.delete()


def ai_profile_delete(*, profile: AIProfile) -> None:
    """Remove an AI profile; conversations and bindings that used it keep their text."""
    with transaction.atomic(durable=True):
        profile.delete()


@dataclass(frozen=True)
class FirstAdmin:
    username: str
    password: str | None  # only set when the account was created just now


def first_admin_ensure(*, username: str = "admin") -> FirstAdmin | None:
    """Create an admin with a generated password when the site has no admin yet."""
    with transaction.atomic(durable=True):
        if User.objects.filter(is_superuser=True).exists():
            return None
        password = secrets.token_urlsafe(12)
        User.objects.create_superuser(username=username, email="", password=password)
    return FirstAdmin(username=username, password=password)


def ai_profile_save(
    *,
    profile: AIProfile,
    api_key: str | None,
) -> AIProfile:
    """Save a profile; an empty api_key keeps the stored one, None leaves it too."""
    with transaction.atomic(durable=True):
        if api_key:
            profile.api_key = api_key
        if profile.is_default:
            AIProfile.objects.filter(
                owner=profile.owner, role=profile.role, is_default=True
            ).exclude(pk=profile.pk).update(is_default=False)
        profile.full_clean()
        profile.save()
    return profile


def messaging_binding_create(
    *, owner: User, bridge: str, external_id: str, title: str = "", callback_url: str = ""
) -> tuple[MessagingBinding, str]:
    """Create a binding; returns it with its webhook secret, shown to the person once."""
    secret = secrets.token_urlsafe(32)
    binding = MessagingBinding(
        owner=owner, bridge=bridge, external_id=external_id, title=title, callback_url=callback_url
    )
    binding.webhook_secret = secret
    with transaction.atomic(durable=True):
        binding.full_clean()
        binding.save()
    return binding, secret


TOKEN_PREFIX = "mh_"  # noqa: S105 - a visible prefix, not a secret


def api_token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def api_token_create(
    *,
    user: User,
    name: str,
    scope: str = ApiToken.Scope.READ_WRITE,
    expires_at: datetime | None = None,
    reads_own_rule_files: bool = False,
) -> tuple[ApiToken, str]:
    """Create a personal token; the plain token is returned once and never stored."""
    if scope not in ApiToken.Scope.values:
        raise ValidationError({"scope": f"Unknown scope {scope!r}."})
    if expires_at is not None and expires_at <= timezone.now():
        raise ValidationError({"expires_at": "The expiry must lie in the future."})
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic(durable=True):
        row = ApiToken.objects.create(
            user=user,
            name=name.strip()[:100] or "token",
            prefix=token[:10],
            token_hash=api_token_hash(token),
            scope=scope,
            expires_at=expires_at,
            reads_own_rule_files=reads_own_rule_files,
        )
    return row, token


def api_token_set_reads_own_rule_files(*, token: ApiToken, on: bool) -> None:
    with transaction.atomic(durable=True):
        ApiToken.objects.filter(pk=token.pk).update(reads_own_rule_files=on)
    token.reads_own_rule_files = on


def api_token_revoke(*, token: ApiToken) -> None:
    """Revoke (the API's DELETE and the page's button): the row stays for the audit trail."""
    with transaction.atomic(durable=True):
        ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )


def api_token_find(token: str) -> ApiToken | None:
    """The live token row (with its user) for a plain token, or None.

    Revoked, expired and inactive-user tokens are None. Marks the token used.
    """
    now = timezone.now()
    row = _live_token(api_token_hash(token))
    if row is None:
        return None
    # Touch at most once a minute: a hot token must not write on every request.
    if row.last_used_at is None or now - row.last_used_at > TOKEN_TOUCH_INTERVAL:
        # After the request's transaction: a keyed write holds its one until its answer
        # is kept, and the token's row locked that long queued every other request of
        # the token behind it, each holding a pooled connection.
        transaction.on_commit(partial(_api_token_mark_used, row.pk, now), robust=True)
        row.last_used_at = now
    return row


TOKEN_TOUCH_INTERVAL = timedelta(seconds=60)

# Every API request looks its token up: compiled once per process (host/compiled.py),
# building it through the ORM was a fifth of a turn-context request's time.
_LIVE_TOKEN = CompiledQuery(
    lambda token_hash: ApiToken.objects.filter(
        Q(expires_at__isnull=True) | Q(expires_at__gt=Now()),
        token_hash=token_hash,
        revoked_at__isnull=True,
        user__is_active=True,
    ).values_list(*model_columns(ApiToken), *(f"user__{name}" for name in model_columns(User)))[:1],
    "token_hash",
)


def _live_token(token_hash: str) -> ApiToken | None:
    rows = _LIVE_TOKEN.rows(token_hash=token_hash)
    if not rows:
        return None
    row, rest = model_from_row(ApiToken, rows[0])
    user, _ = model_from_row(User, rest)
    ApiToken.user.field.set_cached_value(row, user)
    return row


def _api_token_mark_used(token_id: int, now: datetime) -> None:
    # One statement; requests of the same minute find the row touched and change nothing.
    stale = Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - TOKEN_TOUCH_INTERVAL)
    ApiToken.objects.filter(stale, pk=token_id).update(last_used_at=now)
