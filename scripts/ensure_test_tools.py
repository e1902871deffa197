"""Make sure the Debian programs the tests drive are installed (as root, with apt-get):
Chromium for the browser tests, nginx for the scale-out test's proxy."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

CHROMIUM = Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"))
NGINX = Path(os.environ.get("NGINX_PATH", "/usr/sbin/nginx"))
# Debian package per program, with what it recommends (Chromium's fonts change the
# layout the browser tests measure); nginx-light: the proxy without its extra modules.
NEEDED = {CHROMIUM: "chromium", NGINX: "nginx-light"}


def main() -> int:
    missing = {path: package for path, package in NEEDED.items() if not path.exists()}
    if not missing:
        return 0
    apt = shutil.which("apt-get")
    if apt and os.geteuid() == 0:
        names = " and ".join(missing.values())
        print(f"Installing Debian's {names} for the tests…", flush=True)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run([apt, "update", "-qq"], check=True, env=env)  # noqa: S603
        subprocess.run(  # noqa: S603
            [apt, "install", "-y", "-qq", *missing.values()],
            check=True,
            env=env,
        )
        # Debian starts an installed nginx as a service on port 80; the tests run their own.
        if NGINX in missing and shutil.which("service"):
            subprocess.run(["service", "nginx", "stop"], check=False, capture_output=True)  # noqa: S607
        missing = {path: package for path, package in missing.items() if not path.exists()}
        if not missing:
            return 0
    for path, package in missing.items():
        print(
            f"{package} is needed by the tests and was not found at {path}.\n"
            f"On Debian/Ubuntu run: sudo apt-get install -y {package}\n"
            f"Or point {'CHROMIUM_PATH' if path == CHROMIUM else 'NGINX_PATH'} at one.",
            file=sys.stderr,
        )
    return 1


if __name__ == "__main__":
    sys.exit(main())
