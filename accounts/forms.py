from __future__ import annotations

from datetime import date, datetime, time
from typing import Any, ClassVar

from django import forms
from django.contrib.auth.forms import UserCreationForm
from django.utils import timezone

from accounts.models import Agent, AIProfile, ApiToken, User


class SignupForm(UserCreationForm[User]):
    class Meta(UserCreationForm.Meta):
        model = User
        fields = ("username", "email")


class AIProfileForm(forms.ModelForm[AIProfile]):
    # Write-only: the stored key is never put back into the page.
    api_key = forms.CharField(
        label="API key",
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text="Leave empty to keep the stored key.",
    )

    class Meta:
        model = AIProfile
        fields: ClassVar = [
            "name",
            "base_url",
            "model",
            "context_window",
            "role",
            "is_default",
            "supports_tools",
        ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk and self.instance.has_api_key:
            self.fields["api_key"].help_text = "A key is stored. Leave empty to keep it."


class AgentForm(forms.ModelForm[Agent]):
    class Meta:
        model = Agent
        fields: ClassVar = ["name", "slug", "instructions", "memory_allowed", "may_propose"]
        labels: ClassVar = {
            "memory_allowed": "Allow the Memory add-on for this agent",
            "may_propose": "Allow it to propose memory changes",
        }
        help_texts: ClassVar = {
            "slug": "Names the agent's memory folder: Memory/agents/<slug>/.",
            "memory_allowed": "Without this, the agent's chats read no notes at all.",
            "may_propose": "Proposals still follow your save mode; an agent cannot widen it.",
        }

    def __init__(self, *args: Any, owner: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.owner = owner

    def clean_slug(self) -> str:
        slug = str(self.cleaned_data["slug"])
        clash = Agent.objects.filter(owner=self.owner, slug=slug).exclude(pk=self.instance.pk)
        if clash.exists():
            raise forms.ValidationError("You already have an agent with this slug.")
        return slug


class ApiTokenForm(forms.Form):
    name = forms.CharField(
        max_length=100,
        help_text="Where you will use it, e.g. “laptop coding agent”.",
    )
    scope = forms.ChoiceField(
        label="Access",
        choices=ApiToken.Scope.choices,
        initial=ApiToken.Scope.READ_WRITE,
        help_text="Read only: nothing can be written. Project banks only: nothing else.",
    )
    expires_on = forms.DateField(
        label="Expires on (optional)",
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text="The token stops working at the start of this day (server time).",
    )

    def expires_at(self) -> datetime | None:
        day: date | None = self.cleaned_data.get("expires_on")
        if day is None:
            return None
        return timezone.make_aware(datetime.combine(day, time.min))

    def clean_expires_on(self) -> date | None:
        day: date | None = self.cleaned_data.get("expires_on")
        if day is not None and day <= timezone.localdate():
            raise forms.ValidationError("Pick a day after today.")
        return day
