"""A small local HTTP server speaking the OpenAI-compatible API: the only fake in the suite.

Embeddings are deterministic bag-of-words vectors (hashed words, normalized), so texts
that share words are close. Tests can script failures and hold requests at a gate.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DIMENSION = 64
_WORD = re.compile(r"[a-z0-9]+")


def fake_vector(text: str, dimension: int = DIMENSION) -> list[float]:
    vector = [0.0] * dimension
    for word in _WORD.findall(text.lower()):
        bucket = int(hashlib.sha1(word.encode()).hexdigest(), 16) % dimension  # noqa: S324
        vector[bucket] += 1.0
    norm = math.sqrt(sum(x * x for x in vector))
    if not norm:
        vector[0], norm = 1.0, 1.0
    return [x / norm for x in vector]


class FakeOpenAI:
    def __init__(self) -> None:
        self.embedding_inputs: list[list[str]] = []
        self.failures: list[int] = []  # status codes to answer first, one per request
        self.hold_after: int | None = None  # hold requests after this many were answered
        self.reached_hold = threading.Event()
        self.held = 0  # requests waiting at the gate right now
        self.held_changed = threading.Condition()
        self.release = threading.Event()
        self.chat_replies: list[dict[str, Any]] = []
        self.chat_requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def embedded_texts(self) -> list[str]:
        return [
            text for batch in self.embedding_inputs for text in batch if text != "dimension probe"
        ]

    def start(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return

            def _reply(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path.endswith("/embeddings"):
                    self._embeddings(body)
                elif self.path.endswith("/chat/completions"):
                    fake.chat_requests.append(body)
                    reply = fake.chat_replies.pop(0) if fake.chat_replies else {"content": "ok"}
                    self._reply(
                        200,
                        {
                            "choices": [
                                {
                                    "index": 0,
                                    "message": {"role": "assistant", **reply},
                                    "finish_reason": "stop",
                                }
                            ]
                        },
                    )
                else:
                    self._reply(404, {"error": {"message": "unknown path"}})

            def _embeddings(self, body: dict[str, Any]) -> None:
                with fake._lock:
                    if fake.failures:
                        status = fake.failures.pop(0)
                        self._reply(status, {"error": {"message": f"scripted {status}"}})
                        return
                    answered = len(fake.embedding_inputs)
                    hold = fake.hold_after is not None and answered >= fake.hold_after
                if hold:
                    fake.reached_hold.set()
                    with fake.held_changed:
                        fake.held += 1
                        fake.held_changed.notify_all()
                    fake.release.wait(timeout=120)
                    with fake.held_changed:
                        fake.held -= 1
                inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                with fake._lock:
                    fake.embedding_inputs.append(list(inputs))
                self._reply(
                    200,
                    {
                        "object": "list",
                        "model": body.get("model"),
                        "data": [
                            {"object": "embedding", "index": i, "embedding": fake_vector(t)}
                            for i, t in enumerate(inputs)
                        ],
                    },
                )

        return Handler
