"""`make lint` starts nothing (issue 28): mypy's django-stubs plugin loads the settings that
pyproject.toml names, and that load boots no database or Redis and leaves no process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.processes import processes_bound_to

ROOT = Path(__file__).resolve().parent.parent.parent

# What the plugin does when mypy starts: read its config, then set Django up from it.
PLUGIN_LOAD = (
    "from mypy_django_plugin.config import DjangoPluginConfig\n"
    "from mypy_django_plugin.django.context import DjangoContext\n"
    "module = DjangoPluginConfig('pyproject.toml').django_settings_module\n"
    "print(module, len(DjangoContext(module).model_modules))\n"
)


def test_the_type_checkers_settings_load_starts_no_server(tmp_path):
    data_dir = tmp_path / "data"
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}
    }
    result = subprocess.run(
        [sys.executable, "-c", PLUGIN_LOAD],
        cwd=ROOT,
        env={**env, "DATA_DIR": str(data_dir)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    module, model_modules = result.stdout.split()
    assert int(model_modules) > 0, module  # the apps and their models were loaded
    assert not data_dir.exists()
    assert processes_bound_to(data_dir) == []
