"""Untrusted text (notes, excerpts, reference files, add-on files) put inside a wrapper.

A wrapper tag is only a boundary if the text inside cannot draw one. Every untrusted
block the host sends goes through `wrap_untrusted`, which takes each untrusted part in
one order:

1. mask: the secret guard writes the lines it masks in a normalised form, so masking
   must come before the steps below or it could turn a look-alike back into a real tag
   (the normalised text is masked once more: a token a direction mark hid is seen there);
2. normalise: tag-character runs and bidirectional controls (a right-to-left override
   can make a line display as a closing tag) become visible markers, every other
   invisible character is removed, then NFKC folds compatibility forms (a fullwidth
   closing tag becomes a plain one);
3. neutralise: any opening or closing tag of a host wrapper, also one spelt with
   look-alike letters or slashes, loses its "<".

Each step only removes or replaces, and none of them can undo an earlier one, so the
text stays what it was when it was checked, however it is cut or masked later.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from host.core.invisible import BIDI_CONTROLS, INVISIBLE, LOOKALIKES
from host.core.secret_guard import mask_outbound

_TAG_RUN = re.compile("[\U000e0000-\U000e007f]+")
_BIDI = re.compile("[" + "".join(sorted(BIDI_CONTROLS)) + "]")
HIDDEN_MARK = "[hidden characters removed]"

# Every wrapper the host puts around untrusted text, the <message> of the rule detection
# prompt and the <notes> of the clean-up prompt. A prefix is enough: `memory` covers
# `memory_file`, `reference_file` covers `reference_files`.
WRAPPER_TAGS = (
    "retrieved_context",
    "memory",
    "project_memory",
    "reference_file",
    "addon_context",
    "addon_file",
    "skill",
    "message",
    "notes",
)
_WRAPPER_TAG = re.compile(r"<\s*/?\s*(?:" + "|".join(WRAPPER_TAGS) + ")", re.IGNORECASE)
NEUTRAL_OPEN = "\u2039"  # single left-pointing angle quotation mark: reads as "<", is none


def normalise_untrusted(text: str) -> str:
    if text.isascii():
        return text
    text = _TAG_RUN.sub(HIDDEN_MARK, text)
    text = _BIDI.sub(lambda m: f"[U+{ord(m.group(0)):04X}]", text)
    return unicodedata.normalize("NFKC", INVISIBLE.sub("", text))


def neutralise_tags(text: str) -> str:
    """No host wrapper tag, opening or closing, survives in normalised text."""
    folded = text.translate(LOOKALIKES) if not text.isascii() else text
    starts = [match.start() for match in _WRAPPER_TAG.finditer(folded)]
    if not starts:
        return text
    chars = list(text)
    for start in starts:
        chars[start] = NEUTRAL_OPEN
    return "".join(chars)


def untrusted_text(text: str, *, mask: bool = True) -> str:
    """One untrusted text made safe for any wrapper: masked, normalised, neutralised."""
    if not mask:
        return neutralise_tags(normalise_untrusted(text))
    # The guard reads a text with direction and tag characters removed, the model sees
    # them as visible markers: a token can hide in either form, so both are masked. The
    # second pass reads normalised text, which masking leaves in the same form.
    text = mask_outbound(normalise_untrusted(mask_outbound(text)))
    return neutralise_tags(text)


@dataclass(frozen=True)
class Safe:
    """Text that goes into a wrapper as it is: the host's own words or a wrapped block."""

    text: str


def wrap_untrusted(
    tag: str,
    parts: str | Sequence[str | Safe],
    *,
    attrs: Mapping[str, str] | None = None,
    header: str = "",
    mask: bool = True,
) -> Safe:
    """`<tag attrs>`, the header, each part on its own line(s), `</tag>`.

    A `str` part or attribute value is untrusted and goes through `untrusted_text`; a
    `Safe` part (our text, a nested wrapper) is kept. mask=False only for a model that
    runs on this machine.
    """
    if isinstance(parts, str):
        parts = [parts]
    attributes = "".join(
        f' {name}="{_attribute(value, mask=mask)}"' for name, value in (attrs or {}).items()
    )
    lines = [f"<{tag}{attributes}>"]
    if header:
        lines.append(header)
    lines += [
        part.text if isinstance(part, Safe) else untrusted_text(part, mask=mask) for part in parts
    ]
    lines.append(f"</{tag}>")
    return Safe("\n".join(lines))


def _attribute(value: str, *, mask: bool) -> str:
    return " ".join(untrusted_text(value, mask=mask).replace('"', "'").split())


__all__ = [
    "HIDDEN_MARK",
    "WRAPPER_TAGS",
    "Safe",
    "neutralise_tags",
    "normalise_untrusted",
    "untrusted_text",
    "wrap_untrusted",
]
