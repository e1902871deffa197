"""The fixed allowlist of formats a collection indexes (K3)."""

from __future__ import annotations

from pathlib import PurePath

TEXT_SUFFIXES = {
    # prose
    ".txt": "text",
    ".text": "text",
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".rst": "reStructuredText",
    ".adoc": "AsciiDoc",
    ".org": "Org",
    ".tex": "LaTeX",
    ".log": "log",
    # data and config
    ".csv": "CSV",
    ".tsv": "TSV",
    ".json": "JSON",
    ".jsonl": "JSON",
    ".yaml": "YAML",
    ".yml": "YAML",
    ".toml": "TOML",
    ".ini": "INI",
    ".cfg": "config",
    ".conf": "config",
    ".properties": "config",
    ".xml": "XML",
    # web
    ".html": "HTML",
    ".htm": "HTML",
    ".css": "CSS",
    ".scss": "CSS",
    # code
    ".py": "code",
    ".pyi": "code",
    ".js": "code",
    ".mjs": "code",
    ".cjs": "code",
    ".ts": "code",
    ".tsx": "code",
    ".jsx": "code",
    ".java": "code",
    ".kt": "code",
    ".kts": "code",
    ".scala": "code",
    ".go": "code",
    ".rs": "code",
    ".c": "code",
    ".h": "code",
    ".cc": "code",
    ".cpp": "code",
    ".hpp": "code",
    ".cs": "code",
    ".rb": "code",
    ".php": "code",
    ".swift": "code",
    ".m": "code",
    ".sh": "code",
    ".bash": "code",
    ".zsh": "code",
    ".fish": "code",
    ".ps1": "code",
    ".sql": "code",
    ".r": "code",
    ".lua": "code",
    ".pl": "code",
    ".pm": "code",
    ".hs": "code",
    ".ex": "code",
    ".exs": "code",
    ".erl": "code",
    ".clj": "code",
    ".dart": "code",
    ".vue": "code",
    ".svelte": "code",
    ".graphql": "code",
    ".proto": "code",
    ".tf": "code",
    ".gradle": "code",
}
TEXT_NAMES = {"makefile": "code", "dockerfile": "code", "readme": "text", "license": "text"}
PDF = "PDF"


def format_of(path: str | PurePath) -> str | None:
    """The format name of an allowed file, matched case-insensitively; None if not allowed."""
    pure = PurePath(path)
    suffix = pure.suffix.lower()
    if suffix == ".pdf":
        return PDF
    if suffix in TEXT_SUFFIXES:
        return TEXT_SUFFIXES[suffix]
    return TEXT_NAMES.get(pure.name.lower())
