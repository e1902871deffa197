from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.auth.admin import UserAdmin
from django.http import HttpRequest

from accounts.models import (
    Agent,
    AIProfile,
    ApiToken,
    Membership,
    MessagingBinding,
    Organization,
    SiteSettings,
    User,
)

admin.site.register(User, UserAdmin)


class MembershipInline(admin.TabularInline[Membership, Organization]):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Organization)
class OrganizationAdmin(admin.ModelAdmin[Organization]):
    list_display = [
        "name",
        "memory_mode",
        "learning_enabled",
        "skills_enabled",
        "budget_cap_tokens",
        "estimate_complexity",
        "estimate_complexity_locked",
    ]
    prepopulated_fields = {"slug": ("name",)}
    inlines = [MembershipInline]


@admin.register(SiteSettings)
class SiteSettingsAdmin(admin.ModelAdmin[SiteSettings]):
    list_display = ["__str__", "signup_enabled"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return not SiteSettings.objects.exists()


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin[Agent]):
    list_display = ["name", "owner", "memory_allowed", "may_propose", "planning"]
    list_filter = ["memory_allowed", "may_propose"]
    search_fields = ["name", "slug", "owner__username"]


@admin.register(MessagingBinding)
class MessagingBindingAdmin(admin.ModelAdmin[MessagingBinding]):
    list_display = ["bridge", "external_id", "title", "owner"]
    search_fields = ["external_id", "title", "owner__username"]
    exclude = ["webhook_secret_encrypted"]


class AIProfileAdminForm(forms.ModelForm[AIProfile]):
    api_key = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="Write-only. Leave empty to keep the stored key.",
    )

    class Meta:
        model = AIProfile
        fields = [
            "owner",
            "name",
            "base_url",
            "model",
            "context_window",
            "role",
            "is_default",
        ]


@admin.register(AIProfile)
class AIProfileAdmin(admin.ModelAdmin[AIProfile]):
    form = AIProfileAdminForm
    list_display = ["name", "owner", "model", "role", "is_default", "has_api_key"]
    list_filter = ["role", "is_default"]

    def save_model(self, request: HttpRequest, obj: AIProfile, form: Any, change: bool) -> None:
        if form.cleaned_data.get("api_key"):
            obj.api_key = form.cleaned_data["api_key"]
        super().save_model(request, obj, form, change)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin[ApiToken]):
    # Only the hash is stored; nothing here can show the token itself.
    list_display = [
        "name",
        "user",
        "prefix",
        "scope",
        "created_at",
        "expires_at",
        "last_used_at",
        "revoked_at",
    ]
    readonly_fields = ["prefix", "created_at", "last_used_at"]
    exclude = ["token_hash"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # tokens are created by their owner, who sees the value once
