"""Assignments: a secret-named key with a literal value, credentials in URLs, SQL,
command lines and flags, a literal fallback after an environment lookup, authorization
headers."""

from __future__ import annotations

import re
from collections.abc import Iterator

from host.core import secret_words as words
from host.core.secret_guard.vocabulary import (
    _CONSTANT,
    _NOT_SECRET_WORDS,
    _PASSWORD_LABEL,
    _SECRET_WORDS,
    _VERSION,
    _WEAK_NAMES,
    Span,
    _clean,
    _literal,
    _markup_or_address,
    _password_like,
    _plain_word,
    _reference,
    _sentence_goes_on,
    _short_token,
    _word_value,
    _wordish,
    is_placeholder,
    is_secret_name,
    name_parts,
)

# ------------------------------------------------------------------ assignments
_CUES = words.CUES


_FLAG_CUE = re.compile(r"(?:^|\s)--?[A-Za-z]")


def _has_cue(line: str) -> bool:
    low = line.lower()
    return any(cue in low for cue in _CUES) or _FLAG_CUE.search(line) is not None


_LABEL = re.compile(
    r"(?i)(?<![\w.\-])(?P<key>[\w.\-]{0,40}?(?:pass|pw|pin|secret|token|key|schl\u00fcssel|cred|"
    r"kennwort|zugang|auth|geheim|psk|code)[\w.\-]{0,40})(?![\w.\-])"
)
_OPERATOR = re.compile(r"""^["'`]?\]?\s*(?P<op>:=|\?=|\+=|=>|==|=|:)(?!//)\s*""")
_VALUE = re.compile(
    r"""^(?:"(?P<dq>[^"\n]{0,300})"|'(?P<sq>[^'\n]{0,300})'|`(?P<bq>[^`\n]{0,300})`|"""
    r"""(?P<bare>(?:[^\s,;\\]++|\\(?![ntr]))++))"""
)
_XML_VALUE = re.compile(r"^>(?P<value>[^<\s][^<]{2,})</")
_JUXTAPOSED = re.compile(r"""^[ \t]+["'\u201e\u201c]?(?P<value>[^\s"'\u201c\u201d]{1,300})""")
_PIN = re.compile(r"^\d{4,8}$")
_PREVIOUS_WORD = re.compile(r"([\w-]+)[\s\"'`]*$")


def _previous_word(line: str, start: int) -> str:
    match = _PREVIOUS_WORD.search(line, max(0, start - 64), start)
    return match.group(1) if match else ""


# How far past a key its operator and value are read: a value is at most 300 characters,
# and copying the whole rest of a 64 KiB line for every key would be quadratic.
_WINDOW = 400


def _assignment_spans(line: str, *, juxtaposed: bool) -> Iterator[Span]:
    """Values after a secret-named key: with an operator, or (juxtaposed) right after it."""
    for match in _LABEL.finditer(line):
        key = match["key"]
        weak = False
        if not is_secret_name(key, _previous_word(line, match.start())):
            # `REDIS_AUTH=…`, `license_key: …`: such names hold a secret only when the
            # value looks like a token.
            parts = name_parts(key)
            if not parts or parts[-1] not in _WEAK_NAMES or juxtaposed:
                continue
            weak = True
        end = match.end()
        rest = line[end : end + _WINDOW]
        pin_label = "pin" in name_parts(key) or "geheimzahl" in key.lower()
        if line[match.start() - 1 : match.start()] == "<" and (xml := _XML_VALUE.match(rest)):
            value = xml["value"].strip()
            if not juxtaposed and _literal(value, quoted=True):
                start = end + xml.start("value")
                yield start, start + len(value)
            continue
        operator = _OPERATOR.match(rest)
        if operator:
            if not juxtaposed and (
                span := _assigned_value(line, key, end, operator, weak=weak, pin_label=pin_label)
            ):
                yield span
            continue
        if not juxtaposed and not weak and (span := _value_after_label_tail(line, end, pin_label)):
            yield span
            continue
        following = _JUXTAPOSED.match(rest) if juxtaposed else None
        # `{% csrf_token %}`, `api_key }}`: template syntax, not a value.
        if following and following["value"][:1].isalnum():
            value = _clean(following["value"])
            if _password_like(value) or (pin_label and _PIN.match(value)):
                start = end + following.start("value")
                yield start, start + len(value)


