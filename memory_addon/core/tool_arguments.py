"""The argument gate of every model tool (M4) and the strict form of a tool's schema.

Pure: a JSON schema in, a refusal naming the fields (or a schema) out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from pydantic import JsonValue

from memory_addon.core.operations import json_kind

_KINDS = {
    "string": "a string",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list",
    "object": "an object",
    "null": "null",
}


def _field(name: object) -> str:
    text = str(name)
    return repr(text if len(text) <= 60 else text[:60] + "…")


def _problems(error: ValidationError) -> list[str]:
    """What one schema error means, naming the field (never echoing its value)."""
    where = ".".join(str(part) for part in error.absolute_path)
    instance = error.instance
    rule = error.validator_value
    if error.validator == "required" and isinstance(instance, dict) and isinstance(rule, list):
        return [f"{_field(f)} is missing (required)" for f in rule if f not in instance]
    if error.validator == "additionalProperties" and isinstance(instance, dict):
        known = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
        fields = ", ".join(known) or "none"
        return [
            f"{_field(f)} is not a field of this tool (its fields: {fields})"
            for f in instance
            if f not in known
        ]
    subject = _field(where) if where else "the arguments"
    if error.validator == "type":
        wanted = " or ".join(
            _KINDS.get(t, str(t)) for t in ([rule] if isinstance(rule, str) else rule)
        )
        return [f"{subject} must be {wanted}, not {json_kind(instance)}"]
    if error.validator in ("enum", "const"):
        allowed = rule if isinstance(rule, list) else [rule]
        return [f"{subject} must be one of: {', '.join(map(str, allowed))}"]
    if error.validator in ("minItems", "maxItems"):
        bound = "at least" if error.validator == "minItems" else "at most"
        return [f"{subject} must have {bound} {rule} items"]
    return [f"{subject} breaks the schema's {error.validator} rule"]


def arguments_refusal(
    tool: str, parameters: Mapping[str, JsonValue], arguments: object
) -> str | None:
    """The one argument gate (M4): why `arguments` do not fit the tool's published
    JSON schema, naming each field, or None when they fit.

    Every surface that runs a tool calls this before any service, so a missing,
    null, mistyped or unknown field is refused and nothing is written.
    """
    errors = Draft202012Validator(parameters).iter_errors(arguments)
    problems = sorted({p for error in errors for p in _problems(error)})
    if not problems:
        return None
    return (
        f"the arguments of {tool} do not fit its schema: {'; '.join(problems)}. Nothing was done."
    )


def strict_arguments(
    parameters: Mapping[str, JsonValue], arguments: Mapping[str, object]
) -> dict[str, object]:
    """A strict-mode model sends every field: a null for an optional one means it was not
    given, so it is dropped before the gate and the tool see the arguments."""
    required = parameters.get("required")
    needed = required if isinstance(required, list) else []
    return {name: value for name, value in arguments.items() if value is not None or name in needed}


def _nullable(schema: JsonValue) -> JsonValue:
    """An optional property in strict mode: null joins its types (and its enum)."""
    if not isinstance(schema, dict):
        return schema
    nullable = dict(schema)
    kind = nullable.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if kind is not None else []
    if kinds and "null" not in kinds:
        nullable["type"] = [*kinds, "null"]
    enum = nullable.get("enum")
    if isinstance(enum, list) and None not in enum:
        nullable["enum"] = [*enum, None]
    return nullable


def strict_parameters(parameters: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    """The parameters of a tool in strict mode (OpenAI's strict function calling): every
    property required, the optional ones nullable, no other properties."""
    properties = cast(dict[str, JsonValue], parameters.get("properties", {}))
    required = cast(list[JsonValue], parameters.get("required", []))
    return {
        "type": "object",
        "properties": {
            name: schema if name in required else _nullable(schema)
            for name, schema in properties.items()
        },
        "required": list[JsonValue](properties),
        "additionalProperties": False,
    }
