"""Untrusted text (notes, excerpts, reference files) made safe to put inside a wrapper.

A wrapper tag is only a boundary if the text inside cannot draw a lookalike of it.
Before neutralising tags, text is normalised: compatibility forms fold to their plain
letters (a fullwidth closing tag becomes a plain one and is then neutralised), invisible
format characters are removed (a zero-width space inside a closing tag), and
characters that change how text displays or hide it are made visible: bidirectional
controls (a right-to-left override can make a line display as a closing tag) and
Unicode tag characters (U+E0000 to U+E007F, which carry instructions no person sees).
"""

from __future__ import annotations

import re
import unicodedata

_BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
_TAG_RUN = re.compile("[\U000e0000-\U000e007f]+")
HIDDEN_MARK = "[hidden characters removed]"


def _visible(char: str) -> str:
    return f"[U+{ord(char):04X}]"


def normalise_untrusted(text: str) -> str:
    text = _TAG_RUN.sub(HIDDEN_MARK, text)
    text = unicodedata.normalize("NFKC", text)
    if text.isascii():
        return text
    out: list[str] = []
    for char in text:
        if char in _BIDI_CONTROLS:
            out.append(_visible(char))
        elif unicodedata.category(char) == "Cf":
            continue  # zero-width and other invisible format characters
        else:
            out.append(char)
    return "".join(out)
