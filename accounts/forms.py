from __future__ import annotations

from typing import Any, ClassVar

from django import forms
from django.contrib.auth.forms import UserCreationForm

from accounts.models import AIProfile, User


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
        fields: ClassVar = ["name", "base_url", "model", "context_window", "role", "is_default"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk and self.instance.has_api_key:
            self.fields["api_key"].help_text = "A key is stored. Leave empty to keep it."
