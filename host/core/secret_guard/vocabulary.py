"""What the rules read: normalised lines, placeholders, secret-looking names and
literal values, shared by every rule family of the guard."""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Literal

from host.core import secret_words as words
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


_TOKEN_CHARS = re.compile(r"^[A-Za-z0-9_\-+/=.]{12,}$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_VERSION = re.compile(r"^v?\d+(?:\.\d+)+")


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