def _assigned_value(
    line: str, key: str, end: int, operator: re.Match[str], *, weak: bool, pin_label: bool
) -> Span | None:
    """The value after `key =` (the key ends at `end`) when it looks like a secret."""
    rest = line[end : end + _WINDOW]
    value_match = _VALUE.match(rest[operator.end() :])
    if not value_match:
        return None
    group = next(g for g in ("dq", "sq", "bq", "bare") if value_match[g] is not None)
    raw = value_match[group]
    value = _clean(raw) if group == "bare" else raw
    if group == "bq" and " " in value.strip():
        return None  # `source env/bin/activate`: a command in code, not a value
    if group == "bare" and _markup_or_address(raw):
        return None
    if pin_label and _PIN.match(value):
        ok = True
    elif weak:
        ok = _short_token(value) and not any(p in _NOT_SECRET_WORDS for p in name_parts(key))
    else:
        value_end = end + operator.end() + value_match.end(group)
        after_start = end + operator.end() + value_match.start(group) + len(value)
        after = line[after_start : after_start + 64]
        ok = _literal(value, quoted=group in ("dq", "sq"), after=after) and not (
            group != "dq"
            and group != "sq"
            and (
                _sentence_goes_on(value, raw, line, value_end)
                or (_word_value(value) and not _PASSWORD_LABEL.search(key))
            )
        )
    if not ok:
        return None
    start = end + operator.end() + value_match.start(group)
    return start, start + len(value)


# A label with the service after it: "PIN Sparkasse: 1234", "Passwort fürs NAS = …".
_LABEL_TAIL = re.compile(
    r"(?:\s+(?:f\u00fcr|f\u00fcrs|for|vom|von|of|zum|zur|beim|bei|at|on)\s+[\w!.@&+-]{1,30}"
    r"|\s+[A-Z\d][\w!.@&+-]{0,30}){1,2}(?=\s*(?::|=)\s)"
)
_TAIL_OPERATOR = re.compile(r"\s*[:=]\s*")
_TAIL_VALUE = re.compile(r"""["'`]?(?P<value>[^\s"'`]{4,200})["'`]?(?:\s|$)""")


def _value_after_label_tail(line: str, end: int, pin_label: bool) -> Span | None:
    tail = _LABEL_TAIL.match(line, end)
    if not tail or any(p in _NOT_SECRET_WORDS for p in name_parts(tail.group(0))):
        return None
    operator = _TAIL_OPERATOR.match(line, tail.end())
    found = _TAIL_VALUE.match(line, operator.end()) if operator else None
    if not found:
        return None
    value = _clean(found["value"])
    if not _lone_value(value, pin=pin_label):
        return None
    return found.start("value"), found.start("value") + len(value)


def _names_a_field(value: str) -> bool:
    """`password_hash`, `token-budget`, `api.key`: an identifier, not a value."""
    pieces = re.split(r"[-_.]", value.lower())
    return len(pieces) > 1 and any(p in _NOT_SECRET_WORDS or p in _SECRET_WORDS for p in pieces)


_FILE_NAME = re.compile(r"^[\w-]+\.[a-z]{1,4}$")
_LOWER_WORDS = re.compile(r"^[a-z]+(?:[-_.][a-z]+)+$")


