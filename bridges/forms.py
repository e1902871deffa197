from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from accounts.models import Agent, AIProfile, MessagingBinding, User
from bridges.models import EventEndpoint


class BindingForm(forms.Form):
    kind = forms.ChoiceField(label=_("Bridge kind"), choices=MessagingBinding.Kind.choices)
    title = forms.CharField(label=_("Name"), max_length=200)
    agent = forms.ModelChoiceField(
        label=_("Agent"), queryset=Agent.objects.none(), required=False, empty_label=_("None")
    )
    ai_profile = forms.ModelChoiceField(
        label=_("AI profile"),
        queryset=AIProfile.objects.none(),
        required=False,
        empty_label=_("My default profile"),
    )
    callback_url = forms.URLField(
        label=_("Callback URL"),
        required=False,
        max_length=200,
        help_text=_("Answers are POSTed here, signed with the binding's secret."),
    )
    secret = forms.CharField(
        label=_("Slack signing secret"),
        required=False,
        max_length=200,
        widget=forms.PasswordInput(render_value=False),
        help_text=_("Only for Slack: the signing secret of your Slack app."),
    )

    def __init__(self, *args: Any, owner: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        agent_field = self.fields["agent"]
        profile_field = self.fields["ai_profile"]
        if not isinstance(agent_field, forms.ModelChoiceField) or not isinstance(
            profile_field, forms.ModelChoiceField
        ):
            raise TypeError("The binding form's pickers must be model choice fields.")
        agent_field.queryset = Agent.objects.filter(owner=owner)
        profile_field.queryset = AIProfile.objects.filter(owner=owner).exclude(
            role=AIProfile.Role.EMBEDDING
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("kind") == MessagingBinding.Kind.SLACK and not data.get("secret"):
            self.add_error("secret", _("Slack bindings need the signing secret of your Slack app."))
        return data


class EndpointForm(forms.Form):
    url = forms.URLField(label=_("Endpoint URL"), max_length=500)
    description = forms.CharField(label=_("Description"), max_length=200, required=False)
    event_types = forms.MultipleChoiceField(
        label=_("Event types"),
        choices=EventEndpoint.EventType.choices,
        widget=forms.CheckboxSelectMultiple,
    )
    for_organization = forms.BooleanField(
        label=_("For my whole organization (admins only)"), required=False
    )
