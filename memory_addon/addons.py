"""Add-on manifests the host knows, with the user settings they declare (H5)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Option:
    value: str
    label: str
    help: str


@dataclass(frozen=True)
class DeclaredSetting:
    key: str
    label: str
    options: tuple[Option, ...]
    default: str

    def validate(self, value: Any) -> str:
        allowed = [option.value for option in self.options]
        if not isinstance(value, str) or value not in allowed:
            raise ValueError(f"{self.key} must be one of: {', '.join(allowed)}.")
        return value


@dataclass(frozen=True)
class Manifest:
    name: str
    title: str
    api: int
    context_files: tuple[str, ...]
    settings: tuple[DeclaredSetting, ...]
    skills: tuple[str, ...]

    def setting(self, key: str) -> DeclaredSetting | None:
        return next((s for s in self.settings if s.key == key), None)


MEMORY_ADDON = "memory"
SAVE_MODE = "save-mode"

MEMORY_MANIFEST = Manifest(
    name=MEMORY_ADDON,
    title="Short memory",
    api=2,
    context_files=("Memory/index.md", "Memory/agents/*/index.md", "Memory/channels/*/index.md"),
    settings=(
        DeclaredSetting(
            key=SAVE_MODE,
            label="Saving a note",
            options=(
                Option("ask", "Ask me first", "The assistant proposes a note; you confirm it."),
                Option(
                    "auto",
                    "Save it and tell me",
                    "In your own chats the note is saved at once, with an Undo.",
                ),
                Option("never", "Never", "The assistant cannot propose notes."),
            ),
            default="ask",
        ),
    ),
    skills=("memory", "memory-check-own-files"),
)

MANIFESTS = {MEMORY_MANIFEST.name: MEMORY_MANIFEST}
