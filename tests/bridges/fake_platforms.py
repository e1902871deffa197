"""Small local stand-ins for Telegram's Bot API and Slack's Web API, over real HTTP.

Each plays both halves of the platform: it sends an update (Telegram's webhook call with
the secret-token header, Slack's Events API call signed v0) to the host's webhook, and it
takes the relay's sendMessage / chat.postMessage, checking the bot token as the real API
does. `posted` holds the messages it took, in arrival order.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx

from scripts.sample_bridge import LocalServer


class _FakePlatform(LocalServer):
    def __init__(self, bot_token: str) -> None:
        self.bot_token = bot_token
        self.posted: list[dict[str, Any]] = []
        self.refused = 0
        super().__init__()

    @property
    def url(self) -> str:
        return self.base_url

    def _collected(self) -> int:
        return len(self.posted)

    def _accepts(self, path: str, headers: Any) -> bool:
        raise NotImplementedError

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        platform = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                ok = platform._accepts(self.path, self.headers)
                with platform._arrived:
                    if ok:
                        platform.posted.append(json.loads(body))
                        platform._arrived.notify_all()
                    else:
                        platform.refused += 1
                reply = {"ok": True, "result": {}} if ok else {"ok": False, "error": "invalid_auth"}
                raw = json.dumps(reply).encode()
                # Slack answers a bad token with 200 and "ok": false; Telegram with 401.
                self.send_response(200 if ok or platform._refuses_with_200 else 401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        return Handler

    _refuses_with_200 = False


class FakeTelegram(_FakePlatform):
    def _accepts(self, path: str, headers: Any) -> bool:
        return path == f"/bot{self.bot_token}/sendMessage"

    @property
    def api(self) -> str:
        return self.url

    def send_update(self, webhook_url: str, secret_token: str, update: dict) -> httpx.Response:
        """What Telegram does for a webhook set with `secret_token`."""
        return httpx.post(
            webhook_url, json=update, headers={"X-Telegram-Bot-Api-Secret-Token": secret_token}
        )


class FakeSlack(_FakePlatform):
    _refuses_with_200 = True

    def _accepts(self, path: str, headers: Any) -> bool:
        return (
            path == "/api/chat.postMessage"
            and headers.get("Authorization") == f"Bearer {self.bot_token}"
        )

    @property
    def api(self) -> str:
        return f"{self.url}/api"

    def send_event(self, webhook_url: str, signing_secret: str, payload: dict) -> httpx.Response:
        """What Slack's Events API does: the body signed v0 with the app's signing secret."""
        body = json.dumps(payload).encode()
        stamp = str(int(time.time()))
        digest = hmac.new(
            signing_secret.encode(), b"v0:" + stamp.encode() + b":" + body, hashlib.sha256
        ).hexdigest()
        headers = {
            "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": f"v0={digest}",
            "Content-Type": "application/json",
        }
        return httpx.post(webhook_url, content=body, headers=headers)
