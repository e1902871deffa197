from __future__ import annotations

from host.core.tokens import estimate_tokens


def test_estimate_is_a_quarter_of_the_utf8_bytes_rounded_up():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("é" * 4) == 2  # 8 bytes
