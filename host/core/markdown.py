"""Untrusted Markdown as safe HTML: markdown-it-py, then an allowlist sanitizer (nh3).

Chat answers and memory files are rendered here. Raw HTML is escaped by the parser,
and the sanitizer drops anything outside the allowlist (scripts, event handlers,
`javascript:` URLs). [R1] markers become links to the excerpt they cite, within this
message only; [C1] markers link to the past conversation a search found (B10). Code in
a fence that names its language is coloured by Pygments: its output is escaped text in
spans with token classes, which the sanitizer keeps.
"""

from __future__ import annotations

import re

import nh3
from markdown_it import MarkdownIt
from pygments import highlight as pygments_highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

# Longer code is shown plain: colouring is for reading, and a lexer's time grows with it.
HIGHLIGHT_MAX_CHARS = 20_000
_FORMATTER = HtmlFormatter(nowrap=True, classprefix="hl-")


def _highlight(code: str, info: str, attrs: str) -> str:
    """Coloured code for a fence with a known language; "" leaves it to the plain renderer."""
    words = info.split()
    if not words or len(code) > HIGHLIGHT_MAX_CHARS:
        return ""
    try:
        lexer = get_lexer_by_name(words[0][:40], stripnl=False, ensurenl=False)
    except ClassNotFound:
        return ""
    return str(pygments_highlight(code, lexer, _FORMATTER))


_MD = MarkdownIt("commonmark", {"html": False, "linkify": False, "highlight": _highlight}).enable(
    ["table", "strikethrough"]
)
_MARKER = re.compile(r"\[R(\d{1,2})\](?!\()")
_CONVERSATION_MARKER = re.compile(r"\[C(\d{1,2})\](?!\()")
_TAGS = {
    "a",
    "p",
    "br",
    "hr",
    "strong",
    "em",
    "del",
    "code",
    "pre",
    "blockquote",
    "ul",
    "ol",
    "li",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "sup",
    "span",
}
_ATTRIBUTES = {
    "a": {"href", "title", "class", "data-cite"},
    "code": {"class"},
    "span": {"class"},
    "ol": {"start"},
    "th": {"align"},
    "td": {"align"},
}


def render_markdown(
    text: str,
    *,
    anchor_prefix: str = "",
    markers: set[int] | None = None,
    conversations: dict[int, tuple[int, str]] | None = None,
) -> str:
    """Safe HTML for an answer; known [Rn] markers link to `#{anchor_prefix}{n}`, and
    [Cn] markers of `conversations` (number → conversation id and title) to `/chat/<id>/`."""
    if conversations:

        def conversation_link(match: re.Match[str]) -> str:
            number = int(match.group(1))
            if number not in conversations:
                return match.group(0)
            target, title = conversations[number]
            # The title names the chat in any page language; quotes would end the title.
            quoted = re.sub(r"[\\'\"()\[\]]", "", title)[:200]
            return f"[\\[C{number}\\]](/chat/{int(target)}/ '{quoted}')"

        text = _CONVERSATION_MARKER.sub(conversation_link, text)
    if anchor_prefix and markers:

        def link(match: re.Match[str]) -> str:
            number = int(match.group(1))
            if number not in markers:
                return match.group(0)
            return f"[\\[R{number}\\]](#{anchor_prefix}{number} 'Open excerpt R{number}')"

        text = _MARKER.sub(link, text)
    html = _MD.render(text)
    return nh3.clean(
        html,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )
