"""A benchmark run on its own (`python -m benchmarks.X`): its data folder, the embedded
servers and Django, set up before the benchmark imports the app."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def setup_django(data_folder: str) -> None:
    """DATA_DIR defaults to `.data/<data_folder>` of the checkout."""
    os.environ.setdefault("DATA_DIR", str(ROOT / ".data" / data_folder))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault(
        "EMBEDDING_MODEL_PATH", str(Path(os.environ["DATA_DIR"]) / "models" / "all-MiniLM-L6-v2")
    )
    sys.path.insert(0, str(ROOT))
    import django

    from host import embedded

    embedded.start()
    django.setup()
