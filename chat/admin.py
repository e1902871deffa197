from __future__ import annotations

from django.contrib import admin

from chat.models import Conversation, Message, Schedule


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin[Conversation]):
    list_display = [
        "__str__",
        "owner",
        "ai_profile",
        "run_kind",
        "memory_on",
        "temporary",
        "updated_at",
    ]
    list_filter = ["run_kind", "memory_on", "temporary"]
    search_fields = ["title", "owner__username"]
    raw_id_fields = ["owner", "ai_profile", "agent"]
    # Chosen when the chat starts and ended by the person or the purge (M22), never here.
    readonly_fields = ["temporary", "closed_at"]


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin[Message]):
    # Read-only: answers are written by the chat worker only.
    list_display = ["pk", "conversation", "role", "state", "model", "created_at"]
    list_filter = ["role", "state"]
    readonly_fields = [
        "conversation",
        "role",
        "content",
        "tool_calls",
        "model",
        "usage",
        "state",
        "error",
        "sent_along",
        "citations",
        "started_at",
        "first_token_at",
        "finished_at",
        "heartbeat_at",
    ]


@admin.register(Schedule)
class ScheduleAdmin(admin.ModelAdmin[Schedule]):
    list_display = ["name", "owner", "ai_profile", "every_minutes", "daily_at", "next_run_at"]
    list_filter = ["enabled"]
    raw_id_fields = ["owner", "ai_profile", "agent", "last_conversation"]
