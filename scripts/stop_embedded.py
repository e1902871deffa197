"""Stop the embedded PostgreSQL and Redis of a data folder once nothing uses them.

`make mutate` calls it: mutmut's test processes end without running exit handlers, so
the servers' own rule (the last attached process stops them) never fires for them.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(data_dir: Path) -> int:
    from pgserver.utils import PostmasterInfo

    from host import embedded

    if (data_dir / "redis").exists():
        # Attaching drops the dead processes from the list; exiting as its only live
        # process stops the server.
        embedded.redis_url(data_dir)
    pgdata = data_dir / "postgres"
    info = PostmasterInfo.read_from_pgdata(pgdata)
    if info is not None and info.process is not None and info.is_running():
        # SIGINT is PostgreSQL's fast shutdown; pg_ctl would refuse to run as root.
        info.process.send_signal(signal.SIGINT)
        info.process.wait(timeout=60)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]).resolve()))
