"""Secret guard (M11): refuse secrets in anything the model reads back.

Four kinds are detected. A finding names the line and the kind, never the value.

Every line is first normalised (NFKC, invisible format characters removed, common
Cyrillic/Greek look-alike letters mapped to Latin) so a token cannot slip through
with a zero-width space or fullwidth letters. Then, in order:

- known token formats: private key blocks and provider tokens, each with a
  placeholder check (``xxxx``, ``EXAMPLE``, ``1111…``, ``<your-token>``);
- assignments: a secret-named key (any prefix, camelCase, quoted JSON keys, short
  labels ``pw``/``pass``/``pwd``, German labels, PIN) with a literal value after any
  operator (``=``, ``:``, ``:=``, ``?=``, ``=>``…), credentials in URLs, SQL
  ``IDENTIFIED BY``/``PASSWORD '…'``, command-line flags, a literal fallback after an
  environment lookup, authorization headers;
- prose: "my password is …", "Das Passwort lautet …", "use … as the password",
  a random-looking token right after a label;
- a long random-looking string, except digests, commit ids, public key material,
  data URIs and UUIDs.

Label rules read a line with Markdown emphasis blanked out (`**Password**: …`). Some
secrets need the lines around (`_context_spans`): a table row whose cell, or whose header
above, names a secret, and a label alone on its line with the value on the next line with
text; a finding points at the value's line. `find_in_name` checks file and folder names
(memory_addon/core/paths.py refuses such a path).

Benchmark and labelled set: benchmarks/secret_guard_bench.py, docs/benchmarks.md.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Literal

from host.core import secret_words as words
from host.core.entry_fence import ORIGINS, SOURCES
from host.core.invisible import INVISIBLE, LOOKALIKES

SecretKind = Literal[
    "known token format",
    "password assignment",
    "password in prose",
    "random-looking string",
    "stored secret",
]

MASK = "[masked]"

Span = tuple[int, int]


# ------------------------------------------------------------------ normalisation
def plain(text: str) -> str:
    """Every invisible character removed, then NFKC: the form a masked line goes out in
    (the same form the untrusted-text wrappers write, so a wrapped text stays as it is)."""
    if text.isascii():
        return text
    return unicodedata.normalize("NFKC", INVISIBLE.sub("", text))


def normalise(text: str) -> str:
    """The text as the guard reads it: `plain`, with look-alike letters mapped to Latin.

    The mapping is one character for one, so a span found here is the same span in the
    plain text; the look-alikes themselves are never written out (a Cyrillic letter in a
    closing tag must not come back as a Latin one).
    """
    return plain(text).translate(LOOKALIKES) if not text.isascii() else text


# ------------------------------------------------------------------ placeholders
_PLACEHOLDER_WORDS = words.PLACEHOLDER_WORDS
_PLACEHOLDER_PART = re.compile(
    r"(?i)x{4}|\*{3}|\u2022{3}|\.\.\.|\u2026|example|changeme|redacted|placeholder|dummy|"
    r"^your|[_-]your|your[_-]|[_-]here$|_here_|insert[_-]|replace[_-]?me|<[^>]*>|\{\{|"
    r"%\(\w+\)[sdfr]|\{\w*\}"
)
_SEQUENCE = re.compile(r"(?i)0123456789|123456789|abcdefghij|qwertyuiop")
# References and markup rather than values: $VAR, ${VAR}, {{ x }}, <token>, %VAR%, YAML tags,
# anchors and block markers, a bare comment sign.
_REFERENCE_VALUE = re.compile(
    r"^(?:\$|\{|<|\?|%\w+%|![A-Za-z]+$|[|>][-+]?$|[*\u2022]+$|[&*][A-Za-z_]+$|#$|[\[(])"
)
_REPEATED = re.compile(r"(.)\1{7,}")


def _low_variety(value: str) -> bool:
    distinct = len(set(value))
    return distinct <= 2 or (len(value) >= 12 and distinct <= 4)


@functools.lru_cache(maxsize=4096)
def is_placeholder(value: str) -> bool:
    """A stand-in for a secret: a template, an ellipsis, a run of one character…"""
    if not value or _REFERENCE_VALUE.match(value) or _REPEATED.search(value):
        return True
    if value.lower() in _PLACEHOLDER_WORDS:
        return True
    if " " in value and all(
        word in _PLACEHOLDER_WORDS or word in _STOPWORDS or word in _SECRET_WORDS or word == "api"
        for word in value.lower().split()
    ):
        return True  # "My API Key", "your token here"
    return bool(_PLACEHOLDER_PART.search(value)) or _low_variety(value)


def _placeholder_token(token: str, body_start: int) -> bool:
    body = token[body_start:]
    return (
        is_placeholder(body)
        or bool(_SEQUENCE.search(body))
        or bool(_PLACEHOLDER_PART.search(token))
        or _low_variety(re.sub(r"[^A-Za-z0-9]", "", body))
    )


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


# ------------------------------------------------------------------ names
_SECRET_WORDS = words.SECRET_WORDS
_SECRET_SUFFIXES = words.SECRET_SUFFIXES
_KEY_QUALIFIERS = words.KEY_QUALIFIERS
_KEY_WORDS = words.KEY_WORDS
_NOT_SECRET_WORDS = words.NOT_SECRET_WORDS
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z\u00e4\u00f6\u00fc\u00df]+|\d+")
_SPLIT_NAME = re.compile(r"[_.\-\s$@/\[\]]+")


# Names repeat (a file has the same keys over and over): both are cached.
@functools.lru_cache(maxsize=4096)
def name_parts(name: str) -> tuple[str, ...]:
    parts: list[str] = []
    for chunk in _SPLIT_NAME.split(name):
        if chunk:
            parts.extend(p.lower() for p in _CAMEL.findall(chunk) or [chunk])
    return tuple(parts)


@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str, previous_word: str = "") -> bool:
    """Does a key, flag or label name a secret? (`db_password`, `smtpPass`, `x-api-key`…)"""
    parts = name_parts(name)
    if not parts or any(part in _NOT_SECRET_WORDS for part in parts):
        return False
    if "".join(parts) in _PASS_LOOKALIKES:  # "ByPass"
        return False
    for index, part in enumerate(parts):
        if part in _SECRET_WORDS:
            return True
        if part.endswith(_SECRET_SUFFIXES) and len(part) > 4 and part not in _PASS_LOOKALIKES:
            return True
        if part in _KEY_WORDS or part == "code":
            before = parts[index - 1] if index else previous_word.lower()
            qualifiers = _KEY_QUALIFIERS if part in _KEY_WORDS else words.CODE_QUALIFIERS
            if before in qualifiers:
                return True
    return False


_WEAK_NAMES = words.WEAK_NAMES
_PASS_LOOKALIKES = words.PASS_LOOKALIKES

# ------------------------------------------------------------------ values
_STOPWORDS = words.STOPWORDS
_BENIGN_SUFFIX = re.compile(
    r"(?:ed|ing|ly|able|ible|ful|less|ous|ive|ent|ant|ion|ness|"
    r"lich|ig|bar|iert|ungen|ung|los|voll)$"
)
_GERMAN_PARTICIPLE = re.compile(r"^ge\w{3,}(?:t|en)$")
_REFERENCE = re.compile(
    r"^(?:[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+|[A-Za-z_][\w.]*\s*[\[(].*|\.{0,2}/\S*|~/\S*)$"
)
# "Tanne.Fahrrad.Hund", "Meadow2013.Q3": words or a word and digits joined by dots read as a
# passphrase, not as an attribute path (`settings.SECRET_KEY`, `os.environ`).
_DOTTED_PASSPHRASE = re.compile(
    r"^(?=[^_]*$)(?:(?=.*[A-Z])(?:[A-Z]?[a-z]{2,}\.){2,}[A-Z]?[a-z]{2,}|(?=.*[A-Z]).*[A-Za-z]\d{2,}.*)$"
)


def _reference(value: str) -> bool:
    return bool(_REFERENCE.match(value)) and not _DOTTED_PASSPHRASE.match(value)


_TRAILING = ")]}>\"'`,;\\"


def _clean(value: str) -> str:
    value = value.strip().rstrip(_TRAILING)
    if value.endswith(".") and not value.endswith(".."):
        value = value[:-1]
    return value


def _wordish(value: str) -> bool:
    """A plain word or a word form that reads as prose, not as a password."""
    low = value.lower()
    if low in _STOPWORDS:
        return True
    if not value.isalpha() or not (value.islower() or value[1:].islower()):
        return False
    return bool(_BENIGN_SUFFIX.search(low) or _GERMAN_PARTICIPLE.match(low))


_CONSTANT = re.compile(r"^[A-Z][A-Z]*(?:_[A-Z]+)+$")
_IDENTIFIER = re.compile(r"^[A-Za-z_]+$")
# After a bare identifier: the rest of an expression or a call's argument list, so code.
_CODE_AFTER = re.compile(r"^(?:[),\]]|\s+(?:[-+*/%|&^]|if|or|and|\?\?)\s)")


_OPERATOR_AFTER = re.compile(r"^\s+[-+*/%|&^]\s")
_TYPE_NAME = re.compile(r"^[A-Z][a-z]+[A-Z][A-Za-z]*$")


def _code_in_prose(value: str, after: str) -> bool:
    """`token = PREFIX + x`, `token: ApiToken)`: code, though a sentence may look alike."""
    if not _IDENTIFIER.match(value):
        return False
    return bool(_OPERATOR_AFTER.match(after)) or (
        after[:1] in (")", ",") and bool(_TYPE_NAME.match(value))
    )


@functools.lru_cache(maxsize=4096)  # a long line repeats its values
def _literal(value: str, *, quoted: bool, after: str = "") -> bool:
    """Is an assigned value a literal secret (not a reference, type, placeholder or word)?

    `after` is the text right after an unquoted value, to tell code from a value.
    """
    if len(value) < 4 or is_placeholder(value) or _wordish(value) or _VERSION.match(value):
        return False
    if quoted:
        return True
    if _reference(value) or _CONSTANT.match(value) or _markup_or_address(value):
        return False
    if _IDENTIFIER.match(value) and _CODE_AFTER.match(after):
        return False  # `token: ApiToken)`, `x = data_dir / "file"`, `a = PREFIX + b`
    # `password = user_password`, `token: API_TOKEN`: a name that names a secret, not one.
    return not (re.fullmatch(r"[a-z_][a-z0-9_]*|[A-Z_][A-Z0-9_]*", value) and is_secret_name(value))


def _plain_word(value: str) -> bool:
    return value.isalpha() and value.islower()


_WORD_VALUE = re.compile(r"[^\W\d_]+(?:[-_'][^\W\d_]+)*")


def _word_value(value: str) -> bool:
    """Letters only, maybe joined (`Local`, `built-in`, `source_paths`): never a token or
    key. Three or more joined words with capitals are a passphrase (`Ocean_sommer_Falcon`)."""
    if not _WORD_VALUE.fullmatch(value):
        return False
    pieces = re.split(r"[-_']", value)
    return len(pieces) < 3 or all(piece.islower() for piece in pieces)


_MARKUP = re.compile(
    r"://|\]\(|::|:$|^\||^<|\bimage:|\balt=|\bsrc=|\bhref=|=[{(\"']|\([\"']|^-{1,2}[A-Za-z][\w-]*="
)


def _markup_or_address(value: str) -> bool:
    """Markup, a link or an address after a label (`image::`, `](…)`, `redis://host`):
    credentials in a URL have their own rule."""
    return bool(_MARKUP.search(value))


def _password_like(value: str) -> bool:
    """A bare value with no operator before it: needs letters and digits or symbols."""
    if len(value) < 6 or _wordish(value) or is_placeholder(value) or _reference(value):
        return False
    # Sentence and markup punctuation around a word, as in "Passwort vergessen?", "**guard.**".
    if _markup_or_address(value):
        return False  # a Markdown link: "[Token bucket](#token-bucket)"
    core = value.strip(".,;:!?*_~()[]`")
    has_alpha = any(c.isalpha() for c in core)
    has_other = any(c.isdigit() or c in "!#$%&*?@+_-." for c in core)
    return has_alpha and has_other and not value.startswith(("http", "-"))


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


# Labels whose value may be a plain word ("the wifi password is swordfish").
_PASSWORD_LABEL = re.compile(r"(?i)pass|passw|kennwort|\bpwd?\b")
_NEXT_WORD = re.compile(r"[ \t]+([^\W\d_]+)\b")
_NEXT_LETTER_WORD = re.compile(r"[ \t]+[^\W\d_]{2,}")
_JOINERS = frozenset({"and", "und", "but", "aber", "or", "oder", "so", "also", "then", "dann"})


def _sentence_goes_on(value: str, raw: str, line: str, end: int) -> bool:
    """A plain word the sentence runs on from: "the password is case sensitive",
    "password: Flag to say if the field …"."""
    if not value.isalpha() or raw.rstrip(".,;") != value:
        return False
    following = _NEXT_WORD.match(line, end)
    if following and following.group(1).lower() in _JOINERS:
        return False  # "the password is swordfish, and …"
    if raw != value or not value.islower():
        # "Python Promises", "Methode mit Argumenten", "retrieval. To": a capitalised word,
        # or a word that ends a sentence, with more words after it.
        return _NEXT_LETTER_WORD.match(line, end) is not None
    return following is not None and following.group(1).lower() not in _JOINERS


# A random-looking token soon after a label: "api token a8Fk29dLq0Zx7Wm3", "Token fürs X …".
_TOKEN_LABEL = re.compile(
    r"(?i)(?<![\w-])(?P<label>[\w-]{0,30}?(?:token|key|secret|schl\u00fcssel|credential|passwor[dt]|"
    r"pw|pwd|kennwort|pass))(?![\w-])"
)
_TOKEN_CHARS = re.compile(r"^[A-Za-z0-9_\-+/=.]{12,}$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_VERSION = re.compile(r"^v?\d+(?:\.\d+)+")
_WORD_SPLIT = re.compile(r"[^\s=:]+")


_DIGIT = re.compile(r"\d")
_LETTER = re.compile(r"[A-Za-z]")


def _short_token(token: str) -> bool:
    return (
        len(token) <= 200
        and bool(_TOKEN_CHARS.match(token))
        and _DIGIT.search(token) is not None
        and _LETTER.search(token) is not None
        and not _UUID.match(token)
        and not _VERSION.match(token)
        and not is_placeholder(token)
        and not _SEQUENCE.search(token)
    )


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


# ------------------------------------------------------------------ public API
# ------------------------------------------------------------------ Markdown
# Emphasis around a label (`**Password**:`, `*Passwort:*`, `__token__ =`) is blanked out
# (same length, so spans still point into the line) before the label rules read it; code
# spans keep theirs, since a value may hold `*` or `_`.
_CODE_SPAN = re.compile(r"`[^`]*`")
_EMPHASIS = re.compile(
    r"(?:(?<=[\s(\[|>])|^)[*_]{1,3}(?=[^\W_])|(?<=[^\W_]|[:.!?)\]])[*_]{1,3}(?=$|[\s:,.;)|=])"
)


def _unmark(line: str) -> str:
    if "*" not in line and "_" not in line:
        return line
    out: list[str] = []
    last = 0
    for code in _CODE_SPAN.finditer(line):
        out += [_EMPHASIS.sub(_blank, line[last : code.start()]), code.group(0)]
        last = code.end()
    out.append(_EMPHASIS.sub(_blank, line[last:]))
    return "".join(out)


def _blank(match: re.Match[str]) -> str:
    return " " * len(match.group(0))


_LABEL_WORD = re.compile(r"[^\s|:=`*#>()\[\]]+")
_PIN_WORDS = frozenset({"pin", "pincode", "geheimzahl", "code", "zugangscode", "geheimcode"})


def label_kind(text: str) -> Literal["pin", "secret"] | None:
    """Does a short text (a table cell, a heading, a line of its own) name a secret?

    "pin" when a number alone would be its value (PIN, door code), "secret" otherwise.
    """
    found = _LABEL_WORD.findall(text)
    if not 1 <= len(found) <= 6:
        return None
    kind: Literal["pin", "secret"] | None = None
    previous = ""
    for word in found:
        parts = name_parts(word)
        if any(part in _NOT_SECRET_WORDS for part in parts):
            return None
        if is_secret_name(word, previous) or parts[-1:] == ("schl\u00fcssel",):
            pin_like = any(p in _PIN_WORDS or p.endswith("code") for p in parts)
            kind = "pin" if pin_like or kind == "pin" else "secret"
        previous = word
    return kind


_PIPE = re.compile(r"(?<!\\)\|")
_SEPARATOR_CELL = re.compile(r"^\s*:?-{2,}:?\s*$")
_MAX_CELLS = 32


def table_cells(line: str) -> list[Span]:
    """The cells of a Markdown table row (between its pipes), or [] for any other line."""
    stripped = line.strip()
    if not stripped.startswith("|") or stripped.count("|") < 2:
        return []
    pipes = [m.start() for m in _PIPE.finditer(line)][: _MAX_CELLS + 1]
    return [(a + 1, b) for a, b in itertools.pairwise(pipes)]


def _cell_value(line: str, cell: Span, pin: bool) -> Span | None:
    text = line[cell[0] : cell[1]]
    value = text.strip().strip("`\"'*_")
    if not value or " " in value or not _lone_value(value, pin=pin):
        return None
    start = cell[0] + text.index(value)
    return start, start + len(value)


def _table_spans(
    line: str, marked: str, header: list[Literal["pin", "secret"] | None]
) -> Iterator[Span]:
    """A value in the cell right of a cell naming a secret, or below a header naming one.

    Labels are read without emphasis (`marked`), values as written (`line`)."""
    cells = table_cells(line)
    kinds = [label_kind(marked[a:b]) for a, b in cells]
    for index, cell in enumerate(cells):
        label = kinds[index - 1] if index else None
        if label is None and index < len(header):
            label = header[index]
        if label is not None and kinds[index] is None:
            span = _cell_value(line, cell, label == "pin")
            if span:
                yield span


_LINE_MARKERS = re.compile(r"^\s*(?:>\s*)*(?:#{1,6}\s+|[-*+]\s+|\d{1,3}[.)]\s+)?")
_LABEL_END = re.compile(r"\s*(?::|=|\bis|\bist|\blautet)?\s*$")
_FENCE = re.compile(r"^\s*(?:```|~~~)")
_LONE = re.compile(r"^\s*(?:[-*+]\s+)?[\"'`]?(?P<value>[^\s\"'`]{4,200})[\"'`]?\s*$")


def _label_line(line: str) -> Literal["pin", "secret"] | None:
    """A line that is only a label ("**WLAN-Passwort**", "### API key", "Kennwort:")."""
    if len(line) > 120 or "|" in line:
        return None
    body = line[_LINE_MARKERS.match(line).end() :]  # type: ignore[union-attr]
    body = body[: _LABEL_END.search(body).start()]  # type: ignore[union-attr]
    if not body or _OPERATOR_INSIDE.search(body):
        return None
    if _LABEL_AT_END.search(line[-80:]):
        return "pin" if "pin" in line.lower() else "secret"
    return label_kind(body)


_OPERATOR_INSIDE = re.compile(r"[:=]\s*\S")


def _context_spans(lines: list[str]) -> dict[int, list[Span]]:
    """Findings that need the lines around: table headers and a value below its label.

    `lines` are the lines as the label rules read them; keys are line indexes.
    """
    found: dict[int, list[Span]] = {}
    header: list[Literal["pin", "secret"] | None] = []
    for index, line in enumerate(lines):
        if not header and not _has_cue(line):
            continue
        marked = _unmark(line)
        cells = table_cells(line) if "|" in line else []
        if cells:
            following = lines[index + 1] if index + 1 < len(lines) else ""
            if _is_separator_row(following):
                header = [label_kind(marked[a:b]) for a, b in cells]
            if spans := list(_table_spans(line, marked, header)):
                found.setdefault(index, []).extend(spans)
            continue
        header = []
        label = _label_line(marked) if line.strip() else None
        below = _line_below(lines, index) if label else None
        if below is not None and (span := _lone_span(lines[below], label == "pin")):
            found.setdefault(below, []).append(span)
    return found


def _is_separator_row(line: str) -> bool:
    cells = table_cells(line)
    return bool(cells) and all(_SEPARATOR_CELL.match(line[a:b]) for a, b in cells)


def _lone_span(line: str, pin: bool) -> Span | None:
    lone = _LONE.match(line)
    if not lone:
        return None
    value = _clean(lone["value"])
    if not _lone_value(value, pin=pin):
        return None
    return lone.start("value"), lone.start("value") + len(value)


def _line_below(lines: list[str], index: int) -> int | None:
    """The next line with text, past at most two blank lines and an opening code fence."""
    skipped = 0
    for below in range(index + 1, min(len(lines), index + 5)):
        line = lines[below]
        if not line.strip() or (_FENCE.match(line) and skipped < 3):
            skipped += 1
            continue
        return below
    return None


def _spans(line: str, *, first: bool) -> Iterator[tuple[Span, SecretKind]]:
    """Where the secrets on one (normalised) line are, kind by kind in order of strength."""
    plain = _unmark(line)
    for finder, kind, unmarked in _finders(line):
        for span in finder(plain if unmarked else line):
            yield span, kind
            if first:
                return


_Finder = Callable[[str], Iterator[Span]]


def _finders(line: str) -> Iterator[tuple[_Finder, SecretKind, bool]]:
    """The span finders for a line, strongest first, with the kind each one finds and
    whether it reads the line without Markdown emphasis; those for assignments, commands
    and prose only when the line has a secret word in it."""
    yield _known_spans, "known token format", False
    yield _url_spans, "password assignment", False
    if _has_cue(line):
        yield partial(_assignment_spans, juxtaposed=False), "password assignment", True
        yield _command_spans, "password assignment", True
        yield partial(_assignment_spans, juxtaposed=True), "password in prose", True
        yield _prose_spans, "password in prose", True
        yield _labelled_token_spans, "password in prose", True
    yield _random_spans, "random-looking string", False


def find_in_line(line: str) -> SecretKind | None:
    for _span, kind in _spans(normalise(line), first=True):
        return kind
    return None


_NAME_PIECE = re.compile(r"[^-_. +@]+")
_YEAR = re.compile(r"^(?:19|20)\d\d$")


def find_in_name(name: str) -> SecretKind | None:
    """A file or folder name that holds a secret: a token (`ghp_….md`) or a value after a
    secret's label (`password-Sommer2024xQ.md`, `pin_4711`). Names a label alone
    (`wifi-password.md`, `token-budget-2024.md`) pass."""
    stem = normalise(name)
    if stem.lower().endswith(".md"):
        stem = stem[:-3]
    for _span, kind in _spans(stem, first=False):
        if kind in ("known token format", "random-looking string"):
            return kind
    pieces = list(_NAME_PIECE.finditer(stem))
    for index, piece in enumerate(pieces[:-1]):
        label = label_kind(piece.group(0))
        if label is None:
            continue
        value = stem[pieces[index + 1].start() :]
        if (
            index + 2 == len(pieces)
            and not _YEAR.match(value)
            and _lone_value(value, pin=label == "pin")
            and (label == "pin" or (any(c.isdigit() for c in value) and len(value) >= 8))
        ):
            return "password assignment"
    return None


# Our own fence attributes: the entry's id, origin, content hash, date and source.
_FENCE_ATTR = re.compile(
    r"(?<=\s)(?:id=[0-9a-f]{1,32}|origin=(?:"
    + "|".join(ORIGINS)
    + r")|sha256=[0-9a-f]{64}|created=\d{4}-\d{2}-\d{2}|source=(?:"
    + "|".join(SOURCES)
    + r"))(?=\s)"
)
_FENCE_START = "<!-- memory:entry "
_PUBLIC_BLOCK = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*(?:PUBLIC KEY(?: BLOCK)?|CERTIFICATE(?: REQUEST)?)-----"
)
_PRIVATE_BLOCK_END = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_BASE64_LINE = re.compile(r"^\s*[A-Za-z0-9+/=]+\s*$")
_SPLIT_TAIL = re.compile(
    r"""(?<![A-Za-z0-9_\-.])(?P<tail>[A-Za-z0-9_\-.]{4,300})["']?(?:\s*\+)?(?:\s*\\)?\s*$"""
)
_SPLIT_HEAD = re.compile(r"""^\s*["']?(?P<head>[A-Za-z0-9_\-.]{4,})""")


