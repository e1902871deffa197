"""Two hosts behind nginx against one: turn-context throughput of the pair.

The cluster of benchmarks/cluster.py (the embedded PostgreSQL and Redis in their own
process group, one beat, each host a `manage.py serve --no-beat` with one web worker,
nginx with deploy/nginx.conf) serves `POST /api/memory/turn-context` for clients that
send back to back (benchmarks/http_bench.py's load). Alternated rounds, medians of 3:
- the pair through nginx,
- one host through an nginx of its own (the same proxy, one upstream),
- one host without a proxy (what the proxy itself costs).
All of it shares the machine's cores with the load generator.

Run: `python -m benchmarks.scale_out_bench` (writes the `scale-out` section of
docs/benchmarks.md). What happens when a host dies is the test
tests/chaos/test_scale_out.py.
"""

from __future__ import annotations

import asyncio
import os
import platform
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.cluster import Cluster, Proxy
from benchmarks.http_load import level
from benchmarks.results import write_section

CLIENTS = (10, 50)
SECONDS = 8.0
ROUNDS = 3


MAKE_PERSON = """
import json
from accounts.models import User
from accounts.services import api_token_create
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import ensure_user_scope
user = User.objects.create_user("bench-pair")
index = "".join(f"- pref {i}: short fact {i} -> f{i}.md\\n" for i in range(12))
file_write(user=user, scope=ensure_user_scope(user), path="index.md", content=index, base_sha256="")
print("RESULT " + json.dumps(api_token_create(user=user, name="bench")[1]))
"""


def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="bench-pair-"))
    folder.chmod(0o711)  # pgserver's own user reaches its folder under root
    cluster = Cluster(folder, settings={"LOG_LEVEL": "WARNING"})
    load_before = os.getloadavg()[0]
    one_proxy: Proxy | None = None
    try:
        cluster.start()
        # A person with a 12-line memory index and a personal token, as http_bench's.
        token = cluster.shell(MAKE_PERSON)

        a = cluster.hosts[0]
        one_proxy = Proxy(folder / "nginx-one", [a]).start()
        targets = {
            "two hosts, nginx": cluster.proxy.url,
            "one host, nginx": one_proxy.url,
            "one host, no proxy": a.url,
        }
        runs: dict[tuple[str, int], list[dict[str, float]]] = {}
        for _ in range(ROUNDS):
            for clients in CLIENTS:
                for name, base in targets.items():
                    result = asyncio.run(level(base, token, clients, SECONDS))
                    runs.setdefault((name, clients), []).append(result)
                    print(name, clients, result, flush=True)
        load_after = os.getloadavg()[0]
    finally:
        if one_proxy is not None:
            one_proxy.stop()
        cluster.stop()
        shutil.rmtree(folder, ignore_errors=True)

    def median(name: str, clients: int, key: str) -> float:
        return statistics.median(r[key] for r in runs[(name, clients)])

    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    lines = [
        "## Scale-out: two hosts behind nginx against one",
        "",
        "Command: `python -m benchmarks.scale_out_bench`. "
        f"Machine: {machine}, shared with the load generator; load average "
        f"{load_before:.1f} before, {load_after:.1f} after (1-minute). "
        f"Measured {time.strftime('%Y-%m-%d')}. Medians of {ROUNDS} alternated rounds of "
        f"{SECONDS:.0f} s each.",
        "",
        "Each host is `manage.py serve --no-beat --web-workers 1` (web server, worker, chat "
        "worker, delivery worker) on one embedded PostgreSQL and Redis in their own process "
        "group, with one `celery beat`; nginx runs deploy/nginx.conf with the hosts as its "
        "upstreams (benchmarks/cluster.py). Requests: `POST /api/memory/turn-context` with a "
        "personal token, each client on one keep-alive connection.",
        "",
        "| clients | two hosts, nginx | one host, nginx | one host, no proxy "
        "| pair ÷ one (both behind nginx) | p95 pair / one |",
        "|---|---|---|---|---|---|",
    ]
    for clients in CLIENTS:
        pair = median("two hosts, nginx", clients, "rps")
        one = median("one host, nginx", clients, "rps")
        bare = median("one host, no proxy", clients, "rps")
        p95_pair = median("two hosts, nginx", clients, "p95")
        p95_one = median("one host, nginx", clients, "p95")
        errors = sum(r["errors"] for rows in runs.values() for r in rows)
        lines.append(
            f"| {clients} | {pair:.0f}/s | {one:.0f}/s | {bare:.0f}/s | {pair / one:.2f}x "
            f"| {p95_pair:.0f} / {p95_one:.0f} ms |"
        )
    lines += ["", f"Errors in all rounds: {errors:.0f}."]
    body = "\n".join(lines) + "\n"
    write_section("scale-out", body)
    print(body)


if __name__ == "__main__":
    main()
