"""The packaged local model is the offline default: no variable, no download (B5)."""

from __future__ import annotations

import pytest

from host import embeddings
from host.embeddings import EmbeddingUnavailable, FastembedEmbedder
from host.local_model import PACKAGED_MODEL


@pytest.fixture
def fresh_start(settings, tmp_path, monkeypatch):
    settings.DATA_DIR = tmp_path
    settings.EMBEDDING_MODEL_PATH = ""
    monkeypatch.setattr(embeddings, "_models", {})
    monkeypatch.setattr(embeddings, "_failures", {})
    return tmp_path


def test_a_fresh_start_with_no_variables_uses_the_packaged_model(fresh_start, monkeypatch):
    loads = []
    real = embeddings._model_folder
    monkeypatch.setattr(embeddings, "_model_folder", lambda name: loads.append(name) or real(name))
    embedder = FastembedEmbedder(PACKAGED_MODEL)
    (vector,) = embedder.embed(["alpacas live in the Andes"])
    assert embedder.dimension == len(vector) == 384
    assert (fresh_start / "models" / "all-MiniLM-L6-v2" / "model.onnx").exists()
    # Loaded once per process and kept.
    assert FastembedEmbedder(PACKAGED_MODEL)._model is embedder._model
    assert loads == [PACKAGED_MODEL]


def test_another_model_without_a_folder_is_refused_at_once_not_downloaded(fresh_start):
    with pytest.raises(EmbeddingUnavailable, match="never downloaded"):
        FastembedEmbedder("BAAI/bge-small-en-v1.5")
