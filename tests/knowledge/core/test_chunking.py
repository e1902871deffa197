from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from host.core.tokens import estimate_tokens
from knowledge.core.chunking import chunk_pages
from knowledge.core.extract import Page


def test_long_text_becomes_overlapping_chunks_of_about_800_tokens():
    text = " ".join(f"word{i}" for i in range(4000))
    chunks = chunk_pages([Page(None, text)])
    assert len(chunks) > 3
    assert all(700 <= chunk.tokens <= 800 for chunk in chunks[:-1])
    first, second = chunks[0].text.split(), chunks[1].text.split()
    overlap = [w for w in first[-40:] if w in second[:40]]
    assert 15 <= len(overlap) <= 40  # about 120 tokens of words at ~7 bytes each


def test_pdf_chunks_keep_their_page_numbers():
    chunks = chunk_pages([Page(1, "first page text"), Page(2, "second page text")])
    assert [(c.page, c.text) for c in chunks] == [(1, "first page text"), (2, "second page text")]


words = st.lists(st.text(alphabet="abcdefghij", min_size=1, max_size=12), max_size=900)


@settings(max_examples=40, deadline=None)
@given(words)
def test_chunking_is_deterministic_and_loses_no_word(items):
    text = " ".join(items)
    first = chunk_pages([Page(None, text)])
    assert first == chunk_pages([Page(None, text)])
    covered = " ".join(chunk.text for chunk in first).split()
    assert set(covered) == set(items)
    assert all(c.tokens <= 800 or len(c.text.split()) == 1 for c in first)
    assert all(c.tokens == estimate_tokens(c.text) for c in first)