def _lone_value(value: str, *, pin: bool) -> bool:
    """A value standing alone where a label's value goes (a table cell, the line below, the
    rest of a file name): a PIN after a PIN label, else letters with digits or symbols."""
    value = value.strip("`\"'")
    if pin and _PIN.match(value):
        return True
    if (
        len(value) < 6
        or value.startswith(("--", "http", "$", "{", "<", "%"))
        or _CONSTANT.match(value)
        or _FILE_NAME.match(value)
        or _LOWER_WORDS.match(value)
        or _reference(value)
        or _VERSION.match(value)
        or is_placeholder(value)
        or _wordish(value)
        or any(c in value for c in "()=[]{}")
        or _names_a_field(value)
        or _markup_or_address(value)
    ):
        return False
    if _short_token(value):
        return True
    letters = any(c.isalpha() for c in value)
    others = any(c.isdigit() or c in "!#$%&*?@+_-." for c in value)
    return letters and others


# Credentials inside a URL: scheme://user:password@host
_URL_CREDENTIALS = re.compile(
    r"(?i)\b[a-z][a-z0-9+.\-]{1,20}://[^\s:/@?#]{0,100}:(?P<value>[^\s/]{1,200}?)@"
    r"(?=[\w.\-\[\]]+(?::\d+)?(?:[/\s?#\"'`)]|$))"
)
_SQL = re.compile(
    r"(?i)\bidentified\s+by\s+(?:password\s+)?(?P<q>[\"'`]?)(?P<value>[^\s\"'`;]+)(?P=q)"
    r"|(?<![\"'\w])password\s*(?:=\s*)?(?:password\s*)?(?:\(\s*)?(?P<q2>[\"'])(?P<value2>[^\s\"']{3,})(?P=q2)"
)
_FLAG = re.compile(
    r"""(?<!\S)-{1,2}(?P<flag>[A-Za-z][\w-]{1,40})(?:(?P<eq>=)|\s+)"""
    r"""(?:"(?P<dq>[^"\n]{0,300})"|'(?P<sq>[^'\n]{0,300})'|(?P<bare>[^\s"']{1,300}))"""
)
_USER_FLAG = re.compile(
    r"""(?<!\S)(?:-u|--user|--basic-auth)(?:=|\s+)["']?[^\s:"']{1,100}:(?P<value>[^\s"']{1,300})"""
)
_COMMAND_PASSWORD = re.compile(
    r"""(?i)\b(?:mysql\w*|mariadb[\w-]*)\b.{0,200}?(?<!\S)-p(?:"(?P<dq>[^"]+)"|'(?P<sq>[^']+)'|(?P<bare>[^\s"']+))"""
    r"""|\b(?:login|sshpass)\b.{0,200}?(?<!\S)-p\s+(?:"(?P<dq2>[^"]+)"|'(?P<sq2>[^']+)'|(?P<bare2>[^\s"']+))"""
    r"""|\bopenssl\b.{0,200}?(?<!\S)-(?:k|pass|passin|passout)\s+(?:pass:)?(?P<bare3>[^\s"']+)"""
    r"""|(?<!\S)-u\s+\S+\s+(?:\S+\s+){0,3}?-p\s+(?P<bare8>(?!\d+(?::\d+)*(?:/\w+)?(?:\s|$))[^\s"'-][^\s"']*)"""
    r"""|\bredis-cli\b.{0,200}?(?<!\S)-a\s+(?P<bare7>[^\s"']+)"""
    r"""|\bhtpasswd\s+-\w*b\w*\s+(?:-\w+\s+){0,3}\S+\s+\S+\s+(?P<bare4>[^\s"']+)"""
    r"""|(?:password|passwd|token|secret)[\w-]*\s*=?\s*<\(\s*echo\s+["']?(?P<bare5>[^\s"')]+)"""
    r"""|\becho\s+["']?(?P<bare6>[^\s"'|]+)["']?\s*\|\s*[\w-]+\s+login\b"""
)
_FALLBACK = re.compile(
    r"""["'](?P<name>[\w.-]{1,80})["']\s*,\s*(?:default\s*=\s*)?["'](?P<value>[^"'\n]{1,300})["']"""
    r"""|(?<![\w.])(?P<name2>[\w.]{1,80})["']?(?:\s*\))?\s*(?:\|\||\?\?|\bor\b)\s*["']"""
    r"""(?P<value2>[^"'\n]{1,300})["']"""
    r"""|\$\{(?P<name3>\w{1,80}):?[-=](?P<value3>[^}\s]{1,200})\}"""
)
_AUTH_HEADER = re.compile(
    r"""(?i)\b(?:proxy-)?authorization\b["']?\s*[:=]\s*["']?(?:bearer|basic|token|bot|digest|"""
    r"""apikey|sso-key|key|negotiate)\s+(?P<value>[^\s"',;]+)"""
    r"""|\bbearer\s+(?P<value2>[A-Za-z0-9._~+/=-]{12,500})"""
)


