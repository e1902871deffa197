"""One Redis connection pool per process for Django's cache.

Django keeps a cache backend per request context (asgiref's Local), and each backend
makes its own connection pool: under ASGI every request opened, and later dropped, a
new Redis connection. The cache's `pool_class` hands every backend the process's pool.
redis-py resets a pool that crossed a fork, so forked web workers each get their own.
"""

from __future__ import annotations

import threading
from typing import Any

import redis

# What Django adds per backend to name itself to Redis: not part of which pool it is.
_PER_BACKEND = frozenset({"driver_info", "lib_name", "lib_version"})


class SharedConnectionPool(redis.ConnectionPool):
    _shared: dict[tuple[str, str], redis.ConnectionPool] = {}
    _shared_lock = threading.Lock()

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> Any:
        key = (url, repr(sorted((k, v) for k, v in kwargs.items() if k not in _PER_BACKEND)))
        with cls._shared_lock:
            pool = cls._shared.get(key)
            if pool is None:
                pool = cls._shared[key] = redis.ConnectionPool.from_url(url, **kwargs)
        return pool


__all__ = ["SharedConnectionPool"]
