"""Prose: "my password is …", "Das Passwort lautet …", a random-looking token right
after a label."""

from __future__ import annotations

import re
from collections.abc import Iterator

from host.core.secret_guard.assignments import _PIN, _group_value
from host.core.secret_guard.vocabulary import (
    _CONSTANT,
    _KEY_WORDS,
    _NOT_SECRET_WORDS,
    _PASS_LOOKALIKES,
    _PASSWORD_LABEL,
    _SECRET_WORDS,
    Span,
    _clean,
    _code_in_prose,
    _markup_or_address,
    _reference,
    _sentence_goes_on,
    _short_token,
    _word_value,
    _wordish,
    is_placeholder,
    name_parts,
)

# ------------------------------------------------------------------ prose
_PROSE_LABEL = (
    r"(?:password|passwort|passphrase|passcode|kennwort|pin|pw|pwd|token|secret|geheimzahl|"
    r"zugangsdaten|passw|(?:door|access|alarm|lock|safe|gate|garage|entry|security)[ -]?code|"
    r"t\u00fcrcode|zugangscode|tresorcode|alarmcode|sicherheitscode|geheimnis|"
    r"schl\u00fcssel|api[ -]?key|access[ -]?key|pin[ -]?code)"
)
_SET_LABEL = rf"(?:{_PROSE_LABEL}|pass)"
_PROSE = re.compile(
    rf"(?i)(?<![\w-])[\w-]{{0,30}}?{_PROSE_LABEL}\b"
    r"(?:\s+(?:for|of|to|on|at|in|from|f\u00fcr|f\u00fcrs|von|vom|zu|zum|zur|im|bei|des|der|the|my|our|"
    r"your|den|dem|das|die|meiner|meines|meinem|meinen|meine|mein|deiner|deines|unserer|"
    r"unseres|unsere)\b(?:\s+[\w.@'\u2019!-]+){1,3}?|\s+(?-i:[A-Z])[\w.@!-]{1,30})?"
    r"\s*(?:\b(?:is|was|ist|war|lautet|hei\u00dft|are|sind|lauten)"
    r"(?:\s+(?:now|still|jetzt|noch|nun|(?:set|changed)\s+to))?\b|[:=]|\bnow\b)"
    r"\s*[\"'\u201c\u201e\u201a`]?(?P<value>(?:[^\s\"'\u201d\u201c`\\]|\\(?![ntr])){1,300})"
)
_PROSE_SET = re.compile(
    rf"(?i)\b(?:set|changed?|reset|updated?|made)\b.{{0,30}}?{_SET_LABEL}\s+(?:to|into)\s+"
    r"[\"'\u201c\u201e]?(?P<value>[^\s\"'\u201d\u201c`]{1,300})"
    rf"|\b{_PROSE_LABEL}(?:\s+[\w!.@-]{{1,30}}){{0,4}}?\s+(?:auf|zu|in)\s+[\"'\u201e]?(?P<value2>[^\s\"'\u201c`]{{1,300}})"
    r"[\"'\u201c]?\s+"
    r"(?:ge\u00e4ndert|gesetzt|umgestellt|ge\u00e4ndert)"
)
_PROSE_VALUE_FIRST = re.compile(
    r"(?i)\b(?:use|used|using|nimm|nehme|verwende|take|took)\s+[\"'\u201e\u201c]?(?P<value>[^\s\"'\u201c\u201d]{1,100})"
    rf"[\"'\u201c\u201d]?\s+(?:as|als)\s+(?:\w+\s+){{0,2}}{_SET_LABEL}\b"
    r"|^\s*[\"'\u201e\u201c]?(?P<value2>[^\s\"'\u201c\u201d]{1,100})[\"'\u201c\u201d]?\s+(?:is|ist)\s+(?:my|the|our|his|her|mein|"
    rf"meine|das|unser)\s+(?:[\w-]+\s+)?{_PROSE_LABEL}\b"
)
_LOGIN_PAIR = re.compile(
    r"(?i)\b(?:login|logins|credentials|creds|zugangsdaten|zugang|anmeldedaten|account|konto|"
    r"access)\b"
    r"[^:/\n]{0,30}?(?::|\bare\b|\bsind\b|\bis\b)\s*[\"']?[^\s/\"'~.][^\s/\"']{0,99}[\"']?\s*/\s*"
    r"[\"']?(?P<value>[^\s\"'/]{1,300})(?![\w/])"
    r"|\b(?:login|log\s+in|sign\s+in|anmelden)\s+(?:with|mit|as|als)\s+[^\s:]{1,100}:(?P<value2>\S{1,300})"
)


def _prose_spans(line: str) -> Iterator[Span]:
    for pattern in (_PROSE, _PROSE_SET, _PROSE_VALUE_FIRST, _LOGIN_PAIR):
        for match in pattern.finditer(line):
            found = _group_value(match, "value", "value2")
            if not found:
                continue
            value = _clean(found[0]).rstrip(".,;:!?")
            value_end = found[1][0] + len(value)
            if _markup_or_address(found[0]) or (
                _word_value(value) and not _PASSWORD_LABEL.search(match.group(0))
            ):
                continue  # "the token is within …": a token or key is never a plain word
            if _PIN.match(value) or (
                len(value) >= 4
                and not is_placeholder(value)
                and not _wordish(value)
                and not _reference(value)
                and not _CONSTANT.match(value)
                and not _code_in_prose(value, line[value_end : value_end + 64])
                and not _sentence_goes_on(value, found[0], line, found[1][1])
            ):
                yield found[1][0], value_end


# A random-looking token soon after a label: "api token a8Fk29dLq0Zx7Wm3", "Token fürs X …".
_TOKEN_LABEL = re.compile(
    r"(?i)(?<![\w-])(?P<label>[\w-]{0,30}?(?:token|key|secret|schl\u00fcssel|credential|passwor[dt]|"
    r"pw|pwd|kennwort|pass))(?![\w-])"
)
_WORD_SPLIT = re.compile(r"[^\s=:]+")


def _labelled_token_spans(line: str) -> Iterator[Span]:
    for match in _TOKEN_LABEL.finditer(line):
        parts = name_parts(match["label"])
        if not parts or not (
            parts[-1] in _SECRET_WORDS or parts[-1] in _KEY_WORDS or "token" in parts
        ):
            continue
        if any(part in _NOT_SECRET_WORDS for part in parts) or "".join(parts) in _PASS_LOOKALIKES:
            continue
        for seen, word in enumerate(_WORD_SPLIT.finditer(line, match.end())):
            if seen >= 5:
                break
            raw = word.group(0)
            if raw.startswith(("//", "http")):
                break  # an address follows the label, not its value
            value = raw.strip("\"'`()[]{},;\u2013\u2014-\u201c\u201d\u201e")
            if _short_token(value):
                start = word.start() + raw.index(value)
                yield start, start + len(value)
                break
            if any(c.isdigit() for c in raw) or "/" in raw or "@" in raw:
                break  # a number, path or address: the label's value is not a token