def _scan_lines(text: str) -> Iterator[tuple[int, str, str, bool]]:
    """Each line normalised, the same line as scanned, and whether it is public key material.

    On a fence line our own attributes are blanked out (same length, so positions still
    match): the fence marks only who wrote the entry, everything else on it is scanned.
    """
    in_public = False
    for number, raw in enumerate(text.split("\n"), start=1):
        line = normalise(raw)
        scanned = line
        if line.lstrip().startswith(_FENCE_START):
            scanned = _FENCE_ATTR.sub(_blank, line)
        if _PUBLIC_BLOCK.search(line):
            in_public = True
            yield number, line, scanned, False
            continue
        if in_public and not _BASE64_LINE.match(line):
            in_public = False
        yield number, line, scanned, in_public


def _split_secret(line: str, following: str) -> tuple[Span, Span] | None:
    """A known-format token cut over two lines: the end of this one and the start of the next."""
    tail = _SPLIT_TAIL.search(line, max(0, len(line) - 300))
    head = _SPLIT_HEAD.match(following) if tail else None
    if not tail or not head:
        return None
    joined = tail["tail"] + head["head"]
    for span in _known_spans(joined):
        if span[0] < len(tail["tail"]) < span[1]:
            return tail.span("tail"), head.span("head")
    return None


