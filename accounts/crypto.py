"""Secrets at rest: Fernet under the keys in settings.ENCRYPTION_KEYS (newest first)."""

from __future__ import annotations

from functools import cache

from cryptography.fernet import Fernet, MultiFernet
from django.conf import settings


@cache
def _fernet() -> MultiFernet:
    return MultiFernet([Fernet(key.encode()) for key in settings.ENCRYPTION_KEYS])


def encrypt(plain: str) -> str:
    return _fernet().encrypt(plain.encode()).decode()


def decrypt(token: str) -> str:
    return _fernet().decrypt(token.encode()).decode()
