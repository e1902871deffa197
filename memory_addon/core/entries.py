"""Memory files as items: the person's paragraphs and fenced machine entries (M2, M5).

A machine entry looks like this in a file:

    <!-- memory:entry id=3fa9c1d2 origin=assistant sha256=… created=2026-11-02 source=chat -->
    - home: lives in Rome -> home.md
    <!-- /memory:entry -->

The hash covers the entry text. When a person edits the text, the hash no longer
matches and the block counts as the person's text from then on.
"""

from __future__ import annotations

import functools
import hashlib
import re
import secrets
from dataclasses import dataclass, field
from datetime import date
from typing import Literal

MAX_ENTRY_CHARS = 300
FENCE_OPEN = re.compile(
    r"^<!-- memory:entry (?P<attrs>(?:[a-z0-9]+=[^\s]+ ?)+)-->$",
)
FENCE_CLOSE = "<!-- /memory:entry -->"
INDEX_LINE = re.compile(
    r"^\s*[-*]\s+(?P<topic>[^:\n]+?):\s*(?P<summary>.*?)\s*->\s*(?P<file>[^\s]+\.md)\s*$"
)

ItemKind = Literal["person", "machine"]


class EntryRefused(ValueError):
    """Text that cannot become a machine entry."""


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Item:
    kind: ItemKind
    text: str  # what the model sees: the paragraph, or the entry's inner text
    raw: str  # the exact lines in the file, fences included
    start_line: int  # 1-based, inclusive
    end_line: int
    entry_id: str = ""
    origin: str = ""
    created: str = ""
    source: str = ""
    position: int = 0  # order in the file, used to break ties between equal dates
    attrs: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def is_machine(self) -> bool:
        return self.kind == "machine"


def validate_entry_text(text: str) -> str:
    cleaned = text.strip()
    if not cleaned:
        raise EntryRefused("An entry cannot be empty.")
    if len(cleaned) > MAX_ENTRY_CHARS:
        raise EntryRefused(
            f"An entry holds at most {MAX_ENTRY_CHARS} characters; this one has {len(cleaned)}."
        )
    if "<!--" in cleaned or "-->" in cleaned:
        raise EntryRefused("An entry cannot contain HTML comment markers (<!-- or -->).")
    if "\n" in cleaned or "\r" in cleaned:
        raise EntryRefused("An entry is one line; write it without line breaks.")
    return cleaned


def new_entry_id() -> str:
    return secrets.token_hex(4)


def render_entry(text: str, *, entry_id: str, origin: str, created: date | str, source: str) -> str:
    """The fenced block for one entry (no trailing newline)."""
    body = validate_entry_text(text)
    created_text = created.isoformat() if isinstance(created, date) else created
    attrs = (
        f"id={entry_id} origin={origin} sha256={sha256_text(body)} "
        f"created={created_text} source={source}"
    )
    return f"<!-- memory:entry {attrs} -->\n{body}\n{FENCE_CLOSE}"


def _parse_attrs(text: str) -> dict[str, str]:
    return dict(pair.split("=", 1) for pair in text.split())


# Indexes are parsed on every turn and rarely change: parsed items (frozen) are kept per
# text for files up to this size.
PARSE_CACHE_MAX_CHARS = 16_384


def parse_items(content: str) -> list[Item]:
    """Split a file into items, in file order."""
    if len(content) > PARSE_CACHE_MAX_CHARS:
        return list(_parse_items(content))
    return list(_parse_items_cached(content))


def _parse_items(content: str) -> tuple[Item, ...]:
    lines = content.split("\n")
    items: list[Item] = []
    paragraph: list[str] = []
    paragraph_start = 0

    def flush_paragraph(end_index: int) -> None:
        nonlocal paragraph
        # A list is one item per bullet, so the budget can send lines separately.
        for offset, block in _split_list(paragraph):
            raw = "\n".join(block)
            items.append(
                Item(
                    kind="person",
                    text=raw.strip(),
                    raw=raw,
                    start_line=paragraph_start + offset + 1,
                    end_line=paragraph_start + offset + len(block),
                    position=len(items),
                )
            )
        paragraph = []

    index = 0
    while index < len(lines):
        line = lines[index]
        opened = FENCE_OPEN.match(line.strip())
        if opened:
            close_at = _find_close(lines, index + 1)
            if close_at is not None:
                flush_paragraph(index)
                items.append(_entry_item(lines, index, close_at, opened.group("attrs"), len(items)))
                index = close_at + 1
                continue
        if line.strip() == "":
            flush_paragraph(index)
        else:
            if not paragraph:
                paragraph_start = index
            paragraph.append(line)
        index += 1
    flush_paragraph(len(lines))
    return tuple(items)


_parse_items_cached = functools.lru_cache(maxsize=256)(_parse_items)


_BULLET = re.compile(r"^\s*[-*+]\s")


def _split_list(lines: list[str]) -> list[tuple[int, list[str]]]:
    """(offset, lines) blocks: one per bullet when the paragraph is a list, else one."""
    if not lines:
        return []
    if not _BULLET.match(lines[0]):
        return [(0, lines)]
    blocks: list[tuple[int, list[str]]] = []
    for offset, line in enumerate(lines):
        if _BULLET.match(line) or not blocks:
            blocks.append((offset, [line]))
        else:
            blocks[-1][1].append(line)
    return blocks


