from __future__ import annotations

import pytest

from knowledge.core.extract import Unreadable, text_from_bytes


def test_only_tab_line_feed_form_feed_and_carriage_return_pass_among_control_characters():
    passed = set()
    for code in range(32):
        try:
            text_from_bytes(f"plain text {chr(code)} more text".encode())
        except Unreadable as error:
            reason = (
                "binary content (NUL bytes)" if code == 0 else "binary content (control characters)"
            )
            assert str(error) == reason
        else:
            passed.add(code)
    assert passed == {9, 10, 12, 13}


def test_text_after_the_first_megabyte_is_checked_too_and_ordinary_text_passes():
    body = "Alpacas graze in the valley. Ünïcödé is fine; so is DEL \x7f.\n" * 20_000
    assert text_from_bytes(("\ufeff" + body).encode()) == body  # the byte order mark goes
    with pytest.raises(Unreadable, match="control characters"):
        text_from_bytes((body + "\x1b[31m").encode())