# A label that ends its line, its value alone on the next one: "WLAN-Passwort:" / "Sommer2024!".
_LABEL_AT_END = re.compile(
    r"(?i)(?:password|passwort|kennwort|passphrase|passcode|pw|pwd|pin|token|secret|"
    r"api[ _-]?key|zugangsdaten|geheimzahl)\s*(?::|=|is|ist|lautet)\s*$"
)


def find_secret(text: str, *, known: Collection[str] = ()) -> SecretFinding | None:
    """The first line that looks like a secret, or None.

    known: secrets the host stores for the person (API keys, webhook secrets); a line
    holding one is a finding whatever it looks like (the fifth kind).
    """
    found = _find_secret(text)
    stored = _find_known(text, known) if known else None
    if stored and (found is None or stored.line <= found.line):
        return stored
    return found


# Shorter values would match ordinary words; no key or signing secret the host makes is.
MIN_KNOWN_CHARS = 8


def _find_known(text: str, known: Collection[str]) -> SecretFinding | None:
    values = [value for value in known if len(value) >= MIN_KNOWN_CHARS]
    for number, line in enumerate(text.split("\n"), start=1):
        seen = plain(line)
        if any(value in line or value in seen for value in values):
            return SecretFinding(line=number, kind="stored secret")
    return None


