"""A turn's context as every caller gets it (the chat, REST turn-context, MCP): the
memory block, then the approved reference files, unless the client reads its own."""

from __future__ import annotations

from dataclasses import dataclass

from memory_addon.services.context import TurnContext, turn_context_build
from memory_addon.services.policy import Policy, policy_for
from memory_addon.services.references import ReferenceBlock, reference_block_build
from memory_addon.turns import Turn


@dataclass(frozen=True)
class ClientContext:
    memory: TurnContext
    references: ReferenceBlock

    def text(self) -> str:
        """Both blocks as one text, and a line on the reference files (sent, left out)."""
        refs = self.references
        if refs.off:
            note = f"Reference files: none sent. {refs.off}"
        elif refs.files or refs.not_sent:
            sent = ", ".join(f["name"] for f in refs.files) or "none"
            note = f"Reference files sent: {sent}." + "".join(
                f" Not sent: {item['name']} ({item['why']})." for item in refs.not_sent
            )
        else:
            note = ""
        memory_off = (
            f"Memory: none sent. {self.memory.reason_off}" if self.memory.reason_off else ""
        )
        return "\n\n".join(p for p in (self.memory.block, refs.block, memory_off, note) if p)


def client_context_build(turn: Turn, policy: Policy | None = None) -> ClientContext:
    policy = policy or policy_for(turn.user)
    memory = turn_context_build(turn, policy)
    references = reference_block_build(
        user=turn.user,
        memory_off_reason=memory.reason_off,
        mask=not turn.model_local,
        client_reads_own=turn.client_reads_rule_files,
        policy=policy,
    )
    return ClientContext(memory, references)
