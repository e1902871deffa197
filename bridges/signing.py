"""Signing and verifying webhooks: Standard Webhooks, Telegram's secret token, Slack's v0.

Plain functions with no Django in them, so the sample bridge script and the benchmark
use exactly what the server uses.
"""

from __future__ import annotations

import binascii
import hashlib
import hmac
import secrets
import string
import time
from collections.abc import Sequence
from datetime import UTC, datetime

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

SECRET_PREFIX = "whsec_"  # noqa: S105 - the format's visible prefix, not a secret
_ALPHABET = string.ascii_letters + string.digits


class SignatureInvalid(ValueError):
    """The request is not signed by a secret we know, or its time is off; says which."""


def new_secret() -> str:
    """A Standard Webhooks secret (`whsec_` + base64 of 24 random bytes).

    Only letters and digits: any 32 of them are valid base64, and the same string can
    be given to Telegram as its secret token (which allows A-Z, a-z, 0-9, _ and -).
    """
    return SECRET_PREFIX + "".join(secrets.choice(_ALPHABET) for _ in range(32))


def signing_key(secret: str) -> bytes:
    """The HMAC key: a `whsec_` secret is base64; any other (Slack's) is its UTF-8 bytes."""
    if secret.startswith(SECRET_PREFIX):
        return binascii.a2b_base64(secret[len(SECRET_PREFIX) :] + "==")
    return secret.encode()


def sign_headers(
    secret: str,
    *,
    msg_id: str,
    body: bytes,
    timestamp: int | None = None,
    also_signed_with: Sequence[str] = (),
) -> dict[str, str]:
    """Standard Webhooks headers for a POST of `body`.

    During a secret rotation the body is signed with the old secret too (the header holds
    space-separated signatures), so a receiver still on the old secret keeps verifying.
    """
    stamp = int(time.time()) if timestamp is None else timestamp
    when = datetime.fromtimestamp(stamp, tz=UTC)
    signatures = [
        Webhook(signing_key(key)).sign(msg_id=msg_id, timestamp=when, data=body.decode())
        for key in (secret, *also_signed_with)
    ]
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(stamp),
        "webhook-signature": " ".join(signatures),
        "content-type": "application/json",
    }


def _check_time(raw: str | None, tolerance: int) -> None:
    try:
        stamp = int(raw or "")
    except ValueError:
        raise SignatureInvalid("The timestamp header is missing or not a number.") from None
    if abs(time.time() - stamp) > tolerance:
        raise SignatureInvalid(f"The timestamp is more than {tolerance} seconds away from now.")


def verify_standard(
    candidates: list[str], body: bytes, headers: dict[str, str], *, tolerance: int
) -> str:
    """Check a Standard Webhooks request; returns its webhook-id."""
    lowered = {k.lower(): v for k, v in headers.items()}
    msg_id = lowered.get("webhook-id", "")
    if not msg_id or not lowered.get("webhook-signature"):
        raise SignatureInvalid("The webhook-id or webhook-signature header is missing.")
    if len(msg_id) > 200:
        raise SignatureInvalid("The webhook-id is longer than 200 characters.")
    _check_time(lowered.get("webhook-timestamp"), tolerance)
    for secret in candidates:
        try:
            Webhook(signing_key(secret)).verify(body, lowered, json_parse=False)
        except (WebhookVerificationError, ValueError, binascii.Error, UnicodeDecodeError):
            continue
        return msg_id
    raise SignatureInvalid("The signature does not match this binding's secret.")


def verify_telegram(candidates: list[str], token: str | None) -> None:
    """Telegram sends the secret_token given to setWebhook back in a header."""
    if not token:
        raise SignatureInvalid("The X-Telegram-Bot-Api-Secret-Token header is missing.")
    if not any(hmac.compare_digest(token.encode(), secret.encode()) for secret in candidates):
        raise SignatureInvalid("The Telegram secret token does not match this binding's secret.")


def slack_signature(secret: str, *, timestamp: str, body: bytes) -> str:
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def verify_slack(
    candidates: list[str],
    body: bytes,
    *,
    timestamp: str | None,
    signature: str | None,
    tolerance: int,
) -> None:
    """Slack's v0 scheme: HMAC-SHA256 of `v0:<timestamp>:<body>` under the signing secret."""
    if not signature:
        raise SignatureInvalid("The X-Slack-Signature header is missing.")
    _check_time(timestamp, tolerance)
    for secret in candidates:
        expected = slack_signature(secret, timestamp=timestamp or "", body=body)
        if hmac.compare_digest(expected.encode(), signature.encode()):
            return
    raise SignatureInvalid("The Slack signature does not match this binding's secret.")
