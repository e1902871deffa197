"""Known token formats (private key blocks, provider tokens) and long
random-looking strings."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator

from host.core import secret_words as words
from host.core.secret_guard.vocabulary import _PLACEHOLDER_PART, Span, _placeholder_token

# ------------------------------------------------------------------ known formats
_PROVIDER_PATTERNS = words.PROVIDER_PATTERNS
_KNOWN = re.compile(r"(?<![A-Za-z0-9])(?:" + "|".join(_PROVIDER_PATTERNS) + r")(?![A-Za-z0-9])")
_PRIVATE_KEY = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_TOKEN_BODY = re.compile(r"^(?:[A-Za-z]{1,12}[_.-](?:[a-z]{2,8}[_-])?(?:v1[_-]|[a-z]+\d\d-)?)")


_KNOWN_CANDIDATE = re.compile(r"[A-Za-z0-9_\-.+/=:]{15}")  # the shortest known token has 15


def _known_spans(line: str) -> Iterator[Span]:
    if _KNOWN_CANDIDATE.search(line):
        for match in _KNOWN.finditer(line):
            token = match.group(0)
            prefix = _TOKEN_BODY.match(token)
            if not _placeholder_token(token, prefix.end() if prefix else 0):
                yield match.span()
    if "-----BEGIN" in line:
        for match in _PRIVATE_KEY.finditer(line):
            yield match.span()


# ------------------------------------------------------------------ random-looking strings
_LONG_TOKEN = re.compile(r"[A-Za-z0-9+/_=-]{32,}")
_HEX = re.compile(r"^[0-9a-fA-F]+$")
_BENIGN_BEFORE = re.compile(
    r"(?i)(?:sha\d{1,3}|md5|sha|blake2[bs]?|base64|digest|etag)[:=,]\s*[\"']?$|"
    r"(?:data:[\w/+.-]+;base64,)$|(?:://[^\s]*)$"
)
_BENIGN_TOKEN = re.compile(
    r"^(?:AAAA[A-Za-z0-9]|MII[A-Za-z]|sha\d{3}-|bafy|Qm[1-9A-Za-z]{20}|bc1|tb1|age1|npub1|"
    r"chatcmpl-|file-|cus_|pi_|req_|msg_|run_|asst_|thread_|call_|evt_|txn_|sub_|price_|prod_)"
)


def _entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


_ALGORITHM_PREFIX = re.compile(r"^(?i:sha\d{0,3}|md5|blake2[bs]?)[=-]")


def _random_looking(token: str) -> bool:
    if _ALGORITHM_PREFIX.match(token):
        return False  # a digest (sha512-…, sha256=…), hex or base64
    stripped = token.strip("=-_")
    if len(stripped) < 32 or _HEX.match(stripped) or _BENIGN_TOKEN.match(stripped):
        return False
    segments = re.split(r"[-_/+=.]", stripped)
    if len(segments) >= 3 and all(len(segment) <= 12 for segment in segments):
        return False  # slugs, UUIDs and dashed identifiers
    has_digit = any(ch.isdigit() for ch in stripped)
    has_alpha = any(ch.isalpha() for ch in stripped)
    # Words joined by dashes or underscores (slugs, identifiers) are not random.
    longest_alpha_run = max((len(run) for run in re.findall(r"[a-z]+", stripped)), default=0)
    return has_digit and has_alpha and _entropy(stripped) >= 3.7 and longest_alpha_run < 12


def _random_spans(line: str) -> Iterator[Span]:
    for match in _LONG_TOKEN.finditer(line):
        token = match.group(0)
        if (
            _random_looking(token)
            and not _PLACEHOLDER_PART.search(token)
            and not _BENIGN_BEFORE.search(line, max(0, match.start() - 300), match.start())
        ):
            yield match.span()
