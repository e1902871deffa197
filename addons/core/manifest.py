"""The add-on manifest (api 2): its schema and the errors people read when it is wrong.

Pure: no Django. A manifest is JSON; every field is checked and an error names the
field by its path (``settings.0.choices``) so an author knows what to fix.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

API_VERSION = 2
# The tools the host can give a model; a skill may name only these.
HOST_TOOLS = frozenset({"context_read", "propose_change", "revert_change", "list_memory"})


def gettext_noop(text: str) -> str:
    """Marks a text for the site's catalogue (`make messages` finds it by this name) in a
    core that imports no Django; the page translates it when it shows it."""
    return text


PERMISSIONS = {
    "context-files": gettext_noop("put its context files into your chats' prompt"),
    "user-settings": gettext_noop("keep settings for you (you change them here)"),
    "pages": gettext_noop("show its own pages, which run sandboxed"),
    "memory-tools": gettext_noop("let the assistant use the memory tools its skills name"),
}
MEMORY_TOOLS = HOST_TOOLS
MAX_MANIFEST_BYTES = 64 * 1024
_PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9-]*)\}")
# Inside a context file, {{key}} is the person's value of any declared setting.
TEMPLATE_FIELD = re.compile(r"\{\{([a-z][a-z0-9-]*)\}\}")

AddonId = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9-]{1,39}$")]
Key = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9-]{0,39}$")]
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
Topic = Annotated[
    str, StringConstraints(strip_whitespace=True, to_lower=True, min_length=1, max_length=40)
]
LongText = Annotated[str, StringConstraints(strip_whitespace=True, max_length=1000)]


# Relative package paths; the package reader checks them again against its files.
def _relative(path: str) -> str:
    if path.startswith("/") or any(part in {"", ".", ".."} for part in path.split("/")):
        raise ValueError("must be a relative path inside the package, without '.' or '..'")
    return path


PackagePath = Annotated[
    str, StringConstraints(pattern=r"^[A-Za-z0-9._{}/-]{1,200}$"), AfterValidator(_relative)
]


class ManifestError(ValueError):
    """The manifest cannot be used; ``problems`` holds one "field: reason" per mistake."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class _Strict(BaseModel):
    # A misspelt key is an error, not silently ignored.
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Choice(_Strict):
    value: str | int | bool
    label: Text
    description: LongText = ""


class SettingDecl(_Strict):
    key: Key
    label: Text
    type: Literal["string", "boolean", "integer"]
    description: LongText = ""
    choices: tuple[Choice, ...] = ()
    default: str | int | bool
    max_length: int = Field(200, alias="maxLength", ge=1, le=2000)
    minimum: int | None = None
    maximum: int | None = None

    @model_validator(mode="after")
    def _default_fits(self) -> SettingDecl:
        values = [choice.value for choice in self.choices]
        if len(set(map(repr, values))) != len(values):
            raise ValueError("choices: two choices have the same value")
        for choice in self.choices:
            self.check(choice.value, what="a choice")
        self.check(self.default, what="default")
        return self

    def check(self, value: Any, *, what: str = "value") -> Any:
        """The value if it fits this declaration, else ValueError saying why."""
        if self.type == "boolean":
            if not isinstance(value, bool):
                raise ValueError(f"{what} of {self.key} must be true or false")
        elif self.type == "integer":
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{what} of {self.key} must be a whole number")
            if self.minimum is not None and value < self.minimum:
                raise ValueError(f"{what} of {self.key} must be at least {self.minimum}")
            if self.maximum is not None and value > self.maximum:
                raise ValueError(f"{what} of {self.key} must be at most {self.maximum}")
        else:
            if not isinstance(value, str):
                raise ValueError(f"{what} of {self.key} must be text")
            if len(value) > self.max_length:
                raise ValueError(
                    f"{what} of {self.key} is longer than {self.max_length} characters"
                )
        if what != "a choice" and self.choices and value not in [c.value for c in self.choices]:
            allowed = ", ".join(str(c.value) for c in self.choices)
            raise ValueError(f"{what} of {self.key} must be one of: {allowed}")
        return value

    def choice(self, value: Any) -> Choice | None:
        return next((c for c in self.choices if c.value == value), None)


class Skill(_Strict):
    name: Key
    # What people see; the name is the skill's id in URLs, rules and the model's tools.
    title: Text | None = None
    description: Text
    instructions: Annotated[
        str, StringConstraints(strip_whitespace=True, min_length=1, max_length=4000)
    ]
    allowed_tools: tuple[str, ...] = Field((), alias="allowedTools")
    # What the skill is about: a confirmed rule on one of these goes to its learned rules.
    topics: tuple[Topic, ...] = Field((), max_length=20)

    @property
    def label(self) -> str:
        return self.title or self.name.replace("-", " ").capitalize()

    @field_validator("allowed_tools")
    @classmethod
    def _known_tools(cls, tools: tuple[str, ...]) -> tuple[str, ...]:
        unknown = sorted(set(tools) - HOST_TOOLS)
        if unknown:
            offered = ", ".join(sorted(HOST_TOOLS))
            raise ValueError(f"unknown tool {', '.join(unknown)}; the host offers {offered}")
        return tools


