"""The local filter in front of rule detection (M13): no Django, no outside call.

Most messages stop here. A message goes on to the detection call only when it holds
a multi-word cue for a lasting rule, in English or German ("from now on", "merk dir"),
is at most 2000 characters, is not mostly code, is not a question (a polite request
such as "Could you always use tabs from now on?" is still a request), and holds
nothing that looks like a secret: such a message is never sent anywhere.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from host.core.secret_guard import find_secret

MAX_MESSAGE_CHARS = 2000

# Multi-word cues; a lone "always", "immer" or "never" is never enough.
CUES_EN = (
    "from now on",
    "remember that",
    "always use",
    "never use",
    "in the future",
    "going forward",
    "make sure to always",
    "make sure you always",
    "always answer in",
    "always reply in",
    "always write",
    "never write",
    "from here on",
)
CUES_DE = (
    "ab jetzt",
    "ab sofort",
    "in zukunft",
    "künftig",
    "zukünftig",
    "merk dir",
    "merke dir",
    "verwende immer",
    "benutze immer",
    "nutze immer",
    "verwende nie",
    "benutze nie",
    "nutze nie",
    "antworte immer",
    "schreib immer",
    "schreibe immer",
    "von nun an",
)
CUES = CUES_EN + CUES_DE

_CUE = re.compile(
    r"(?<![\w])(?:" + "|".join(re.escape(c).replace(r"\ ", r"\s+") for c in CUES) + r")(?![\w])",
    re.IGNORECASE,
)
# Requests phrased as questions: "Could you …?", "Kannst du bitte …?"
_POLITE = re.compile(
    r"^(?:please\b|pls\b|could you\b|can you\b|would you\b|will you\b|would you mind\b|"
    r"bitte\b|könntest du\b|kannst du\b|würdest du\b|könnten sie\b|können sie\b|"
    r"würden sie\b|magst du\b)",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_FENCE = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_CODE_LINE = re.compile(
    r"^(?:\s{4,}|\t)\S|[;{}]\s*$|^\s*(?:def|class|import|from\s+\S+\s+import|return|if\s*\(|"
    r"for\s*\(|while\s*\(|function|const|let|var|public|private|#include|SELECT|INSERT|"
    r"\$\s|>>>|[a-z_][\w.]*\s*\(.*\)\s*$|[a-z_][\w.]*\s*=\s*\S)",
)

Verdict = Literal["rule", "empty", "no_cue", "too_long", "code", "question", "secret"]

REASONS: dict[str, str] = {
    "rule": "May hold a lasting rule; the detection call decides.",
    "empty": "The message is empty.",
    "no_cue": "No cue for a lasting rule.",
    "too_long": f"Longer than {MAX_MESSAGE_CHARS} characters.",
    "code": "Mostly code.",
    "question": "A question, not a request.",
    "secret": "Holds something that looks like a secret; it is never sent anywhere.",
}


@dataclass(frozen=True)
class FilterResult:
    verdict: Verdict
    cue: str = ""

    @property
    def passes(self) -> bool:
        return self.verdict == "rule"

    @property
    def reason(self) -> str:
        return REASONS[self.verdict]


def _code_share(text: str) -> float:
    """The share of characters that are code: fenced blocks and code-looking lines."""
    total = len(text.strip())
    if not total:
        return 0.0
    fenced = sum(len(block) for block in _FENCE.findall(text))
    rest = _FENCE.sub("", text)
    lines = sum(len(line) for line in rest.split("\n") if line.strip() and _CODE_LINE.search(line))
    return (fenced + lines) / total


def _cue_sentence(text: str, start: int) -> str:
    """The sentence around a cue (from the previous sentence end to the next)."""
    sentences = []
    position = 0
    for part in _SENTENCE_END.split(text):
        found = text.find(part, position)
        sentences.append((found, found + len(part), part))
        position = found + len(part)
    for begin, end, part in sentences:
        if begin <= start < max(end, begin + 1):
            return part.strip()
    return text.strip()


def _is_question(sentence: str) -> bool:
    if not sentence.endswith("?"):
        return False
    return not _POLITE.match(sentence.lstrip("\"'„“ ").strip())


def check(text: str) -> FilterResult:
    """Whether a message may hold a lasting rule (the detection call decides if it does)."""
    text = unicodedata.normalize("NFKC", text or "")
    if not text.strip():
        return FilterResult("empty")
    if len(text) > MAX_MESSAGE_CHARS:
        return FilterResult("too_long")
    # The secret check comes before anything else looks further: such a message stops here.
    if find_secret(text) is not None:
        return FilterResult("secret")
    if _code_share(text) > 0.5:
        return FilterResult("code")
    prose = _FENCE.sub(" ", text)
    matches = list(_CUE.finditer(prose))
    if not matches:
        return FilterResult("no_cue")
    for match in matches:
        if not _is_question(_cue_sentence(prose, match.start())):
            return FilterResult("rule", " ".join(match.group(0).lower().split()))
    return FilterResult("question")


__all__ = ["CUES", "MAX_MESSAGE_CHARS", "FilterResult", "check"]
