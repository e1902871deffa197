"""Clients that send `POST /api/memory/turn-context` back to back (no Django in here)."""

from __future__ import annotations

import asyncio
import statistics
import time

import httpx

PATH = "/api/memory/turn-context"


async def level(base: str, token: str, clients: int, seconds: float) -> dict[str, float]:
    """Requests/s, p50 and p95 (ms) and errors of `clients` clients, each on one keep-alive
    connection, for `seconds` after a 1 s warm-up."""
    latencies: list[float] = []
    errors = 0
    headers = {"Authorization": f"Bearer {token}"}

    async def client(stop_at: float, record: bool) -> None:
        nonlocal errors
        limits = httpx.Limits(max_connections=1)
        async with httpx.AsyncClient(base_url=base, headers=headers, limits=limits) as http:
            while time.monotonic() < stop_at:
                start = time.perf_counter()
                response = await http.post(PATH, json={}, timeout=30)
                elapsed = (time.perf_counter() - start) * 1000
                if response.status_code != 200:
                    errors += 1
                elif record:
                    latencies.append(elapsed)

    await asyncio.gather(*(client(time.monotonic() + 1.0, False) for _ in range(clients)))
    start = time.monotonic()
    await asyncio.gather(*(client(start + seconds, True) for _ in range(clients)))
    wall = time.monotonic() - start
    cuts = statistics.quantiles(latencies, n=100, method="inclusive") if latencies else [0.0] * 99
    return {
        "rps": len(latencies) / wall,
        "p50": cuts[49],
        "p95": cuts[94],
        "errors": float(errors),
    }
