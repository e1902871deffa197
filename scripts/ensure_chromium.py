"""Make sure a Chromium for the browser tests is installed (Debian's package, as root)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

CHROMIUM = Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"))


def main() -> int:
    if CHROMIUM.exists():
        return 0
    apt = shutil.which("apt-get")
    if apt and os.geteuid() == 0:
        print("Installing Debian's chromium for the browser tests…", flush=True)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run([apt, "update", "-qq"], check=True, env=env)  # noqa: S603
        subprocess.run([apt, "install", "-y", "-qq", "chromium"], check=True, env=env)  # noqa: S603
        if CHROMIUM.exists():
            return 0
    print(
        f"Chromium is needed for the browser tests and was not found at {CHROMIUM}.\n"
        "On Debian/Ubuntu run: sudo apt-get install -y chromium\n"
        "Or point CHROMIUM_PATH at an installed Chromium.",
        file=sys.stderr,
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
