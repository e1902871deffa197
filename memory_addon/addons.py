"""The Short memory add-on's manifest: built in, but declared like any other add-on (H5)."""

from __future__ import annotations

from typing import Literal

from django.utils.translation import gettext_noop

from addons.core.manifest import Manifest, manifest_parse

MEMORY_ADDON = "memory"
SAVE_MODE = "save-mode"
# The person's learning switch (M13) and whether rules may go to skills (M21).
LEARNING = "learning"
SKILL_RULES = "skill-rules"
# The choices of the memory add-on's save-mode setting (declared below).
SaveMode = Literal["ask", "auto", "never"]

_MEMORY_SKILL = """\
Consult memory for almost every request. The memory block lists one line per note, such as \
"- home: lives in Rome -> home.md". Before you answer, pick the lines that bear on the request \
and read their topic file with context_read(path); skip this only for small talk.
When the person asks you to remember or forget something, call propose_change (or \
revert_change for a note saved in this conversation) and tell them what the answer says:
- "Proposed": the note waits for their confirmation on the card under your answer or in the \
inbox; it is not saved yet.
- "Saved": it is saved now, and the Undo under your answer takes it back.
- a refusal (saving is off, the note looks like a secret, the index is full): say so in one \
sentence with the reason, and do not claim it was saved.
Never write passwords, keys or other secrets into memory."""

_CHECK_OWN_FILES_SKILL = """\
When the person asks what you know or remember about them, answer only from what you can read: \
the memory lines of this turn and the topic files you open with context_read or find with \
list_memory. Say plainly what you cannot read: other conversations' notes, files outside \
Memory, and notes left out because they did not fit the budget. Do not invent notes, and point \
them to the Memory tab, where they can read, edit and delete every note."""

MEMORY_MANIFEST: Manifest = manifest_parse(
    {
        "api": 2,
        "id": MEMORY_ADDON,
        "name": gettext_noop("Short memory"),
        "version": "2.0.0",
        "author": "Memory host",
        "description": gettext_noop(
            "A few notes about you that the assistant reads in every chat: where you live, "
            "what you eat, the language and units you like, how you want answers."
        ),
        "permissions": ["context-files", "user-settings", "memory-tools"],
        "userToggle": True,
        "capabilities": {
            # Read by the host's memory block (M3) from the person's own files, not the package.
            "contextFiles": [
                "Memory/index.md",
                "Memory/agents/agent/index.md",
                "Memory/channels/conversation/index.md",
            ]
        },
        "settings": [
            {
                "key": SAVE_MODE,
                "label": gettext_noop("Saving a note"),
                "type": "string",
                "description": gettext_noop(
                    "What happens when the assistant wants to save something to your memory."
                ),
                "choices": [
                    {
                        "value": "ask",
                        "label": gettext_noop("Ask me first"),
                        "description": gettext_noop(
                            "The assistant proposes a note; you confirm it."
                        ),
                    },
                    {
                        "value": "auto",
                        "label": gettext_noop("Save it and tell me"),
                        "description": gettext_noop(
                            "In your own chats the note is saved at once, with an Undo."
                        ),
                    },
                    {
                        "value": "never",
                        "label": gettext_noop("Never"),
                        "description": gettext_noop("The assistant cannot propose notes."),
                    },
                ],
                "default": "ask",
            },
            {
                "key": LEARNING,
                "label": gettext_noop("Rule learning"),
                "type": "string",
                "description": gettext_noop(
                    "Whether the assistant suggests lasting rules from your messages."
                ),
                "choices": [
                    {
                        "value": "suggest",
                        "label": gettext_noop("Suggest rules"),
                        "description": gettext_noop(
                            "A card under an answer offers a rule you stated."
                        ),
                    },
                    {
                        "value": "off",
                        "label": gettext_noop("Off"),
                        "description": gettext_noop(
                            "No rule is looked for; Remember as rule still works."
                        ),
                    },
                ],
                "default": "suggest",
            },
            {
                "key": SKILL_RULES,
                "label": gettext_noop("May create skills and save learned rules in them"),
                "type": "boolean",
                "description": gettext_noop(
                    "A rule about a language, tool or tagged topic goes to its skill; "
                    "off: every rule goes to memory."
                ),
                "default": True,
            },
        ],
        "skills": [
            {
                "name": "memory",
                "title": gettext_noop("Using memory"),
                "description": gettext_noop(
                    "Read the matching note before answering; save notes the right way."
                ),
                "instructions": _MEMORY_SKILL,
                "allowedTools": ["context_read", "propose_change", "revert_change", "list_memory"],
                "topics": ["memory", "notes", "gedächtnis", "notizen"],
            },
            {
                "name": "memory-check-own-files",
                "title": gettext_noop("Honest about what memory holds"),
                "description": gettext_noop(
                    "Say honestly what memory holds and what the assistant cannot read."
                ),
                "instructions": _CHECK_OWN_FILES_SKILL,
                "allowedTools": ["context_read", "list_memory"],
            },
        ],
    }
)
