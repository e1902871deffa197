"""Which processes still hold a data folder: a server started there and left behind."""

from __future__ import annotations

from pathlib import Path

import psutil


def processes_bound_to(folder: Path) -> list[str]:
    """Live processes whose command line names `folder` or that run inside it (redis-server
    changes into its data folder and names only its socket in /tmp)."""
    found = []
    for proc in psutil.process_iter(attrs=["cmdline"]):
        try:
            cmdline = " ".join(proc.info["cmdline"] or [])
            inside = Path(proc.cwd()).is_relative_to(folder)
            if (str(folder) in cmdline or inside) and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(f"{proc.pid} {cmdline}")
        except psutil.Error:  # gone meanwhile, or another user's
            continue
    return found