def _group_value(match: re.Match[str], *names: str) -> tuple[str, Span] | None:
    for name in names:
        if match[name] is not None:
            return match[name], match.span(name)
    return None


def _url_spans(line: str) -> Iterator[Span]:
    if "://" in line:
        for match in _URL_CREDENTIALS.finditer(line):
            if len(match["value"]) >= 3 and not is_placeholder(match["value"]):
                yield match.span("value")


_COMMAND_WORDS = (
    "mysql",
    "mariadb",
    "login",
    "sshpass",
    "openssl",
    "redis-cli",
    "htpasswd",
    "echo",
    "-u ",
)


def _command_spans(line: str) -> Iterator[Span]:
    # Each pattern runs only when its literal cue is on the line: most lines have none.
    low = line.lower()
    if "identified" in low or "password" in low:
        yield from _sql_spans(line)
    if _FLAG_CUE.search(line) is not None:
        yield from _flag_spans(line)
    if any(word in low for word in _COMMAND_WORDS):
        yield from _command_password_spans(line)
    if "||" in line or "??" in line or " or " in low or "${" in line or "," in line:
        yield from _fallback_spans(line)
    if "auth" in low or "bearer" in low:
        yield from _auth_header_spans(line)


def _sql_spans(line: str) -> Iterator[Span]:
    for match in _SQL.finditer(line):
        found = _group_value(match, "value", "value2")
        # `IDENTIFIED BY :pw`, `%s`, `?`: bound parameters, not values.
        if (
            found
            and len(found[0]) >= 3
            and not found[0].startswith((":", "?", "@", "%"))
            and not is_placeholder(found[0])
        ):
            yield found[1]


def _flag_spans(line: str) -> Iterator[Span]:
    for match in _FLAG.finditer(line):
        found = _group_value(match, "dq", "sq", "bare")
        if (
            found
            and is_secret_name(match["flag"])
            and not found[0].startswith("-")
            and _literal(found[0], quoted=match["bare"] is None)
            # "use the --token flag": a spaced bare word is prose, not a value.
            and (match["eq"] or match["bare"] is None or not _plain_word(found[0]))
        ):
            yield found[1]
    for match in _USER_FLAG.finditer(line):
        if not is_placeholder(match["value"]) and len(match["value"]) >= 3:
            yield match.span("value")


def _command_password_spans(line: str) -> Iterator[Span]:
    for match in _COMMAND_PASSWORD.finditer(line):
        found = _group_value(
            match,
            "dq",
            "sq",
            "bare",
            "dq2",
            "sq2",
            "bare2",
            "bare3",
            "bare4",
            "bare5",
            "bare6",
            "bare7",
            "bare8",
        )
        if found and len(found[0]) >= 3 and not is_placeholder(found[0]):
            yield found[1]


def _fallback_spans(line: str) -> Iterator[Span]:
    for match in _FALLBACK.finditer(line):
        name = (match["name"] or match["name2"] or match["name3"] or "").rsplit(".", 1)[-1]
        found = _group_value(match, "value", "value2", "value3")
        if found and is_secret_name(name) and _literal(found[0], quoted=True):
            yield found[1]


def _auth_header_spans(line: str) -> Iterator[Span]:
    for match in _AUTH_HEADER.finditer(line):
        found = _group_value(match, "value", "value2")
        if found:
            value = _clean(found[0])
            if len(value) >= 8 and not is_placeholder(value) and not _wordish(value):
                yield found[1][0], found[1][0] + len(value)
