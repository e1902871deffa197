from __future__ import annotations

from tests.knowledge.conftest import sample_folder

__all__ = ["sample_folder"]
