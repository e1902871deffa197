"""Typed readers for settings that come from the environment."""

from __future__ import annotations

import ipaddress
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

from host.db_pool import check_pooled_connection


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


class BadSetting(ValueError):
    """An environment value that cannot be read: start-up stops and names it."""


_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    word = value.strip().lower()
    if word not in _TRUE | _FALSE:
        raise BadSetting(f"{name}={value!r} is not a yes/no value (use true or false).")
    return word in _TRUE


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value in (None, ""):
        return default
    try:
        return int(value)
    except ValueError:
        raise BadSetting(f"{name}={value!r} is not a whole number.") from None


def env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    if value in (None, ""):
        return default
    try:
        return float(value)
    except ValueError:
        raise BadSetting(f"{name}={value!r} is not a number.") from None


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if not value:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


def env_networks(name: str) -> list[str]:
    """Comma-separated CIDR blocks or addresses, each checked at start-up."""
    entries = env_list(name, [])
    for entry in entries:
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError:
            raise BadSetting(f"{name}: {entry!r} is not an IP address or CIDR block.") from None
    return entries


def env_secret(name: str) -> str | None:
    """A secret from NAME or from the file named by NAME_FILE (Docker/Kubernetes secrets)."""
    value = os.environ.get(name)
    if value:
        return value
    file_name = os.environ.get(f"{name}_FILE")
    if file_name:
        return Path(file_name).read_text().strip()
    return None


def secret_in_data_dir(path: Path, generate: Callable[[], str] | None = None) -> str:
    """Read a generated secret from an owner-only file, creating it on first use."""
    if path.exists():
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    value = generate() if generate else secrets.token_urlsafe(50)
    # O_EXCL: two processes starting together must not each write a different secret.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text().strip()
    with os.fdopen(fd, "w") as handle:
        handle.write(value)
    return value


def database_from_url(url: str) -> dict[str, object]:
    """Django DATABASES entry from a postgres:// URL (host may be a socket folder)."""
    parsed = urlparse(url)
    query = {key: values[-1] for key, values in parse_qs(parsed.query).items()}
    host = query.pop("host", None) or unquote(parsed.hostname or "")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parsed.path.lstrip("/")),
        "USER": unquote(parsed.username or ""),
        "PASSWORD": unquote(parsed.password or ""),
        "HOST": host,
        "PORT": str(parsed.port or ""),
        # A pool instead of persistent per-thread connections: under ASGI those
        # exhausted PostgreSQL's connection limit and answered HTTP 500 under load.
        "CONN_MAX_AGE": 0,
        "OPTIONS": {
            **query,
            "pool": {
                "min_size": env_int("DATABASE_POOL_MIN", 1),
                "max_size": env_int("DATABASE_POOL_MAX", 10),
                "timeout": env_int("DATABASE_POOL_TIMEOUT", 10),
                # A pooled connection is tried before it is handed out: after PostgreSQL
                # restarts, the dead ones are replaced instead of failing a request each.
                "check": check_pooled_connection,
            },
        },
    }
