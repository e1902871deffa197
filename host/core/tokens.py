"""One token estimator for every budget in the product.

Estimate: one token per 4 bytes of UTF-8, rounded up. For English prose this is
close to what BPE tokenizers produce (about 4 characters per token); for text
with accents or non-Latin scripts the byte count grows faster than the
character count, which keeps the estimate on the safe (high) side for most
scripts. It matches the spec's pairing of 6 KiB with 1500 tokens.
"""

from __future__ import annotations

import math

BYTES_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text.encode("utf-8")) / BYTES_PER_TOKEN)