def _find_secret(text: str) -> SecretFinding | None:
    lines = list(_scan_lines(text))
    context = _context_spans([scanned for _n, _l, scanned, _p in lines])
    for index, (number, _line, scanned, in_public) in enumerate(lines):
        if in_public:
            # Public key material is random by nature; only a known token format counts there.
            if any(True for _ in _known_spans(scanned)):
                return SecretFinding(line=number, kind="known token format")
            continue
        for _span, kind in _spans(scanned, first=True):
            return SecretFinding(line=number, kind=kind)
        if index in context:
            return SecretFinding(line=number, kind="password assignment")
        if index + 1 < len(lines) and _split_secret(scanned, lines[index + 1][2]):
            return SecretFinding(line=number, kind="known token format")
    return None


@dataclass(frozen=True)
class SecretFinding:
    line: int  # 1-based
    kind: SecretKind


def _apply_mask(line: str, spans: list[Span]) -> str:
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    for start, end in reversed(merged):
        line = line[:start] + MASK + line[end:]
    return line


# The same memory block goes out turn after turn until the memory changes: its masked
# form is kept for texts up to this size (the turn block is at most 6 KiB).
MASK_CACHE_MAX_CHARS = 16_384


def mask_outbound(text: str, *, known: Collection[str] = ()) -> str:
    """Replace every secret value the guard can locate before text leaves the host.

    A line with a finding goes out in its plain form (invisible characters removed, NFKC),
    so a masked token cannot survive in pieces; look-alike letters are kept as they
    were. Other lines go out unchanged. `known` values (secrets the host stores for the
    person) are masked wherever they occur.
    """
    masked = (
        _mask_outbound(text) if len(text) > MASK_CACHE_MAX_CHARS else _mask_outbound_cached(text)
    )
    return mask_known(masked, known) if known else masked


