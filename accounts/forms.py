from __future__ import annotations

from datetime import date, datetime, time
from typing import Any, ClassVar

from django import forms
from django.contrib.auth.forms import UserCreationForm
from django.utils import timezone
from django.utils.text import slugify
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.models import Agent, AIProfile, ApiToken, Organization, User


class SignupForm(UserCreationForm[User]):
    class Meta(UserCreationForm.Meta):
        model = User
        fields = ("username", "email")


class AIProfileForm(forms.ModelForm[AIProfile]):
    # Write-only: the stored key is never put back into the page.
    api_key = forms.CharField(
        label=gettext_lazy("API key"),
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
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
            "strict_tools",
            "runs_locally",
        ]
        labels: ClassVar = {
            "name": gettext_lazy("Name"),
            "base_url": gettext_lazy("Server address"),
            "model": gettext_lazy("Model"),
            "context_window": gettext_lazy("Context window (tokens)"),
            "role": gettext_lazy("Use for"),
            "is_default": gettext_lazy("Default profile for this use"),
            "supports_tools": gettext_lazy("The model supports tools"),
            "strict_tools": gettext_lazy("The model supports strict tool schemas"),
            "runs_locally": gettext_lazy("The model runs on this machine"),
        }
        help_texts: ClassVar = {
            "base_url": gettext_lazy("For example http://127.0.0.1:8080/v1"),
            "supports_tools": gettext_lazy(
                "The model can call functions (tools). Without it, chats send the memory "
                "block only and cannot propose notes."
            ),
            "strict_tools": gettext_lazy(
                "For models with a strict mode (OpenAI's strict function calling): the "
                "tools are sent with every field required and the optional ones nullable."
            ),
            "runs_locally": gettext_lazy(
                "Only for a model served from this computer (llama.cpp, Ollama…): what the "
                "host sends it is not masked. Leave it off for any outside service."
            ),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Only a stored key can be kept: a new profile gets no such hint.
        if self.instance.pk and self.instance.has_api_key:
            self.fields["api_key"].help_text = _("A key is stored. Leave empty to keep it.")


class AgentForm(forms.ModelForm[Agent]):
    class Meta:
        model = Agent
        fields: ClassVar = [
            "name",
            "slug",
            "instructions",
            "memory_allowed",
            "may_propose",
            "planning",
        ]
        labels: ClassVar = {
            "name": gettext_lazy("Name"),
            "slug": gettext_lazy("Short name (slug)"),
            "instructions": gettext_lazy("Instructions"),
            "memory_allowed": gettext_lazy("Allow the Memory add-on for this agent"),
            "may_propose": gettext_lazy("Allow it to propose memory changes"),
            "planning": gettext_lazy("Planning (complexity estimate before a turn)"),
        }
        help_texts: ClassVar = {
            "slug": gettext_lazy("Names the agent's memory folder: Memory/agents/<slug>/."),
            "memory_allowed": gettext_lazy("Without this, the agent's chats read no notes at all."),
            "may_propose": gettext_lazy(
                "Proposals still follow your save mode; an agent cannot widen it."
            ),
        }

    def __init__(self, *args: Any, owner: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.owner = owner
        self.fields["slug"].required = False
        self.fields["slug"].help_text = gettext_lazy(
            "Names the agent's memory folder: Memory/agents/<slug>/. "
            "Leave empty to derive it from the name."
        )

    def clean_slug(self) -> str:
        slug = str(self.cleaned_data.get("slug") or "") or slugify(str(self.data.get("name", "")))[
            :80
        ].strip("-")
        if not slug:
            raise forms.ValidationError(_("Give the agent a name with letters or digits."))
        clash = Agent.objects.filter(owner=self.owner, slug=slug).exclude(pk=self.instance.pk)
        if clash.exists():
            raise forms.ValidationError(_("You already have an agent with this slug."))
        return slug


class ApiTokenForm(forms.Form):
    name = forms.CharField(
        max_length=100,
        help_text=gettext_lazy("Where you will use it, e.g. “laptop coding agent”."),
    )
    scope = forms.ChoiceField(
        label=gettext_lazy("Access"),
        choices=ApiToken.Scope.choices,
        initial=ApiToken.Scope.READ_WRITE,
        help_text=gettext_lazy(
            "Read only: nothing can be written. Project banks only: nothing else."
        ),
    )
    expires_on = forms.DateField(
        label=gettext_lazy("Expires on (optional)"),
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text=gettext_lazy("The token stops working at the start of this day (server time)."),
    )
    reads_own_rule_files = forms.BooleanField(
        label=gettext_lazy("This client reads its own rule files"),
        required=False,
        help_text=gettext_lazy(
            "For a coding agent that loads CLAUDE.md, AGENTS.md or Cursor rules itself: the "
            "turn context it gets with this token leaves your reference files out. Chats in "
            "this web app are not affected."
        ),
    )

    def expires_at(self) -> datetime | None:
        day: date | None = self.cleaned_data.get("expires_on")
        if day is None:
            return None
        return timezone.make_aware(datetime.combine(day, time.min))

    def clean_expires_on(self) -> date | None:
        day: date | None = self.cleaned_data.get("expires_on")
        if day is not None and day <= timezone.localdate():
            raise forms.ValidationError(_("Pick a day after today."))
        return day


class OrganizationForm(forms.ModelForm[Organization]):
    class Meta:
        model = Organization
        fields: ClassVar = [
            "rules",
            "memory_mode",
            "learning_enabled",
            "skills_enabled",
            "reference_files_enabled",
            "budget_cap_tokens",
            "estimate_complexity",
            "estimate_complexity_locked",
        ]
        labels: ClassVar = {
            "rules": gettext_lazy("Organization rules"),
            "memory_mode": gettext_lazy("Memory for members"),
            "learning_enabled": gettext_lazy("Rule learning"),
            "skills_enabled": gettext_lazy("Members may create skills and save learned rules"),
            "reference_files_enabled": gettext_lazy("Reference files of other tools"),
            "budget_cap_tokens": gettext_lazy("Memory budget cap per turn (tokens)"),
            "estimate_complexity": gettext_lazy("Estimate complexity for members"),
            "estimate_complexity_locked": gettext_lazy("Lock it (members cannot change it)"),
        }
        help_texts: ClassVar = {
            "rules": gettext_lazy(
                "Markdown, sent first in every member's chats; members read it, only admins "
                "change it. A line that looks like a secret is refused."
            ),
            "memory_mode": gettext_lazy(
                "Off: no member's chats read or save notes. Read-only: notes are read, never saved."
            ),
            "budget_cap_tokens": gettext_lazy(
                "Upper bound for the memory block of one turn; empty: each person's own."
            ),
        }
