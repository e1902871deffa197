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

The rule families are modules of this package, each reading one line: `tokens` (known
formats, random-looking strings), `assignments`, `prose`, over the shared `vocabulary`
(normalisation, placeholders, names, values). Here: the rules that read the lines around,
and the public API.

Benchmark and labelled set: benchmarks/secret_guard_bench.py, docs/benchmarks.md.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Literal

from host.core.entry_fence import ORIGINS, SOURCES
from host.core.secret_guard.assignments import (
    _assignment_spans,
    _command_spans,
    _has_cue,
    _lone_value,
    _url_spans,
)
from host.core.secret_guard.prose import _labelled_token_spans, _prose_spans
from host.core.secret_guard.tokens import _PRIVATE_KEY, _known_spans, _random_spans
from host.core.secret_guard.vocabulary import (
    _NOT_SECRET_WORDS,
    MASK,
    SecretKind,
    Span,
    _clean,
    is_secret_name,
    name_parts,
    normalise,
    plain,
)

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

__all__ = [
    "MASK",
    "MASK_CACHE_MAX_CHARS",
    "SecretFinding",
    "SecretKind",
    "find_in_line",
    "find_in_name",
    "find_secret",
    "mask_known",
    "mask_outbound",
]
