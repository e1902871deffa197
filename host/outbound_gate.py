"""The outbound gate (M11): what a model request carries, as it leaves the host.

Every text of a message (its content, content parts and tool-call arguments) is masked by
the secret guard, and the secrets the host stores for the person wherever they appear.
Pure functions over the wire-format messages; host.model_client decides when they apply.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from host.core.secret_guard import mask_known, mask_outbound

# A turn sends the same system prompt and history again in every tool round, and the
# next turn sends them once more: their masked copies are kept, whatever their size.
_masked_text = functools.lru_cache(maxsize=128)(mask_outbound)


def _mask(text: str, known: tuple[str, ...]) -> str:
    return mask_known(_masked_text(text), known) if known else _masked_text(text)


def masked_message(message: dict[str, Any], known: tuple[str, ...]) -> dict[str, Any]:
    masked = dict(message)
    content = message.get("content")
    if isinstance(content, str):
        masked["content"] = _mask(content, known)
    elif isinstance(content, list):  # content parts: only the text parts carry text
        masked["content"] = [
            {**part, "text": _mask(part["text"], known)}
            if isinstance(part, dict) and isinstance(part.get("text"), str)
            else part
            for part in content
        ]
    if isinstance(message.get("tool_calls"), list):
        masked["tool_calls"] = [_masked_call(call, known) for call in message["tool_calls"]]
    return masked


def _masked_call(call: Any, known: tuple[str, ...]) -> Any:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("arguments"), str):
        return call
    arguments = _masked_arguments(function["arguments"], known)
    return {**call, "function": {**function, "arguments": arguments}}


def _masked_arguments(arguments: str, known: tuple[str, ...]) -> str:
    """Tool arguments echo what the model saw; their JSON stays JSON when masked."""
    try:
        parsed = json.loads(arguments)
    except (ValueError, RecursionError):
        return _mask(arguments, known)
    masked = _masked_value(parsed, known)
    return arguments if masked == parsed else json.dumps(masked, ensure_ascii=False)


def _masked_value(value: Any, known: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        return _mask(value, known)
    if isinstance(value, list):
        return [_masked_value(item, known) for item in value]
    if isinstance(value, dict):
        return {key: _masked_value(item, known) for key, item in value.items()}
    return value
