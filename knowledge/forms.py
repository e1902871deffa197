from __future__ import annotations

from typing import Any, cast

from django import forms
from django.utils.translation import gettext_lazy

from accounts.models import AIProfile, Organization, User
from host.local_model import E5_MODEL, PACKAGED_MODEL
from knowledge.core.scanning import folder_path_problem
from knowledge.models import Source, Store

LOCAL_MODEL_LABELS = {
    E5_MODEL: gettext_lazy("Multilingual (e5-small, runs on this server)"),
    PACKAGED_MODEL: gettext_lazy("English (MiniLM, runs on this server)"),
}


class StoreForm(forms.Form):
    name = forms.CharField(max_length=120)
    embedding = forms.ChoiceField(
        label=gettext_lazy("Embedding model"),
        help_text=gettext_lazy(
            "Fixed once the collection exists; changing it later needs a rebuild."
        ),
    )
    language = forms.ChoiceField(
        label=gettext_lazy("Language of the documents"),
        choices=Store.Language.choices,
        initial=Store.Language.ENGLISH,
        help_text=gettext_lazy(
            "Keyword search matches word forms of this language (running, runs → run)."
        ),
    )
    role_text = forms.BooleanField(
        label=gettext_lazy("Use with text chats"), required=False, initial=True
    )
    role_coding = forms.BooleanField(label=gettext_lazy("Use with coding chats"), required=False)
    autonomous_opt_in = forms.BooleanField(
        label=gettext_lazy("Allow background and scheduled runs to search it"), required=False
    )
    backend = forms.ChoiceField(
        label=gettext_lazy("Where the vectors live"),
        choices=[
            (Store.Backend.POSTGRES, gettext_lazy("This server's database (pgvector)")),
            (Store.Backend.QDRANT, gettext_lazy("A Qdrant service")),
        ],
        initial=Store.Backend.POSTGRES,
        help_text=gettext_lazy("Texts and keyword search always stay on this server."),
    )
    qdrant_url = forms.CharField(
        label=gettext_lazy("Qdrant address"),
        required=False,
        max_length=500,
        help_text=gettext_lazy("https://host:6333 (plain http:// only for this machine)."),
    )
    qdrant_api_key = forms.CharField(
        label=gettext_lazy("Qdrant API key"),
        required=False,
        max_length=500,
        widget=forms.PasswordInput(render_value=False),
        help_text=gettext_lazy("Stored encrypted."),
    )

    def __init__(self, *args: Any, owner: User, local_models: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The default for new collections comes first, so it is the one preselected.
        choices: list[tuple[str, str]] = [
            (f"fastembed:{model}", str(LOCAL_MODEL_LABELS.get(model, model)))
            for model in local_models
        ]
        for profile in AIProfile.objects.filter(owner=owner, role=AIProfile.Role.EMBEDDING):
            choices.append((f"openai:{profile.pk}", f"{profile.name}: {profile.model}"))
        choices.append(("none:", str(gettext_lazy("None — keyword search only"))))
        embedding = self.fields["embedding"]
        assert isinstance(embedding, forms.ChoiceField)  # noqa: S101 - declared above
        embedding.choices = choices
        self.owner = owner

    def provider_and_profile(self) -> tuple[str, str, AIProfile | None]:
        """(provider, local model name, AI profile) of the chosen embedding."""
        provider, _, rest = str(self.cleaned_data["embedding"]).partition(":")
        if provider == Store.Provider.FASTEMBED:
            return provider, rest, None
        profile = AIProfile.objects.filter(pk=rest, owner=self.owner).first() if rest else None
        return provider, "", profile


class FolderSourceForm(forms.Form):
    path = forms.CharField(label=gettext_lazy("Folder on the server"), max_length=1024)
    include = forms.CharField(
        label=gettext_lazy("Only include (globs, one per line)"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
    )
    exclude = forms.CharField(
        label=gettext_lazy("Exclude (globs, one per line)"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
    )
    use_gitignore = forms.BooleanField(
        label=gettext_lazy("Respect .gitignore"), required=False, initial=True
    )
    max_file_mib = forms.IntegerField(
        label=gettext_lazy("Largest file (MiB)"), min_value=1, max_value=1024, initial=50
    )
    sync_mode = forms.ChoiceField(choices=Source.SyncMode.choices, initial=Source.SyncMode.MANUAL)

    def clean_path(self) -> str:
        path = str(self.cleaned_data["path"])
        problem = folder_path_problem(path)
        if problem:
            raise forms.ValidationError(problem)
        return path


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files in one input (Django's documented recipe)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput(attrs={"multiple": True}))
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> Any:
        one = super().clean
        if isinstance(data, list | tuple):
            return [one(item, initial) for item in data]
        return [one(data, initial)]


class UploadForm(forms.Form):
    documents = MultipleFileField(label=gettext_lazy("Files"))


class SearchForm(forms.Form):
    query = forms.CharField(label=gettext_lazy("Question or search words"), max_length=2000)
    context_window = forms.IntegerField(
        label=gettext_lazy("Model context window (tokens)"),
        min_value=512,
        max_value=10_000_000,
        initial=8192,
    )


class ShareForm(forms.Form):
    """Sharing on the collection's page: the sharer's organization and people in it."""

    organization = forms.BooleanField(required=False)
    readers = forms.MultipleChoiceField(
        label=gettext_lazy("People who may read it"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
    )
    managers = forms.MultipleChoiceField(
        label=gettext_lazy("People who may also change it"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
    )

    def __init__(
        self,
        *args: Any,
        organization: Organization | None,
        people: list[User],
        shared_with_organization: bool = False,
        readers: list[int] | None = None,
        managers: list[int] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.organization_name = organization.name if organization else ""
        if organization is not None:
            self.fields["organization"].label = gettext_lazy(
                "Share with %(organization)s: members read, admins manage"
            ) % {"organization": organization.name}
        else:
            del self.fields["organization"]
        choices = [(str(person.pk), person.get_username()) for person in people]
        for name, initial in (("readers", readers), ("managers", managers)):
            field = cast("forms.MultipleChoiceField", self.fields[name])
            field.choices = choices
            field.initial = [str(pk) for pk in initial or []]
        if organization is not None:
            self.fields["organization"].initial = shared_with_organization

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        both = set(data.get("readers", [])) & set(data.get("managers", []))
        if both:
            self.add_error(
                "managers",
                gettext_lazy("Choose each person once: either to read or to change it."),
            )
        return data
