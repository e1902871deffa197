"""Normalization and refusal of memory file paths (M6)."""

from __future__ import annotations

import re
import unicodedata

from host.core.secret_guard import find_in_name

MAX_PATH_LENGTH = 200
MAX_COMPONENT_LENGTH = 80
_WINDOWS_RESERVED = {
    "con",
    "prn",
    "aux",
    "nul",
    *(f"com{i}" for i in range(1, 10)),
    *(f"lpt{i}" for i in range(1, 10)),
}
_ALLOWED_COMPONENT = re.compile(r"^[\w][\w .@+-]*$")
# Scripts whose letters look alike (a Latin a, a Cyrillic a, a Greek alpha): one name
# mixing them could pass for another file (MEMORY.md with a Cyrillic capital Em).
_LOOK_ALIKE_SCRIPTS = ("LATIN", "CYRILLIC", "GREEK")
MARKDOWN = (".md",)
# A project bank also keeps the plain-text kinds Anthropic's memory-tool examples use;
# the secret guard reads them as it reads Markdown. A person's notes stay Markdown (M6).
BANK_TYPES = (".md", ".txt", ".xml")


def gettext_noop(text: str) -> str:
    """Marks a refusal for translation (makemessages finds it); no Django here, so the
    Django layer translates `PathRefused.template` when it shows the refusal."""
    return text


class PathRefused(ValueError):
    """A path that is not a normalized relative Markdown path."""

    def __init__(self, template: str, **values: object) -> None:
        super().__init__(template % values if values else template)
        self.template, self.values = template, values


def normalize_path(raw: str, *, types: tuple[str, ...] = MARKDOWN) -> str:
    """Return the normalized form of a relative path ending in one of `types`, or raise
    PathRefused.

    `./a//b.md` becomes `a/b.md`; absolute paths, `..`, hidden or reserved names,
    backslashes and control characters are refused.
    """
    if not isinstance(raw, str) or not raw.strip():
        raise PathRefused(gettext_noop("The path is empty."))
    path = unicodedata.normalize("NFC", raw.strip())
    if any(unicodedata.category(ch) in {"Cc", "Cf", "Zl", "Zp"} for ch in path):
        raise PathRefused(gettext_noop("The path contains control or invisible characters."))
    if "\\" in path:
        raise PathRefused(gettext_noop("Use forward slashes in paths."))
    if path.startswith("/") or re.match(r"^[A-Za-z]:", path) or path.startswith("~"):
        raise PathRefused(
            gettext_noop(
                "Absolute paths are not allowed; use a path relative to the memory folder."
            )
        )
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if not parts:
        raise PathRefused(gettext_noop("The path is empty."))
    for part in parts:
        _check_component(part, types)
    normalized = "/".join(parts)
    if not normalized.lower().endswith(types):
        if types == MARKDOWN:
            raise PathRefused(gettext_noop("Only Markdown files ending in .md can be stored."))
        raise PathRefused(
            gettext_noop("Only text files ending in %(types)s can be stored."),
            types=", ".join(types),
        )
    if len(normalized) > MAX_PATH_LENGTH:
        raise PathRefused(
            gettext_noop("The path is longer than %(limit)s characters."), limit=MAX_PATH_LENGTH
        )
    return normalized


def _check_component(part: str, types: tuple[str, ...]) -> None:
    """Refuse one folder or file name of a memory path."""
    # First, and without the name: every later refusal quotes it.
    kind = find_in_name(part)
    if kind:
        raise PathRefused(
            gettext_noop(
                "A file or folder name looks like it holds a secret (%(kind)s). Name it "
                "after its topic and keep secrets out of memory."
            ),
            kind=kind,
        )
    if part == "..":
        raise PathRefused(gettext_noop("'..' is not allowed in a memory path."))
    if part.startswith("."):
        raise PathRefused(
            gettext_noop("Hidden names such as %(name)s are not allowed."), name=repr(part)
        )
    if len(part) > MAX_COMPONENT_LENGTH:
        raise PathRefused(
            gettext_noop("A path part is longer than %(limit)s characters."),
            limit=MAX_COMPONENT_LENGTH,
        )
    if part.split(".")[0].lower() in _WINDOWS_RESERVED:
        raise PathRefused(gettext_noop("%(name)s is a reserved name."), name=repr(part))
    if not _ALLOWED_COMPONENT.match(part) or part.endswith((" ", ".")):
        raise PathRefused(
            gettext_noop(
                "%(name)s has characters that are not allowed; use letters, digits, "
                "spaces and . _ - @ +"
            ),
            name=repr(part),
        )
    if len(_look_alike_scripts(part, types)) > 1:
        raise PathRefused(
            gettext_noop(
                "%(name)s mixes Latin, Cyrillic or Greek letters, which can look alike; "
                "write the name in one script."
            ),
            name=repr(part),
        )


def _look_alike_scripts(part: str, types: tuple[str, ...]) -> set[str]:
    """The look-alike scripts of a name's letters; the file type's ending does not count."""
    ending = next((t for t in types if part.lower().endswith(t)), "")
    stem = part[: len(part) - len(ending)]
    scripts = set()
    for char in stem:
        if char.isalpha():
            script = unicodedata.name(char, "").split(" ", 1)[0]
            if script in _LOOK_ALIKE_SCRIPTS:
                scripts.add(script)
    return scripts
