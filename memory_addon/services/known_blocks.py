"""The memory blocks a person's clients were sent lately, so turn-context can answer a
client that names the block it holds (known_hash) with "unchanged" or a delta (B9).

Kept in the Redis cache, per person (a hash never reaches another person's blocks),
each for MEMORY_KNOWN_BLOCKS_TTL_SECONDS and at most MEMORY_KNOWN_BLOCKS of them: a
hash the host forgot is simply answered with the whole block.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache

from host.core.line_delta import LineDelta, line_delta

logger = logging.getLogger(__name__)


def _block_key(user_id: int, sha256: str) -> str:
    return f"memory:known-block:{user_id}:{sha256}"


def _recent_key(user_id: int) -> str:
    return f"memory:known-blocks:{user_id}"


def known_block_remember(*, user_id: int, sha256: str, block: str) -> None:
    """Two clients at once may each drop the other's newest hash from the list; its
    block then only lives out its TTL. Nothing wrong is answered either way."""
    ttl = settings.MEMORY_KNOWN_BLOCKS_TTL_SECONDS
    recent: list[str] = cache.get(_recent_key(user_id)) or []
    recent = [h for h in recent if h != sha256] + [sha256]
    keep = max(1, settings.MEMORY_KNOWN_BLOCKS)
    if len(recent) > keep:
        cache.delete_many([_block_key(user_id, h) for h in recent[:-keep]])
        recent = recent[-keep:]
    cache.set_many({_block_key(user_id, sha256): block, _recent_key(user_id): recent}, ttl)


def known_block(*, user_id: int, sha256: str) -> str | None:
    block: str | None = cache.get(_block_key(user_id, sha256))
    return block


@dataclass(frozen=True)
class BlockDelivery:
    """How the current block goes to a client that holds `known_hash`: not at all
    (unchanged), as a delta against the block it holds, or whole (`block`)."""

    block: str
    unchanged: bool = False
    delta: LineDelta | None = None


def block_delivery(*, user_id: int, block: str, sha256: str, known_hash: str) -> BlockDelivery:
    """Without Redis the host knows no earlier block: the answer is then the whole
    block (or unchanged, which needs no memory of earlier blocks)."""
    try:
        known_block_remember(user_id=user_id, sha256=sha256, block=block)
        wanted = known_hash and known_hash != sha256
        old = known_block(user_id=user_id, sha256=known_hash) if wanted else None
    except Exception:
        logger.warning("The known memory blocks of person %s are out of reach", user_id)
        old = None
    if not known_hash:
        return BlockDelivery(block)
    if known_hash == sha256:
        return BlockDelivery("", unchanged=True)
    if old is None:
        return BlockDelivery(block)
    delta = line_delta(old, block)
    if delta.too_big(block, max_tokens=settings.MEMORY_DELTA_MAX_TOKENS):
        return BlockDelivery(block)
    return BlockDelivery("", delta=delta)


__all__ = ["BlockDelivery", "block_delivery", "known_block", "known_block_remember"]