def _find_close(lines: list[str], start: int) -> int | None:
    for index in range(start, len(lines)):
        stripped = lines[index].strip()
        if stripped == FENCE_CLOSE:
            return index
        if FENCE_OPEN.match(stripped):
            return None  # a new fence before this one closed: not a valid entry
    return None


def _entry_item(
    lines: list[str], open_at: int, close_at: int, attr_text: str, position: int
) -> Item:
    attrs = _parse_attrs(attr_text)
    inner = "\n".join(lines[open_at + 1 : close_at]).strip()
    raw = "\n".join(lines[open_at : close_at + 1])
    intact = (
        attrs.get("sha256") == sha256_text(inner)
        and bool(attrs.get("id"))
        and len(inner) <= MAX_ENTRY_CHARS
        and inner != ""
    )
    return Item(
        kind="machine" if intact else "person",
        text=inner,
        raw=raw,
        start_line=open_at + 1,
        end_line=close_at + 1,
        entry_id=attrs.get("id", "") if intact else "",
        origin=attrs.get("origin", "") if intact else "",
        created=attrs.get("created", "") if intact else "",
        source=attrs.get("source", "") if intact else "",
        position=position,
        attrs=attrs,
    )


def person_items(content: str) -> list[Item]:
    return [item for item in parse_items(content) if item.kind == "person"]


def machine_entries(content: str) -> list[Item]:
    return [item for item in parse_items(content) if item.is_machine]


def send_order(items: list[Item]) -> list[Item]:
    """The person's paragraphs in file order, then machine entries newest first."""
    people = [item for item in items if item.kind == "person"]
    machines = sorted(
        (item for item in items if item.is_machine),
        key=lambda item: (item.created, item.position),
        reverse=True,
    )
    return people + machines


def keeps_person_text(before: str, after: str) -> bool:
    """True when every paragraph the person wrote is still there, unchanged and in order."""
    remaining = iter(item.raw.strip() for item in parse_items(after))
    return all(
        any(candidate == needed.raw.strip() for candidate in remaining)
        for needed in person_items(before)
    )


def entry_marks(content: str) -> set[tuple[str, str]]:
    """(id, text) of every intact machine entry: what a person's write may keep fenced."""
    return {(item.entry_id, item.text) for item in machine_entries(content)}


def claim_changed_entries(content: str, machine_marks: set[tuple[str, str]]) -> str:
    """A person's write: every entry not exactly as the machine left it becomes their text.

    An intact entry whose (id, text) is not in `machine_marks` (what the files held
    before this write), and any fence whose hash no longer matches, loses its fences
    and stays in place as the person's own text,
    so no later machine change can match its id (M5). The hash alone proves nothing:
    whoever edits the raw file, restores an older version or pastes a block can write
    a matching one.
    """
    claimed = [
        item
        for item in parse_items(content)
        if (item.is_machine and (item.entry_id, item.text) not in machine_marks)
        or (not item.is_machine and item.attrs)  # fences whose hash no longer matches
    ]
    if not claimed:
        return content
    lines = content.split("\n")
    for item in reversed(claimed):
        lines[item.start_line - 1 : item.end_line] = [item.text] if item.text else []
    return "\n".join(lines)


def append_entry(content: str, block: str) -> str:
    """Add a rendered entry at the end, separated by one blank line."""
    stripped = content.rstrip("\n")
    return f"{stripped}\n\n{block}\n" if stripped else f"{block}\n"


def replace_entry(content: str, entry_id: str, new_block: str | None) -> str:
    """Replace (or, with None, remove) the intact machine entry with this id."""
    for item in parse_items(content):
        if item.is_machine and item.entry_id == entry_id:
            lines = content.split("\n")
            before = lines[: item.start_line - 1]
            after = lines[item.end_line :]
            if new_block is None:
                # Drop one blank separator line so removals do not leave gaps behind.
                if before and before[-1].strip() == "" and (not after or after[0].strip() == ""):
                    before = before[:-1]
                return "\n".join(before + after)
            return "\n".join([*before, new_block, *after])
    raise EntryRefused(
        f"There is no machine entry with id {entry_id!r} in this file; an entry the person "
        "edited is their text now and only they can change it."
    )


@dataclass(frozen=True)
class IndexLine:
    topic: str
    summary: str
    file: str


def parse_index_line(text: str) -> IndexLine | None:
    match = INDEX_LINE.match(text)
    if not match:
        return None
    return IndexLine(match["topic"].strip(), match["summary"].strip(), match["file"].strip())


def _is_fence(stripped: str) -> bool:
    return bool(FENCE_OPEN.match(stripped)) or stripped == FENCE_CLOSE


def without_fences(content: str) -> str:
    """The file as a person reads it: entries' text without their fence comments."""
    return "\n".join(line for line in content.split("\n") if not _is_fence(line.strip()))


def sent_bytes(content: str) -> int:
    """UTF-8 bytes of what the model is sent of a file: entry fences do not count (M2)."""
    return len(without_fences(content).encode("utf-8"))


def count_lines(content: str) -> int:
    """Non-empty lines that are not fences: what the 40-line index cap counts."""
    return sum(1 for line in content.split("\n") if line.strip() and not _is_fence(line.strip()))
