"""One conversation as Markdown, for people to keep or share."""

from __future__ import annotations

from chat.models import Conversation, Message
from host.leftovers import export_forget


def export_kind(conversation_id: int) -> str:
    """The kind a conversation's kept export is filed under (host/filestore.py)."""
    return f"conversation-{conversation_id}"


def conversation_export_forget(
    sender: type[Conversation], instance: Conversation, **kwargs: object
) -> None:
    """A deleted conversation's kept transcript goes with it, whatever deleted it (the
    page, the API, a temporary chat ended or purged, the account)."""
    using = str(kwargs.get("using") or "default")
    export_forget(instance.owner_id, export_kind(instance.pk), using=using)


def conversation_markdown(conversation: Conversation) -> str:
    lines = [f"# {conversation}", ""]
    profile = conversation.ai_profile
    lines.append(f"- Started: {conversation.created_at:%Y-%m-%d %H:%M} UTC")
    if profile is not None:
        lines.append(f"- Model: {profile.model} ({profile.name})")
    if conversation.agent is not None:
        lines.append(f"- Agent: {conversation.agent.name}")
    if conversation.temporary:
        lines.append("- Temporary chat: nothing from it was saved to memory")
    lines.append("")
    for message in conversation.messages.all():
        who = "You" if message.role == Message.Role.USER else "Assistant"
        note = (
            ""
            if message.state == Message.State.COMPLETE
            else f" ({message.get_state_display().lower()})"
        )
        lines += [f"## {who}{note}", "", message.content.strip() or "_(no text)_", ""]
        if message.error:
            lines += [f"> {message.error}", ""]
        for citation in message.citations:
            page = f", page {citation['page']}" if citation.get("page") else ""
            lines.append(f"- [R{citation['n']}] {citation['path']}{page}")
        if message.citations:
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"