class Page(_Strict):
    path: PackagePath
    title: Text

    @field_validator("path")
    @classmethod
    def _html(cls, path: str) -> str:
        if not path.endswith(".html"):
            raise ValueError("a page must be an .html file")
        return path


class Capabilities(_Strict):
    context_files: tuple[PackagePath, ...] = Field((), alias="contextFiles", max_length=10)


class Manifest(_Strict):
    api: Literal[2]
    id: AddonId
    name: Text
    version: Annotated[str, StringConstraints(pattern=r"^\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$")]
    author: Text
    description: LongText
    permissions: tuple[Literal["context-files", "user-settings", "pages", "memory-tools"], ...] = ()
    user_toggle: bool = Field(True, alias="userToggle")
    capabilities: Capabilities = Field(default_factory=lambda: Capabilities.model_validate({}))
    settings: tuple[SettingDecl, ...] = Field((), max_length=20)
    skills: tuple[Skill, ...] = Field((), max_length=10)
    pages: tuple[Page, ...] = Field((), max_length=5)

    @model_validator(mode="after")
    def _consistent(self) -> Manifest:
        keys = [s.key for s in self.settings]
        if len(set(keys)) != len(keys):
            raise ValueError("settings: two settings have the same key")
        names = [s.name for s in self.skills]
        if len(set(names)) != len(names):
            raise ValueError("skills: two skills have the same name")
        needs = {
            "context-files": bool(self.capabilities.context_files),
            "user-settings": bool(self.settings),
            "pages": bool(self.pages),
            "memory-tools": any(s.allowed_tools for s in self.skills),
        }
        for permission, used in needs.items():
            if used and permission not in self.permissions:
                raise ValueError(f"permissions: add {permission!r}; the manifest uses it")
        for path in self.capabilities.context_files:
            for key in _PLACEHOLDER.findall(path):
                declared = self.setting(key)
                if declared is None or not declared.choices:
                    raise ValueError(
                        f"capabilities.contextFiles: {{{key}}} in a file name must name a "
                        f"setting with choices; for any other setting write {{{{{key}}}}} "
                        "inside the file instead"
                    )
        return self

    def setting(self, key: str) -> SettingDecl | None:
        return next((s for s in self.settings if s.key == key), None)

    def skill(self, name: str) -> Skill | None:
        return next((s for s in self.skills if s.name == name), None)

    def context_file_variants(self, path: str) -> list[str]:
        """Every package path a context-file entry can resolve to, one per choice combination."""
        variants = [path]
        for key in _PLACEHOLDER.findall(path):
            declared = self.setting(key)
            if declared is None:  # _consistent refuses such a manifest
                raise ValueError(f"{{{key}}} names no setting")
            variants = [
                v.replace(f"{{{key}}}", str(c.value)) for v in variants for c in declared.choices
            ]
        return variants

    def resolve_context_file(self, path: str, values: Mapping[str, object]) -> str:
        return _PLACEHOLDER.sub(lambda m: str(values.get(m.group(1), "")), path)

    def template_fields(self, text: str) -> list[str]:
        """The {{key}} fields of a context file that name no declared setting."""
        return sorted({k for k in TEMPLATE_FIELD.findall(text) if self.setting(k) is None})

    def as_json(self) -> dict[str, JsonValue]:
        return self.model_dump(mode="json", by_alias=True, exclude_defaults=False)


