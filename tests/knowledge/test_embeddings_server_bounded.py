"""An embeddings server is bounded as a whole, not only per read.

One that answered a byte at a time (each byte within the read timeout) held an indexing
job or a chat turn's retrieval without end, and its answer was read whatever its size.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from host import embeddings
from host.embeddings import EmbeddingUnavailable, OpenAIEmbedder


def _serve(body: bytes, pace: float) -> Iterator[str]:
    stop = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            return

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            step = 1 if pace else len(body)
            try:
                for start in range(0, len(body), step):
                    if stop.is_set():
                        return
                    self.wfile.write(body[start : start + step])
                    self.wfile.flush()
                    if pace:
                        time.sleep(pace)  # the server's own pace, as a slow server would
            except (BrokenPipeError, ConnectionResetError):
                return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        stop.set()
        server.shutdown()
        server.server_close()


@pytest.fixture
def trickling_server() -> Iterator[str]:
    yield from _serve(b'{"data": [{"index": 0, "embedding": [1.0, 0.0]}]}' + b" " * 100, 0.2)


@pytest.fixture
def huge_server() -> Iterator[str]:
    yield from _serve(b'{"data": [{"index": 0, "embedding": [' + b"0.5, " * 400_000 + b"1]}]}", 0)


def test_an_embeddings_answer_sent_a_byte_at_a_time_gives_up_within_the_timeout(
    trickling_server,
):
    started = time.monotonic()
    with pytest.raises(EmbeddingUnavailable, match="did not answer"):
        OpenAIEmbedder(
            base_url=trickling_server, model_name="m", dimension=2, timeout=1.0, attempts=1
        ).embed(["hello"])
    assert time.monotonic() - started < 4


def test_an_embeddings_answer_larger_than_the_cap_is_not_read(huge_server, monkeypatch):
    monkeypatch.setattr(embeddings, "MAX_ANSWER_BYTES", 1024 * 1024)
    embedder = OpenAIEmbedder(base_url=huge_server, model_name="m", dimension=2, attempts=1)
    with pytest.raises(EmbeddingUnavailable, match="larger than 1 MiB"):
        embedder.embed(["hello"])


def test_an_ordinary_embeddings_server_still_answers(fake_openai):
    embedder = OpenAIEmbedder(base_url=fake_openai.base_url, model_name="m")
    vectors = embedder.embed(["green tea", "black tea"])
    assert len(vectors) == 2 and len(vectors[0]) == embedder.dimension
