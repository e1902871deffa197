"""Answers' code blocks: coloured when the fence names a language, always escaped."""

from __future__ import annotations

import re
from html import unescape

from host.core.markdown import HIGHLIGHT_MAX_CHARS, render_markdown


def test_a_fence_that_names_its_language_is_coloured_by_token():
    html = render_markdown("```python\ndef greet(name):\n    return 'hi ' + name  # ok\n```")
    assert '<code class="language-python">' in html
    assert '<span class="hl-k">def</span>' in html
    assert '<span class="hl-nf">greet</span>' in html
    assert '<span class="hl-c1"># ok</span>' in html


def test_code_without_a_known_language_stays_plain():
    for fence in ("```\nx = 1\n```", "```no-such-language\nx = 1\n```"):
        html = render_markdown(fence)
        assert "<span" not in html and "x = 1" in html


def test_markup_inside_coloured_code_is_text_never_html():
    code = '<script>alert(1)</script><img src=x onerror="y()">'
    html = render_markdown(f"```html\n{code}\n```")
    assert "<script" not in html and "<img" not in html and "onerror=" not in html
    assert '<span class="hl-nt">script</span>' in html
    assert unescape(re.sub(r"<[^>]+>", "", html)).strip() == code


def test_a_span_written_in_the_answer_is_escaped_not_kept():
    html = render_markdown('<span class="hl-k" onclick="x()">hi</span>')
    assert "<span" not in html and "&lt;span" in html


def test_very_long_code_is_shown_plain():
    code = "x = 1\n" * (HIGHLIGHT_MAX_CHARS // 6 + 1)
    html = render_markdown(f"```python\n{code}```")
    assert "<span" not in html and html.count("x = 1") == code.count("x = 1")
