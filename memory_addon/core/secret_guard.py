"""Secret guard (M11): refuse secrets in anything the model reads back.

Four kinds are detected. A finding names the line and the kind, never the value.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Literal

SecretKind = Literal[
    "known token format", "password assignment", "password in prose", "random-looking string"
]

KIND_LABELS: dict[str, str] = {
    "known token format": "a token in a known format (private key or provider token)",
    "password assignment": "a password or token assigned a literal value",
    "password in prose": "a password named in prose",
    "random-looking string": "a long random-looking string",
}

_KNOWN_TOKENS = [
    re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),  # AWS access key id
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"),  # GitHub
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{40,}\b"),
    re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}\b"),  # GitLab
    re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}\b"),  # OpenAI / Anthropic style
    re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b"),  # Slack
    re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"),  # Google API key
    re.compile(r"\b[rs]k_(?:live|test)_[0-9A-Za-z]{16,}\b"),  # Stripe
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),  # JWT
    re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"),  # Hugging Face
    re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"),
]

_SECRET_NAMES = (
    r"(?:[A-Za-z0-9]*[_-])?(?:password|passwd|pwd|passphrase|secret|token|api[_-]?key|"  # noqa: S105
    r"access[_-]?key|private[_-]?key|client[_-]?secret|auth[_-]?key|credentials?)"
)
_ASSIGNMENT = re.compile(
    rf"(?i)\b{_SECRET_NAMES}\b\s*[:=]\s*(?P<quote>[\"']?)(?P<value>[^\s\"',;]+)(?P=quote)"
)
_PROSE = re.compile(
    r"(?i)\b(?:password|passwort|passphrase|passcode|kennwort|pin|token|secret)\b"
    r"(?:\s+(?:for|of|für|von|zu|to)\s+[\w.@-]+)?"
    r"\s+(?:is|was|ist|lautet|war|=)\s*:?\s*[\"'“„]?(?P<value>[^\s\"'”“]{3,}[^\s\"'”“.,;:!?)])"
)
_LONG_TOKEN = re.compile(r"[A-Za-z0-9+/_=-]{32,}")
_PLACEHOLDER = re.compile(
    r"(?i)^(?:[<${%].*|\*+|x+|\.{3}|…|null|none|changeme|redacted|"
    r"example|placeholder|your[_-].*|env\(.*\)|os\.environ.*|getenv.*|\{\{.*\}\})$"
)


@dataclass(frozen=True)
class SecretFinding:
    line: int  # 1-based
    kind: SecretKind

    def message(self) -> str:
        return (
            f"Line {self.line} looks like it holds a secret ({KIND_LABELS[self.kind]}). "
            "Remove that line and try again."
        )


def _entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def _random_looking(token: str) -> bool:
    stripped = token.strip("=-_")
    if len(stripped) < 32:
        return False
    segments = re.split(r"[-_/+=.]", stripped)
    if len(segments) >= 3 and all(len(segment) <= 12 for segment in segments):
        return False  # slugs, UUIDs and dashed identifiers
    has_digit = any(ch.isdigit() for ch in stripped)
    has_alpha = any(ch.isalpha() for ch in stripped)
    # Words joined by dashes or underscores (slugs, identifiers) are not random.
    longest_alpha_run = max((len(run) for run in re.findall(r"[a-z]+", stripped)), default=0)
    return has_digit and has_alpha and _entropy(stripped) >= 3.7 and longest_alpha_run < 12


def find_in_line(line: str) -> SecretKind | None:
    if any(pattern.search(line) for pattern in _KNOWN_TOKENS):
        return "known token format"
    for match in _ASSIGNMENT.finditer(line):
        if not _PLACEHOLDER.match(match["value"]) and len(match["value"]) >= 4:
            return "password assignment"
    for match in _PROSE.finditer(line):
        value = match["value"]
        if len(value) >= 4 and not _PLACEHOLDER.match(value):
            return "password in prose"
    if any(_random_looking(token) for token in _LONG_TOKEN.findall(line)):
        return "random-looking string"
    return None


def find_secret(text: str) -> SecretFinding | None:
    """The first line that looks like a secret, or None."""
    for number, line in enumerate(text.split("\n"), start=1):
        if (
            line.lstrip().startswith("<!-- memory:entry ")
            or line.strip() == "<!-- /memory:entry -->"
        ):
            continue  # fence lines carry our own hashes, not secrets
        kind = find_in_line(line)
        if kind:
            return SecretFinding(line=number, kind=kind)
    return None


MASK = "[masked]"


def mask_outbound(text: str) -> str:
    """Replace the values of password cues in prose before text leaves the host."""

    def masked(match: re.Match[str]) -> str:
        start, end = match.span("value")
        whole_start = match.start()
        segment = match.group(0)
        return segment[: start - whole_start] + MASK + segment[end - whole_start :]

    text = _PROSE.sub(masked, text)
    return _ASSIGNMENT.sub(
        lambda m: m.group(0) if _PLACEHOLDER.match(m["value"]) else masked(m), text
    )
