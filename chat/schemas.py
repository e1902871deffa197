from __future__ import annotations

from ninja import Field, ModelSchema, Schema

from chat.models import Conversation, Message, Question


class ConversationOut(ModelSchema):
    class Meta:
        model = Conversation
        fields = [
            "id",
            "title",
            "ai_profile",
            "agent",
            "memory_on",
            "temporary",
            "created_at",
            "updated_at",
        ]


class MessageOut(ModelSchema):
    class Meta:
        model = Message
        fields = [
            "id",
            "conversation",
            "role",
            "content",
            "state",
            "error",
            "model",
            "usage",
            "tool_calls",
            "sent_along",
            "citations",
            "created_at",
            "finished_at",
        ]


class ConversationDetailOut(Schema):
    conversation: ConversationOut
    messages: list[MessageOut]


class ConversationIn(Schema):
    profile_id: int | None = None
    agent_id: int | None = None
    store_ids: list[int] = Field(default_factory=list)
    memory_on: bool = Field(
        True, description="Send memory with its turns; in a temporary chat: it reads memory."
    )
    title: str = ""
    temporary: bool = Field(
        False,
        description="A temporary chat (M22): never writes memory, is not listed, and is "
        "deleted when ended, when you start another conversation, or after "
        "CHAT_TEMPORARY_KEEP_HOURS.",
    )


class MessageIn(Schema):
    text: str = Field(..., examples=["What do you remember about my diet?"])


class ErrorOut(Schema):
    detail: str


class QuestionOut(ModelSchema):
    class Meta:
        model = Question
        fields = ["id", "message", "number", "text", "why", "options", "state", "answer", "rule"]


class QuestionAnswerIn(Schema):
    """One of `options` and/or another answer (added to the choice when both are given)."""

    choice: str = Field("", examples=["Rome"])
    other: str = Field("", examples=["by train"])
    rule: str = Field("", description="An optional permanent rule, saved with the answer.")
    save_to: str = Field(
        "",
        max_length=200,
        description="Where the rule goes: empty for where it fits (first fit wins), "
        '"user", "agent", "conversation", "skill:<add-on>/<name>" or "new:<name>".',
    )


class AnswerErrorOut(Schema):
    detail: str
    field: str | None = None


class AttachmentOut(Schema):
    """An upload in the conversation's own collection; its scan waits for review."""

    store_id: int
    source_id: int
    job_id: int | None
    name: str
    state: str = Field(
        ..., description="The newest job's state: waiting, queued, running, review …"
    )
