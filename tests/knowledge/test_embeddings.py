from __future__ import annotations

import math

import pytest

from host.embeddings import (
    EmbeddingUnavailable,
    FastembedEmbedder,
    OpenAIEmbedder,
    windows,
)
from tests.fake_openai import DIMENSION


def test_openai_provider_sends_batches_of_32(fake_openai):
    embedder = OpenAIEmbedder(base_url=fake_openai.base_url, model_name="fake-embed")
    assert embedder.dimension == DIMENSION
    vectors = embedder.embed([f"text {i}" for i in range(70)])
    assert len(vectors) == 70
    assert [len(batch) for batch in fake_openai.embedding_inputs[1:]] == [32, 32, 6]


def test_openai_provider_retries_transient_errors(fake_openai):
    embedder = OpenAIEmbedder(base_url=fake_openai.base_url, model_name="m", dimension=DIMENSION)
    fake_openai.failures = [503, 429]
    assert len(embedder.embed(["hello"])) == 1


def test_openai_provider_does_not_retry_a_client_error(fake_openai):
    embedder = OpenAIEmbedder(base_url=fake_openai.base_url, model_name="m", dimension=DIMENSION)
    fake_openai.failures = [400, 400]
    with pytest.raises(EmbeddingUnavailable, match="answered HTTP 400"):
        embedder.embed(["hello"])
    assert fake_openai.failures == [400]  # one request only


def test_openai_provider_gives_up_on_an_unreachable_server():
    with pytest.raises(EmbeddingUnavailable, match="did not answer"):
        OpenAIEmbedder(
            base_url="http://127.0.0.1:9/v1", model_name="m", dimension=3, attempts=1
        ).embed(["x"])


def test_fastembed_loads_the_packaged_minilm_folder():
    embedder = FastembedEmbedder("sentence-transformers/all-MiniLM-L6-v2")
    cat, kitten, car = embedder.embed(
        ["the cat sat on the mat", "a kitten rests on a rug", "the stock market fell today"]
    )
    assert embedder.dimension == 384 and len(cat) == 384
    assert math.isclose(sum(x * x for x in cat), 1.0, rel_tol=1e-4)
    similarity = lambda a, b: sum(x * y for x, y in zip(a, b, strict=True))  # noqa: E731
    assert similarity(cat, kitten) > similarity(cat, car) + 0.2


def test_long_texts_are_embedded_as_pooled_windows_not_truncated():
    embedder = FastembedEmbedder("sentence-transformers/all-MiniLM-L6-v2")
    head = "Kangaroos hop across the dry plains of Australia. " * 40
    tail = "The recipe needs flour, butter, sugar and two eggs. " * 40
    (pooled,) = embedder.embed([head + tail])
    (tail_only,) = embedder.embed([tail])
    (head_only,) = embedder.embed([head])
    similarity = lambda a, b: sum(x * y for x, y in zip(a, b, strict=True))  # noqa: E731
    # Truncation to the first 256 word pieces would make the tail invisible.
    assert similarity(pooled, tail_only) > 0.5
    assert similarity(pooled, head_only) > 0.5
    assert len(windows(head + tail)) > 2


def test_windows_are_embedded_shortest_first_and_returned_in_input_order(monkeypatch):
    embedder = FastembedEmbedder("sentence-transformers/all-MiniLM-L6-v2")
    texts = [f"{'alpacas graze ' * (1 + (7 * i) % 23)}herd {i}" for i in range(40)]
    alone = [embedder.embed([text])[0] for text in texts[:5]]
    seen: list[str] = []
    real = embedder._model.embed
    monkeypatch.setattr(
        embedder._model, "embed", lambda batch, **kw: seen.extend(batch) or real(batch, **kw)
    )
    vectors = embedder.embed(texts)
    # Batches of similar lengths pad less: the model sees the windows shortest first.
    assert [len(text) for text in seen] == sorted(len(text) for text in texts)
    similarity = lambda a, b: sum(x * y for x, y in zip(a, b, strict=True))  # noqa: E731
    for vector, single in zip(vectors[:5], alone, strict=True):
        assert similarity(vector, single) > 0.9999  # each text's own vector, in its place
    assert similarity(vectors[0], vectors[1]) < 0.999
