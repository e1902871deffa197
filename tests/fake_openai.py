"""A small local HTTP server speaking the OpenAI-compatible API: the only fake in the suite.

Embeddings are deterministic bag-of-words vectors (hashed words, normalized), so texts
that share words are close. Tests can script failures and hold requests at a gate.

Chat completions: each request takes the next script from `chat_replies` (default: the
content "ok"). A request with `"stream": true` is answered as server-sent events. A script
is a dict with any of:

- ``content`` (str, sent word by word) or ``deltas`` (list of str, sent as given);
- ``tool_calls``: ``[{"id", "name", "arguments"}]``, streamed with their index, arguments
  in two pieces, so several are parallel tool calls; ``arguments`` may be any string;
- ``usage``: the usage of the final chunk;
- ``status`` (with ``message``, ``code``, ``retry_after``): an error reply instead;
- ``cut_after``: drop the connection after that many content chunks;
- ``malformed_after``: send a broken ``data:`` line after that many content chunks;
- ``gate_after``: after that many content chunks set ``reached_gate`` and wait for
  ``chat_gate`` (tests release it), so a test can act while an answer is mid-stream;
- ``stall``: wait (at most that many seconds, or until ``chat_gate``) before answering;
- ``chunk_delay``: seconds between chunks, like a real model's pace.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import socket
import sys
import threading
import time
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
        self.default_reply: dict[str, Any] = {"content": "ok"}  # once chat_replies is empty
        self.chat_requests: list[dict[str, Any]] = []
        # The caller's (host, port) per request: which process on this machine asked.
        self.chat_peers: list[tuple[str, int]] = []
        self.held_peers: list[tuple[str, int]] = []
        # Hold only requests with an input containing this text (None: every request).
        self.hold_matching: str | None = None
        self.models: list[str] = ["test-model", "other-model"]  # GET /v1/models
        self.chat_gate = threading.Event()
        self.first_content_at: dict[str, float] = {}
        self.reached_gate = threading.Event()
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

    def prompt(self, request: int = -1) -> str:
        """Every message of one chat request, joined: all the model read, wherever the
        host put it."""
        messages = self.chat_requests[request]["messages"]
        return "\n\n".join(str(m.get("content") or "") for m in messages)

    def start(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.release.set()
        self.chat_gate.set()
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            # Headers and body go out as separate writes: without TCP_NODELAY, Nagle's
            # algorithm and the client's delayed ACK add ~40 ms to every answer.
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                return

            def _reply(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.endswith("/models"):
                    models = [{"id": name, "object": "model"} for name in fake.models]
                    self._reply(200, {"object": "list", "data": models})
                else:
                    self._reply(404, {"error": {"message": "unknown path"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path.endswith("/embeddings"):
                    self._embeddings(body)
                elif self.path.endswith("/chat/completions"):
                    with fake._lock:
                        fake.chat_requests.append(body)
                        fake.chat_peers.append(self.client_address[:2])
                        reply = (
                            fake.chat_replies.pop(0) if fake.chat_replies else fake.default_reply
                        )
                    if reply.get("stall"):
                        fake.reached_gate.set()
                        fake.chat_gate.wait(timeout=float(reply["stall"]))
                    if reply.get("status"):
                        self._chat_error(reply)
                    elif body.get("stream"):
                        self._chat_stream(body, reply)
                        return
                    else:
                        self._chat_plain(reply)
                else:
                    self._reply(404, {"error": {"message": "unknown path"}})

            def _chat_error(self, reply: dict[str, Any]) -> None:
                data = json.dumps(
                    {
                        "error": {
                            "message": reply.get("message", f"scripted {reply['status']}"),
                            "type": "error",
                            "code": reply.get("code"),
                        }
                    }
                ).encode()
                self.send_response(int(reply["status"]))
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if reply.get("retry_after") is not None:
                    self.send_header("Retry-After", str(reply["retry_after"]))
                self.end_headers()
                self.wfile.write(data)

            def _chunk(self, payload: str) -> None:
                data = payload.encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def _event(self, model: str, delta: dict[str, Any], finish: str | None = None) -> None:
                chunk = {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                }
                self._chunk(f"data: {json.dumps(chunk)}\n\n")

            def _chat_stream(self, body: dict[str, Any], reply: dict[str, Any]) -> None:
                model = str(body.get("model") or "fake")
                self.protocol_version = "HTTP/1.1"
                self.close_connection = True
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Connection", "close")
                self.end_headers()
                deltas = reply.get("deltas")
                if deltas is None:
                    words = str(reply.get("content", "")).split(" ")
                    deltas = [w if i == 0 else " " + w for i, w in enumerate(words) if w or i == 0]
                    deltas = [d for d in deltas if d]
                pace = float(reply.get("chunk_delay", 0))
                try:
                    self._event(model, {"role": "assistant", "content": ""})
                    for sent, delta in enumerate(deltas):
                        if reply.get("cut_after") == sent:
                            self.connection.shutdown(socket.SHUT_RDWR)
                            return
                        if reply.get("malformed_after") == sent:
                            self._chunk("data: {this is not json\n\n")
                        if reply.get("gate_after") == sent:
                            fake.reached_gate.set()
                            fake.chat_gate.wait(timeout=60)
                        if pace:
                            time.sleep(pace)
                        self._event(model, {"content": delta})
                        if sent == 0:
                            # When the model's first token left, per last message (benchmarks).
                            last = (body.get("messages") or [{}])[-1].get("content")
                            fake.first_content_at.setdefault(str(last), time.time())
                    calls = reply.get("tool_calls") or []
                    for index, call in enumerate(calls):
                        arguments = str(call.get("arguments", "{}"))
                        half = len(arguments) // 2
                        self._event(
                            model,
                            {
                                "tool_calls": [
                                    {
                                        "index": index,
                                        "id": call.get("id", f"call_{index}"),
                                        "type": "function",
                                        "function": {
                                            "name": call["name"],
                                            "arguments": arguments[:half],
                                        },
                                    }
                                ]
                            },
                        )
                        self._event(
                            model,
                            {
                                "tool_calls": [
                                    {"index": index, "function": {"arguments": arguments[half:]}}
                                ]
                            },
                        )
                    self._event(model, {}, "tool_calls" if calls else "stop")
                    usage = reply.get("usage") or {
                        "prompt_tokens": 10,
                        "completion_tokens": len(deltas),
                        "total_tokens": 10 + len(deltas),
                    }
                    final = {
                        "id": "chatcmpl-fake",
                        "object": "chat.completion.chunk",
                        "created": 0,
                        "model": model,
                        "choices": [],
                        "usage": usage,
                    }
                    self._chunk(f"data: {json.dumps(final)}\n\n")
                    self._chunk("data: [DONE]\n\n")
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    return  # the client hung up (Stop): nothing more to send

            def _chat_plain(self, reply: dict[str, Any]) -> None:
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

            def _embeddings(self, body: dict[str, Any]) -> None:
                with fake._lock:
                    if fake.failures:
                        status = fake.failures.pop(0)
                        self._reply(status, {"error": {"message": f"scripted {status}"}})
                        return
                    answered = len(fake.embedding_inputs)
                    hold = fake.hold_after is not None and answered >= fake.hold_after
                    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                    if fake.hold_matching is not None:
                        hold = hold and any(fake.hold_matching in str(t) for t in texts)
                    if hold:
                        fake.held_peers.append(self.client_address[:2])
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


def main() -> None:
    """Serve on its own, as a real model server would (the chat benchmark): the first
    argument is the reply script as JSON; prints the base URL; stops when stdin closes."""
    fake = FakeOpenAI()
    if len(sys.argv) > 1:
        fake.default_reply = json.loads(sys.argv[1])
    fake.start()
    print(fake.base_url, flush=True)
    sys.stdin.read()
    fake.stop()


if __name__ == "__main__":
    main()
