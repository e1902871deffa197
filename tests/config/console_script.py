"""The `memory-host` console script as an install makes it, for tests run from any folder.

pyproject.toml's `[project.scripts]` names the entry point; `install_script` writes the
launcher pip would write for it (a shebang to this interpreter, import, call `main`), so
the tests run the declared entry point without reinstalling into the shared venv.
"""

from __future__ import annotations

import functools
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.conftest import ROOT

SCRIPT = "memory-host"


def entry_point() -> tuple[str, str]:
    """(module, function) that pyproject.toml declares for `memory-host`."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, function = scripts[SCRIPT].split(":")
    return module, function


def launcher_code() -> str:
    module, function = entry_point()
    return f"import sys\nfrom {module} import {function}\nsys.exit({function}())\n"


def install_script(folder: Path) -> Path:
    """A `memory-host` executable in `folder`, calling the declared entry point."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / SCRIPT
    script.write_text(f"#!{sys.executable}\n{launcher_code()}")
    script.chmod(0o755)
    return folder


@functools.cache
def _checkout_importable_anywhere() -> bool:
    """Whether this checkout's `config` imports from another folder without help."""
    found = subprocess.run(
        [sys.executable, "-c", "import config; print(config.__file__)"],
        cwd="/",
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )
    return found.returncode == 0 and Path(found.stdout.strip()).is_relative_to(ROOT)


def client_env(url: str, token: str, *, path: str = "/usr/bin:/bin") -> dict[str, str]:
    """Only the two settings (and PATH); PYTHONPATH only when the package is not installed."""
    env = {"MEMORY_HOST_URL": url, "MEMORY_HOST_TOKEN": token, "PATH": path}
    if not _checkout_importable_anywhere():
        env["PYTHONPATH"] = str(ROOT)
    return env
