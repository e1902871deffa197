"""A module imported on its first attribute access.

For a large library that only some processes of a host use: every process that imports
the app would otherwise hold it (docs/benchmarks.md, "Footprint"). Not the standard
library's LazyLoader: before Python 3.12.3 two threads touching its module at once could
see it half loaded, and a chat worker's threads do exactly that."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class LazyModule:
    """Stands for the module `name`; the import runs on the first attribute read
    (import_module is thread-safe: a second thread waits for the first's import)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attribute: str) -> Any:
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attribute)


def lazy_module(name: str) -> Any:
    return LazyModule(name)