def mask_known(text: str, known: Collection[str]) -> str:
    # Longest first: a value that contains another is masked whole.
    for value in sorted(known, key=len, reverse=True):
        if len(value) >= MIN_KNOWN_CHARS and value in text:
            text = text.replace(value, MASK)
    return text


def _mask_outbound(text: str) -> str:
    raw_lines = text.split("\n")
    scanned = list(_scan_lines(text))
    context = _context_spans([seen for _n, _l, seen, _p in scanned])
    out: list[str] = []
    pending: Span | None = None  # the head of a token split from the line before
    in_private = False
    for index, (raw, (_number, line, seen, in_public)) in enumerate(
        zip(raw_lines, scanned, strict=True)
    ):
        if in_private:
            in_private = not _PRIVATE_BLOCK_END.search(line)
            out.append(raw if not in_private else MASK)
            pending = None
            continue
        spans: list[Span] = (
            list(_known_spans(seen))
            if in_public
            else [span for span, _ in _spans(seen, first=False)]
        )
        if _PRIVATE_KEY.search(line) and not _PRIVATE_BLOCK_END.search(line):
            in_private = True
        if pending:
            spans.append(pending)
            pending = None
        if not in_public:
            spans += context.get(index, [])
            split = _split_secret(seen, scanned[index + 1][2]) if index + 1 < len(scanned) else None
            if split:
                spans.append(split[0])
                pending = split[1]
        out.append(_apply_mask(plain(raw), spans) if spans else raw)
    return "\n".join(out)


_mask_outbound_cached = functools.lru_cache(maxsize=256)(_mask_outbound)
