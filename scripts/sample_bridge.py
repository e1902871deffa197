"""A sample messaging bridge: signs and posts a message, receives the signed answer.

    python scripts/sample_bridge.py --webhook http://127.0.0.1:8000/bridges/in/<id>/ \\
        --secret whsec_... --text "Remember that I take the train on Mondays" --port 8765

Give the binding the callback URL http://127.0.0.1:8765/ (or your --port). The script
listens there, verifies the answer's Standard Webhooks signature with the same secret,
prints it and exits.

As a relay for a Telegram or Slack binding it keeps listening and posts every verified
answer into the chat (and thread) the answer names:

    python scripts/sample_bridge.py --relay telegram --secret whsec_... --token <bot token>
    python scripts/sample_bridge.py --relay slack --secret whsec_... --token xoxb-...

It needs only httpx and standardwebhooks (both installed with the host). The tests
import CallbackReceiver, TelegramRelay, SlackRelay and send_message from here.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

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
    chat_id: str = "",
    thread_id: str = "",
    timestamp: int | None = None,
    body: bytes | None = None,
    timeout: float = 10.0,
) -> httpx.Response:
    """POST one message the Standard Webhooks way; `body` overrides the JSON body."""
    msg_id = msg_id or f"msg_{uuid.uuid4().hex}"
    # chat_id / thread_id: the chat (and thread) in your app; each gets its own conversation.
    named = {"chat_id": chat_id, "thread_id": thread_id}
    message = {
        "text": text,
        "sender": sender,
        **{key: value for key, value in named.items() if value},
    }
    raw = body if body is not None else json.dumps(message).encode()
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


class LocalServer(ABC):
    """A local HTTP server on its own thread, and a wait for what it has collected."""

    def __init__(self, port: int = 0) -> None:
        self._arrived = threading.Condition()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @abstractmethod
    def _handler(self) -> type[BaseHTTPRequestHandler]: ...

    @abstractmethod
    def _collected(self) -> int: ...

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def wait_for(self, count: int, timeout: float = 30.0) -> bool:
        """Wait until `count` items were collected (a deadline, not a sleep)."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while self._collected() < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._arrived.wait(left)
        return True


class CallbackReceiver(LocalServer):
    """A local HTTP server that plays the bridge's callback endpoint.

    Every POST is verified with the secret(s); `status` is what it answers (set it to
    503 to play a bridge that is down). `received` holds verified answers in arrival
    order, `ids` their webhook-ids, `rejected` requests whose signature did not match.
    """

    def __init__(
        self,
        secrets: list[str | bytes],
        *,
        port: int = 0,
        status: int = 200,
        on_answer: Callable[[dict[str, Any]], bool] | None = None,
    ) -> None:
        self.secrets = secrets
        self.status = status
        # A relay passes each verified answer on; False answers 502, so the host retries.
        self.on_answer = on_answer
        self.relayed: set[str] = set()
        self.received: list[dict[str, Any]] = []
        self.ids: list[str] = []
        self.rejected = 0
        self.attempts = 0
        super().__init__(port)

    @property
    def url(self) -> str:
        return f"{self.base_url}/"

    def _collected(self) -> int:
        return len(self.received)

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
                    msg_id = self.headers.get("webhook-id", "")
                    relay = receiver.on_answer
                    if payload is None:
                        status = 401
                    elif relay is not None and msg_id not in receiver.relayed:
                        # A repeat of an answer passed on already is acknowledged only.
                        if relay(payload):
                            receiver.relayed.add(msg_id)
                        else:
                            status = 502
                    with receiver._arrived:
                        if payload is None:
                            receiver.rejected += 1
                        elif status < 300:
                            receiver.received.append(payload)
                            receiver.ids.append(msg_id)
                            receiver._arrived.notify_all()
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        return Handler


def _answer_text(answer: dict[str, Any]) -> str:
    return str(answer.get("text") or answer.get("error") or "(no answer)")


def _platform_post(url: str, message: dict[str, Any], headers: dict[str, str]) -> bool:
    """True when the platform took the message; both answer `"ok": true` (Slack's refusals
    come as 200 with `"ok": false`)."""
    try:
        reply = httpx.post(url, json=message, headers=headers, timeout=10.0)
        return reply.status_code == 200 and reply.json().get("ok") is True
    except (httpx.HTTPError, ValueError):
        return False


class TelegramRelay(CallbackReceiver):
    """Posts each verified answer with the Bot API's sendMessage into its chat and topic."""

    def __init__(
        self, secret: str, *, bot_token: str, api: str = "https://api.telegram.org", port: int = 0
    ) -> None:
        self.endpoint = f"{api.rstrip('/')}/bot{bot_token}/sendMessage"
        super().__init__([secret], port=port, on_answer=self._send)

    def _send(self, answer: dict[str, Any]) -> bool:
        if answer.get("chat_id") is None:
            return False  # a message from a Telegram chat always names it
        message: dict[str, Any] = {"chat_id": answer["chat_id"], "text": _answer_text(answer)}
        thread = answer.get("thread_id")
        if thread is not None:
            if not str(thread).isdecimal():
                return False  # Telegram's topics are numbered
            message["message_thread_id"] = int(thread)
        return _platform_post(self.endpoint, message, {})


class SlackRelay(CallbackReceiver):
    """Posts each verified answer with the Web API's chat.postMessage into its channel and
    thread (a bot token with the chat:write scope)."""

    def __init__(
        self, secret: str, *, bot_token: str, api: str = "https://slack.com/api", port: int = 0
    ) -> None:
        self.endpoint = f"{api.rstrip('/')}/chat.postMessage"
        self.bot_token = bot_token
        super().__init__([secret], port=port, on_answer=self._send)

    def _send(self, answer: dict[str, Any]) -> bool:
        if answer.get("chat_id") is None:
            return False
        message: dict[str, Any] = {"channel": answer["chat_id"], "text": _answer_text(answer)}
        if answer.get("thread_id") is not None:
            message["thread_ts"] = answer["thread_id"]
        return _platform_post(self.endpoint, message, {"Authorization": f"Bearer {self.bot_token}"})


def _relay(args: argparse.Namespace) -> int:
    kinds = {"telegram": TelegramRelay, "slack": SlackRelay}
    relay_type = kinds[args.relay]
    extra = {"api": args.api} if args.api else {}
    relay = relay_type(args.secret, bot_token=args.token, port=args.port, **extra).start()
    print(f"Relaying answers from {relay.url} to {args.relay}; Ctrl-C stops.")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        relay.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--webhook", help="the binding's webhook address")
    parser.add_argument("--secret", required=True, help="the binding's signing secret")
    parser.add_argument("--text", help="the message to send")
    parser.add_argument("--port", type=int, default=8765, help="where to receive the answer")
    parser.add_argument("--wait", type=float, default=120.0, help="seconds to wait for it")
    parser.add_argument("--relay", choices=["telegram", "slack"], help="relay answers to it")
    parser.add_argument("--token", help="the Telegram bot token or the Slack bot token")
    parser.add_argument("--api", help="the platform's API base (for a local test server)")
    args = parser.parse_args(argv)
    if args.relay:
        if not args.token:
            parser.error("--relay needs --token")
        return _relay(args)
    if not args.webhook or not args.text:
        parser.error("--webhook and --text are needed to send a message")
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
