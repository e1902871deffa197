"""Deterministic chunks of about 800 tokens with 120 tokens of overlap (K6).

Tokens are estimated as in host.core.tokens (4 bytes of UTF-8 each), so
the same input always gives the same chunks. Chunks break between words and
never span two PDF pages, so every chunk keeps its page number.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from host.core.tokens import BYTES_PER_TOKEN, estimate_tokens
from knowledge.core.extract import Page

CHUNK_TOKENS = 800
OVERLAP_TOKENS = 120
_WORD = re.compile(r"\S+\s*")


@dataclass(frozen=True)
class Chunk:
    ordinal: int
    page: int | None
    text: str
    tokens: int


def _split(text: str, chunk_tokens: int, overlap_tokens: int) -> list[str]:
    words = _WORD.findall(text)
    if not words:
        return []
    sizes = [len(word.encode("utf-8")) for word in words]
    max_bytes = chunk_tokens * BYTES_PER_TOKEN
    overlap_bytes = overlap_tokens * BYTES_PER_TOKEN
    chunks: list[str] = []
    start = 0
    while start < len(words):
        end, used = start, 0
        while end < len(words) and (used + sizes[end] <= max_bytes or end == start):
            used += sizes[end]
            end += 1
        chunks.append("".join(words[start:end]).strip())
        if end >= len(words):
            break
        # Step back over about `overlap` tokens of words, but always move forward.
        back, carried = end, 0
        while back > start + 1 and carried + sizes[back - 1] <= overlap_bytes:
            back -= 1
            carried += sizes[back]
        start = back
    return [chunk for chunk in chunks if chunk]


def chunk_pages(
    pages: Iterable[Page], *, chunk_tokens: int = CHUNK_TOKENS, overlap_tokens: int = OVERLAP_TOKENS
) -> list[Chunk]:
    chunks: list[Chunk] = []
    for page in pages:
        for text in _split(page.text, chunk_tokens, overlap_tokens):
            chunks.append(Chunk(len(chunks), page.number, text, estimate_tokens(text)))
    return chunks
