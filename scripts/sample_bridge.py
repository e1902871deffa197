"""A sample messaging bridge: signs and posts a message, receives the signed answer.

    python scripts/sample_bridge.py --webhook http://127.0.0.1:8000/bridges/in/<id>/ \\
        --secret whsec_... --text "Remember that I take the train on Mondays" --port 8765

Give the binding the callback URL http://127.0.0.1:8765/ (or your --port). The script
listens there, verifies the answer's Standard Webhooks signature with the same secret,
prints it and exits. It needs only httpx and standardwebhooks (both installed with the
host). The tests import CallbackReceiver and send_message from here.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
from standardwebhooks.webhooks import Webhook, WebhookVerificationError


def _webhook(secret: str | bytes) -> Webhook:
    """A `whsec_…` secret as text; a Slack binding's signing secret as its own bytes."""
    return Webhook(secret)


def send_message(
    webhook_url: str,
    secret: str,
    text: str,
    *,
    msg_id: str | None = None,
    sender: str = "sample-bridge",
    timestamp: int | None = None,
    body: bytes | None = None,
    timeout: float = 10.0,
) -> httpx.Response:
    """POST one message the Standard Webhooks way; `body` overrides the JSON body."""
    msg_id = msg_id or f"msg_{uuid.uuid4().hex}"
    raw = body if body is not None else json.dumps({"text": text, "sender": sender}).encode()
    stamp = int(time.time()) if timestamp is None else timestamp
    signature = _webhook(secret).sign(
        msg_id=msg_id, timestamp=datetime.fromtimestamp(stamp, tz=UTC), data=raw.decode()
    )
    headers = {
        "webhook-id": msg_id,
        "webhook-timestamp": str(stamp),
        "webhook-signature": signature,
        "content-type": "application/json",
    }
    return httpx.post(webhook_url, content=raw, headers=headers, timeout=timeout)


class CallbackReceiver:
    """A local HTTP server that plays the bridge's callback endpoint.

    Every POST is verified with the secret(s); `status` is what it answers (set it to
    503 to play a bridge that is down). `received` holds verified answers in arrival
    order, `ids` their webhook-ids, `rejected` requests whose signature did not match.
    """

    def __init__(self, secrets: list[str | bytes], *, port: int = 0, status: int = 200) -> None:
        self.secrets = secrets
        self.status = status
        self.received: list[dict[str, Any]] = []
        self.ids: list[str] = []
        self.rejected = 0
        self.attempts = 0
        self._arrived = threading.Condition()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/"

    def start(self) -> CallbackReceiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def wait_for(self, count: int, timeout: float = 30.0) -> bool:
        """Wait until `count` verified answers arrived (a deadline, not a sleep)."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while len(self.received) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._arrived.wait(left)
        return True

    def _verify(self, body: bytes, headers: dict[str, str]) -> Any:
        for secret in self.secrets:
            try:
                return _webhook(secret).verify(body, headers)
            except WebhookVerificationError:
                continue
        return None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                with receiver._arrived:
                    receiver.attempts += 1
                status = receiver.status
                if 200 <= status < 300:
                    payload = receiver._verify(body, dict(self.headers.items()))
                    with receiver._arrived:
                        if payload is None:
                            receiver.rejected += 1
                            status = 401
                        else:
                            receiver.received.append(payload)
                            receiver.ids.append(self.headers.get("webhook-id", ""))
                            receiver._arrived.notify_all()
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--webhook", required=True, help="the binding's webhook address")
    parser.add_argument("--secret", required=True, help="the binding's signing secret")
    parser.add_argument("--text", required=True, help="the message to send")
    parser.add_argument("--port", type=int, default=8765, help="where to receive the answer")
    parser.add_argument("--wait", type=float, default=120.0, help="seconds to wait for it")
    args = parser.parse_args(argv)
    receiver = CallbackReceiver([args.secret], port=args.port).start()
    try:
        response = send_message(args.webhook, args.secret, args.text)
        print(f"Sent: {response.status_code} {response.text}")
        if response.status_code >= 300:
            return 1
        if not receiver.wait_for(1, timeout=args.wait):
            print("No answer arrived in time (is the callback URL set to this port?)")
            return 2
        answer = receiver.received[0]
        print(f"Answer ({receiver.ids[0]}):\n{answer.get('text') or answer.get('error')}")
        return 0
    finally:
        receiver.stop()


if __name__ == "__main__":
    sys.exit(main())