def render_template(text: str, values: Mapping[str, object]) -> str:
    """A context file with each {{key}} replaced by the person's checked value; a field
    naming no setting stays as written (the package check refuses such files)."""

    def value(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            return match.group(0)
        found = values[key]
        return ("true" if found else "false") if isinstance(found, bool) else str(found)

    return TEMPLATE_FIELD.sub(value, text)


def _where(loc: tuple[int | str, ...]) -> str:
    # pydantic adds the union member or validator name to some paths; people need field names.
    parts = [str(p) for p in loc if not str(p).startswith(("function-", "str", "int", "bool"))]
    return ".".join(parts) or "manifest"


# What a field that must match a pattern allows, said the way an author reads it.
_PATTERN_RULES = {
    "id": "use 2 to 40 lowercase letters, digits or dashes, starting with a letter "
    "(like tone-of-voice)",
    "version": "use MAJOR.MINOR.PATCH, optionally with -pre or +build (like 1.0.0 or 1.1.0-beta.1)",
    "key": "use 1 to 40 lowercase letters, digits or dashes, starting with a letter",
    "name": "use 1 to 40 lowercase letters, digits or dashes, starting with a letter",
    "path": "use letters, digits and . _ - / { } only, up to 200 characters",
    "contextFiles": "use letters, digits and . _ - / { } only, up to 200 characters",
}


def _model_at(loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The model whose fields sit at this path of the manifest (to suggest a misspelt key)."""
    model: type[BaseModel] = Manifest
    for part in loc:
        if isinstance(part, int):
            continue
        field = next((f for name, f in model.model_fields.items() if part in (name, f.alias)), None)
        if field is None:
            return None
        inner = field.annotation
        while get_args(inner) and not (isinstance(inner, type) and issubclass(inner, BaseModel)):
            inner = get_args(inner)[0]
        if not (isinstance(inner, type) and issubclass(inner, BaseModel)):
            return None
        model = inner
    return model


def _extra_key(loc: tuple[int | str, ...]) -> str:
    model = _model_at(loc[:-1])
    if model is None:
        return "is not a field here"
    allowed = [f.alias or name for name, f in model.model_fields.items()]
    close = difflib.get_close_matches(str(loc[-1]), allowed, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"is not a field here; {hint}allowed: {', '.join(allowed)}"


def _kind_of(value: object) -> str:
    return {bool: "true or false", int: "a number", float: "a number", str: "text"}.get(
        type(value), "a list" if isinstance(value, list) else "an object"
    )


def _size(item: ErrorDetails, unit: str) -> str:
    ctx = item.get("ctx", {})
    value = item.get("input")
    if ctx.get("min_length") == 1 and not str(value or "").strip():
        return "must not be empty"
    limit = (
        f"at most {ctx['max_length']}" if "max_length" in ctx else f"at least {ctx['min_length']}"
    )
    now = f"has {len(value)} {unit}; " if isinstance(value, str | list | tuple | dict) else ""
    return f"{now}{limit} allowed"


# Pydantic's words for the common problems, put the way an author fixes them.
_PLAIN: dict[str, Callable[[ErrorDetails], str]] = {
    "missing": lambda item: "is required: add it",
    "string_too_long": lambda item: _size(item, "characters"),
    "string_too_short": lambda item: _size(item, "characters"),
    "too_long": lambda item: _size(item, "items"),
    "too_short": lambda item: _size(item, "items"),
    "string_type": lambda item: f"must be text, not {_kind_of(item.get('input'))}",
    "int_type": lambda item: f"must be a whole number, not {_kind_of(item.get('input'))}",
    "int_parsing": lambda item: f"must be a whole number, not {item.get('input')!r}",
    "bool_type": lambda item: f"must be true or false, not {_kind_of(item.get('input'))}",
    "bool_parsing": lambda item: f"must be true or false, not {item.get('input')!r}",
    "list_type": lambda item: f"must be a list, not {_kind_of(item.get('input'))}",
    "model_type": lambda item: f"must be an object, not {_kind_of(item.get('input'))}",
    "dict_type": lambda item: f"must be an object, not {_kind_of(item.get('input'))}",
}


def _problem(item: ErrorDetails) -> str:
    loc = tuple(item["loc"])
    kind = item["type"]
    named = [part for part in loc if isinstance(part, str)]
    if kind == "extra_forbidden":
        message = _extra_key(loc)
    elif kind == "string_pattern_mismatch" and named and named[-1] in _PATTERN_RULES:
        message = f"{item['input']!r} does not fit: {_PATTERN_RULES[named[-1]]}"
    elif kind == "literal_error":
        allowed = re.findall(r"'([^']*)'", str(item.get("ctx", {}).get("expected", "")))
        close = difflib.get_close_matches(str(item["input"]), allowed, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}? " if close else ""
        message = f"{item['input']!r} is not allowed; {hint}{str(item['msg']).lower()}"
    elif kind in _PLAIN:
        message = _PLAIN[kind](item)
    else:
        message = str(item["msg"]).removeprefix("Value error, ")
    where = _where(loc)
    # A whole-manifest check already starts with the field it is about.
    return message if where == "manifest" else f"{where}: {message}"


def manifest_parse(raw: bytes | str | Mapping[str, object]) -> Manifest:
    """A checked Manifest, or ManifestError listing every problem with its field."""
    if isinstance(raw, bytes | str):
        size = len(raw.encode("utf-8") if isinstance(raw, str) else raw)
        if size > MAX_MANIFEST_BYTES:
            raise ManifestError([f"manifest: larger than {MAX_MANIFEST_BYTES // 1024} KiB"])
        try:
            data = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ManifestError([f"manifest: not valid JSON ({error})"]) from None
        except (RecursionError, ValueError):  # nested too deep, or a 5,000-digit number
            raise ManifestError(
                ["manifest: not valid JSON (nested too deep or too large)"]
            ) from None
    else:
        data = raw
    if not isinstance(data, dict):
        raise ManifestError(["manifest: must be a JSON object"])
    if data.get("api") != API_VERSION:
        raise ManifestError([f"api: must be {API_VERSION} (this host reads manifest api 2)"])
    try:
        return Manifest.model_validate(data)
    except ValidationError as error:
        raise ManifestError([_problem(item) for item in error.errors(include_url=False)]) from None
