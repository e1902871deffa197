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
        text_from_bytes((body + "\x1b").encode())


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        ("\x1b[31mred\x1b[0m", "red"),
        ("\x1b[1;32;48;5;200mbold\x1b[m", "bold"),
        ("\x1b]0;window title\x07after", "after"),
        ("\x1b]8;;https://example.org\x1b\\link\x1b]8;;\x1b\\", "link"),
        ("\x1b(Bplain\x1b7", "plain"),
    ],
)
def test_terminal_escape_codes_are_text_and_are_removed(raw, text):
    assert text_from_bytes(f"a {raw} b\n".encode()) == f"a {text} b\n"
