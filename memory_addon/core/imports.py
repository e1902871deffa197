"""Memory exported from other tools, read as items (M23); docs/memory-imports.md shows
each shape. Pure: no Django.

- chatgpt: ChatGPT's saved memories as its settings list them: plain text, one memory
  per line, or JSON: a list of strings or of objects with "content", "memory" or
  "text" (optionally under "memories").
- claude: Claude's memory as it exports it: Markdown or text.
- mem0: a mem0 export: a JSON list of objects with "memory" (optionally under
  "results" or "memories"), with "id", "created_at", "user_id", "metadata" if given.
- agents_md: CLAUDE.md / AGENTS.md text.

Markdown (claude, agents_md) gives one item per bullet and per paragraph; headings,
code blocks, tables and HTML comments are not notes. Whatever is wrong is an
ImportRefused that names the line or the item and field.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from memory_addon.core import entries
from memory_addon.core.operations import ImportKind
from memory_addon.core.paths import gettext_noop

KINDS: tuple[ImportKind, ...] = ("chatgpt", "claude", "mem0", "agents_md")
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+(?P<text>.*)$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# Claude's memory writes its section titles in bold on a line of their own.
_BOLD_TITLE = re.compile(r"^\*\*[^*]+\*\*:?$")


class ImportRefused(ValueError):
    """A file that cannot be imported, at a line (text, a JSON syntax error) or an item
    (JSON). The Django layer translates `template` when it shows the refusal."""

    def __init__(self, template: str, *, line: int = 0, item: int = 0, **values: object) -> None:
        self.template, self.values, self.line, self.item = template, values, line, item
        self.where = f"line {line}" if line else f"item {item}"
        super().__init__(f"{self.where}: {template % values if values else template}")


@dataclass(frozen=True)
class ImportedItem:
    text: str
    item: int  # 1-based
    line: int = 0  # the line it starts on; 0 for JSON
    original_id: str = ""
    original_date: str = ""


# A found item: its text, line (0 in JSON), position in a JSON list, original id and date.
Found = tuple[str, int, int, str, str]


def parse_import(kind: ImportKind, text: str) -> list[ImportedItem]:
    """The items of an export, in file order."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    if kind == "mem0":
        return _numbered(_mem0(_json(text)))
    if kind == "chatgpt":
        if text.lstrip().startswith(("[", "{")):
            return _numbered(_chatgpt_json(_json(text)))
        return _numbered(_lines(text))
    return _numbered(_markdown(text))


def _numbered(found: list[Found]) -> list[ImportedItem]:
    items: list[ImportedItem] = []
    for text, line, position, original_id, original_date in found:
        items.append(
            ImportedItem(
                _entry_text(text, line=line, item=position),
                item=len(items) + 1,
                line=line,
                original_id=original_id,
                original_date=original_date,
            )
        )
    return items


def _entry_text(text: str, *, line: int, item: int) -> str:
    try:
        return entries.validate_entry_text(" ".join(text.split()))
    except entries.EntryRefused as error:
        raise ImportRefused(str(error), line=line, item=item) from error


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ImportRefused(
            gettext_noop("not valid JSON (%(error)s)"), line=error.lineno, error=error.msg
        ) from error


def _listed(data: Any, wrappers: tuple[str, ...]) -> list[Any]:
    if isinstance(data, dict):
        for key in wrappers:
            if isinstance(data.get(key), list):
                return list(data[key])
        raise ImportRefused(
            gettext_noop("expected a JSON list, or an object with %(keys)s"),
            line=1,
            keys=" / ".join(map(repr, wrappers)),
        )
    if not isinstance(data, list):
        raise ImportRefused(gettext_noop("expected a JSON list of memories"), line=1)
    return data


def _text_field(row: dict[str, Any], names: tuple[str, ...], item: int) -> str:
    for name in names:
        value = row.get(name)
        if isinstance(value, str):
            return value
        if value is not None:
            raise ImportRefused(
                gettext_noop("field %(name)s must be text"), item=item, name=repr(name)
            )
    raise ImportRefused(gettext_noop("field %(name)s is missing"), item=item, name=repr(names[0]))


def _chatgpt_json(data: Any) -> list[Found]:
    found: list[Found] = []
    for number, row in enumerate(_listed(data, ("memories",)), start=1):
        if isinstance(row, str):
            found.append((row, 0, number, "", ""))
        elif isinstance(row, dict):
            text = _text_field(row, ("content", "memory", "text"), number)
            found.append((text, 0, number, _id(row), _date(row)))
        else:
            raise ImportRefused(
                gettext_noop("expected text or an object with 'content'"), item=number
            )
    return found


def _mem0(data: Any) -> list[Found]:
    found: list[Found] = []
    for number, row in enumerate(_listed(data, ("results", "memories")), start=1):
        if not isinstance(row, dict):
            raise ImportRefused(gettext_noop("expected an object with 'memory'"), item=number)
        found.append((_text_field(row, ("memory",), number), 0, number, _id(row), _date(row)))
    return found


def _id(row: dict[str, Any]) -> str:
    value = row.get("id")
    return str(value)[:100] if isinstance(value, str | int) else ""


def _date(row: dict[str, Any]) -> str:
    for name in ("created_at", "updated_at", "date"):
        value = row.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()[:40]
    return ""


def _lines(text: str) -> list[Found]:
    found: list[Found] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        bullet = _BULLET.match(line)
        found.append((bullet["text"] if bullet else line, number, 0, "", ""))
    return found


def _markdown(text: str) -> list[Found]:
    """One item per bullet (its indented continuation lines joined) and per paragraph."""
    found: list[Found] = []
    block: list[str] = []
    start = 0
    fenced = commented = False

    def flush() -> None:
        if block:
            found.extend(_sentences(" ".join(block), start))
            block.clear()

    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            flush()
            fenced = not fenced
            continue
        if commented or stripped.startswith("<!--"):
            flush()
            commented = "-->" not in stripped
            continue
        heading = stripped.startswith(("#", "|")) or bool(_BOLD_TITLE.match(stripped))
        if fenced or heading or set(stripped) <= set("-=*_ "):
            flush()
            continue
        bullet = _BULLET.match(line)
        if bullet or not stripped:
            flush()
        if bullet:
            start = number
            block.append(bullet["text"])
        elif stripped:
            # A line after a bullet or a paragraph line continues it, as in Markdown.
            start = start if block else number
            block.append(stripped)
    flush()
    return found


def _sentences(text: str, line: int) -> list[Found]:
    """A paragraph longer than a note is cut at sentence ends into notes that fit."""
    text = " ".join(text.split())
    if len(text) <= entries.MAX_ENTRY_CHARS:
        return [(text, line, 0, "", "")]
    parts: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        if parts and len(parts[-1]) + 1 + len(sentence) <= entries.MAX_ENTRY_CHARS:
            parts[-1] = f"{parts[-1]} {sentence}"
        else:
            parts.append(sentence)
    return [(part, line, 0, "", "") for part in parts]
