"""The one model client: OpenAI-compatible chat completions, streamed, with tools.

Built on the `openai` package (it speaks to any compatible server). The library's own
retries are off: we retry only named transient errors (429 with Retry-After, 502/503,
a reset connection) and only before the first chunk arrived, so no text is duplicated.
No Django in here: the caller owns the database and decides what to store.

Every request to a model is built in `_open_stream`, and that is where the outbound
gate sits (M11): unless the endpoint is a model running on this machine, every text of
the request (system prompt with memory, skills, references and excerpts, the history,
the new message, tool calls and tool results) is masked there, whoever built it, by
host/outbound_gate.py.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import httpx

from host import metrics
from host.bounded_http import AnswerRefused, bounded_call
from host.core.connection_words import connection_failure_words
from host.lazy_module import lazy_module
from host.outbound import shared_http_client
from host.outbound_gate import masked_message

if TYPE_CHECKING:
    import openai
    from openai.types.chat.chat_completion_chunk import ChoiceDeltaToolCall
else:
    # About 36 MB: loaded by the processes that call a model, not by every one that
    # imports the chat app (the web server, the index and delivery workers, beat).
    openai = lazy_module("openai")

ErrorKind = Literal[
    "auth",
    "not_found",
    "context_too_long",
    "rate_limited",
    "server",
    "timeout",
    "unreachable",
    "malformed",
    "cut",
    "refused",
]

_CONTEXT_CUES = (
    "context_length_exceeded",
    "context length",
    "context window",
    "maximum context",
    "too many tokens",
    "prompt is too long",
    "exceeds the context",
)


class ModelError(Exception):
    """The model server could not give an answer; the message is for people."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    model: str
    api_key: str = ""
    connect_timeout: float = 5.0
    read_timeout: float = 60.0
    max_retries: int = 3
    max_retry_wait: float = 10.0
    # The arguments of all tool calls of one streamed reply: a server could otherwise
    # stream them without end into the worker's memory (text has its own cap).
    max_tool_argument_chars: int = 1_048_576
    # The text of one streamed reply; the chat runner stops far earlier at its own cap
    # (CHAT_MAX_ANSWER_CHARS), the short learning calls rely on this one.
    max_content_chars: int = 1_048_576
    # The whole call, connect to last byte (the status and headers within connect + read
    # timeout), and the bytes of one reply and of one line of its stream: a server that
    # trickles or sends one endless line is cut off by the transport, not read into memory.
    max_seconds: float = 900.0
    max_reply_bytes: int = 128 * 1024 * 1024
    max_line_bytes: int = 8 * 1024 * 1024
    # Only a model on this machine (the AI profile says so) gets the request unmasked.
    runs_locally: bool = False
    # Secrets the host stores for the person (API keys, webhook secrets): masked
    # wherever they appear in a request, as the guard cannot recognise them by shape.
    known_secrets: tuple[str, ...] = field(default=(), repr=False)


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str = ""


@dataclass
class RoundResult:
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str = ""
    usage: dict[str, int] = field(default_factory=dict)
    stopped: bool = False


def _client(endpoint: Endpoint) -> openai.OpenAI:
    return openai.OpenAI(
        # The host's one client for outside calls: pooled, bounded as a whole by bounded_call.
        # The library's types name httpx2 only; it takes an httpx client too (legacy support).
        http_client=shared_http_client(),  # type: ignore[arg-type]
        base_url=endpoint.base_url,
        # Local servers need no key, but the library insists on one.
        api_key=endpoint.api_key or "no-key",
        max_retries=0,
        timeout=openai.Timeout(
            endpoint.read_timeout,
            connect=endpoint.connect_timeout,
            read=endpoint.read_timeout,
            write=endpoint.read_timeout,
            pool=endpoint.connect_timeout,
        ),
    )


def _retry_after(error: openai.APIStatusError) -> float | None:
    value = error.response.headers.get("retry-after", "")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _error_text(error: openai.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])[:300]
        if isinstance(inner, str):
            return inner[:300]
    return str(error.message)[:300]


def _is_context_error(error: openai.APIStatusError) -> bool:
    body = json.dumps(error.body) if error.body is not None else ""
    haystack = f"{error.message} {body}".lower()
    return error.status_code in (400, 413, 422) and any(cue in haystack for cue in _CONTEXT_CUES)


def classify(error: Exception, endpoint: Endpoint) -> tuple[ModelError, float | None]:
    """A people-readable error, and how long to wait before a retry (None: do not retry)."""
    where = endpoint.base_url
    if isinstance(error, openai.APITimeoutError):
        return ModelError(
            "timeout", f"The AI server at {where} did not answer in time; nothing was received."
        ), None
    if isinstance(error, openai.APIConnectionError):
        cause = error.__cause__
        reset = isinstance(cause, ConnectionResetError) or "reset" in str(cause).lower()
        return ModelError(
            "unreachable",
            f"The AI server at {where} is unreachable ({connection_failure_words(cause)}).",
        ), (0.5 if reset else None)
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        detail = _error_text(error)
        if status == 401 or status == 403:
            return ModelError(
                "auth", f"The AI server refused the API key ({status}). Check the AI profile."
            ), None
        if _is_context_error(error):
            return ModelError(
                "context_too_long",
                "The conversation is too long for this model's context window. Start a new "
                "conversation or lower the context window in the AI profile.",
            ), None
        if status == 404:
            return ModelError(
                "not_found",
                f"The AI server does not know the model {endpoint.model!r} (404). "
                "Check the model name in the AI profile.",
            ), None
        if status == 429:
            return ModelError(
                "rate_limited", f"The AI server is busy (429): {detail}"
            ), _retry_after(error) or 1.0
        if status in (502, 503):
            return ModelError("server", f"The AI server is unavailable ({status}): {detail}"), 1.0
        if status >= 500:
            return ModelError("server", f"The AI server failed ({status}): {detail}"), None
        return ModelError(
            "refused", f"The AI server refused the request ({status}): {detail}"
        ), None
    return ModelError("malformed", f"Unexpected reply from the AI server: {error}"), None


def _wait(seconds: float, should_stop: Callable[[], bool]) -> bool:
    """Wait before a retry, in short steps so Stop still answers within a second."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if should_stop():
            return False
        time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
    return True


def stream_round(
    endpoint: Endpoint,
    *,
    messages: list[dict[str, Any]],
    tools: Sequence[Mapping[str, object]] | None,
    on_delta: Callable[[str], None],
    should_stop: Callable[[], bool],
) -> RoundResult:
    """One chat-completions call, streamed; raises ModelError with an honest message."""
    started = time.monotonic()
    try:
        result = _stream_round(
            endpoint, messages=messages, tools=tools, on_delta=on_delta, should_stop=should_stop
        )
    except ModelError as error:
        metrics.model_call("chat", time.monotonic() - started, error.kind)
        raise
    metrics.model_call("chat", time.monotonic() - started, "stopped" if result.stopped else "ok")
    return result


def _stream_round(
    endpoint: Endpoint,
    *,
    messages: list[dict[str, Any]],
    tools: Sequence[Mapping[str, object]] | None,
    on_delta: Callable[[str], None],
    should_stop: Callable[[], bool],
) -> RoundResult:
    attempt = 0
    while True:
        received = [False]
        try:
            return _interruptible(
                partial(_stream_once, endpoint, messages, tools, on_delta, should_stop, received),
                should_stop,
            )
        except ModelError:
            raise
        except (openai.APIError, ValueError) as error:
            model_error, delay = (
                classify(error, endpoint)
                if isinstance(error, openai.APIError)
                else (ModelError("malformed", "The AI server sent a malformed stream."), None)
            )
            if received[0]:
                if model_error.kind in ("unreachable", "timeout", "server"):
                    raise ModelError(
                        "cut", "The answer stream was cut off before the model finished."
                    ) from error
                raise model_error from error
            if delay is None or attempt >= endpoint.max_retries:
                raise model_error from error
            attempt += 1
            jitter = random.uniform(0, 0.25)  # noqa: S311 - spreading retries, not security
            if not _wait(min(delay, endpoint.max_retry_wait) + jitter, should_stop):
                return RoundResult(stopped=True)


def _interruptible(call: Callable[[], RoundResult], should_stop: Callable[[], bool]) -> RoundResult:
    """Run the call in a helper thread so Stop answers within a second even while the
    model sends nothing; a stopped helper ends on its own at its next chunk or timeout."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            box["result"] = call()
        except BaseException as error:  # handed to the caller's thread as is
            box["error"] = error
        finally:
            done.set()

    threading.Thread(target=run, name="chat-stream", daemon=True).start()
    while not done.wait(0.2):
        if should_stop():
            return RoundResult(stopped=True)
    if "error" in box:
        raise box["error"]
    result: RoundResult = box["result"]
    return result


def _stream_once(
    endpoint: Endpoint,
    messages: list[dict[str, Any]],
    tools: Sequence[Mapping[str, object]] | None,
    on_delta: Callable[[str], None],
    should_stop: Callable[[], bool],
    received: list[bool],
) -> RoundResult:
    with bounded_call(
        total_seconds=endpoint.max_seconds,
        headers_seconds=endpoint.connect_timeout + endpoint.read_timeout,
        max_bytes=endpoint.max_reply_bytes,
        max_line_bytes=endpoint.max_line_bytes,
    ):
        try:
            return _read_stream(endpoint, messages, tools, on_delta, should_stop, received)
        except AnswerRefused as error:
            raise ModelError(
                "malformed", f"The AI server's answer was not read on: {error}."
            ) from error
        except httpx.TimeoutException as error:
            raise ModelError(
                "timeout",
                f"The AI server at {endpoint.base_url} did not finish its answer in time "
                f"({error}).",
            ) from error


def _read_stream(
    endpoint: Endpoint,
    messages: list[dict[str, Any]],
    tools: Sequence[Mapping[str, object]] | None,
    on_delta: Callable[[str], None],
    should_stop: Callable[[], bool],
    received: list[bool],
) -> RoundResult:
    stream = _open_stream(endpoint, messages, tools)
    result = RoundResult()
    parts: list[str] = []
    calls = _StreamedCalls(endpoint.max_tool_argument_chars)
    content_chars = 0
    try:
        for chunk in stream:
            received[0] = True
            if should_stop():
                result.stopped = True
                break
            if chunk.usage is not None:
                result.usage = {
                    "prompt_tokens": chunk.usage.prompt_tokens or 0,
                    "completion_tokens": chunk.usage.completion_tokens or 0,
                    "total_tokens": chunk.usage.total_tokens or 0,
                }
            for choice in chunk.choices or []:
                delta = choice.delta
                if delta is not None and delta.content:
                    parts.append(delta.content)
                    content_chars += len(delta.content)
                    on_delta(delta.content)
                    # A caller with its own cap (the chat answer) has stopped by now.
                    if content_chars > endpoint.max_content_chars and not should_stop():
                        raise ModelError(
                            "malformed",
                            f"The AI server sent more than {endpoint.max_content_chars:,} "
                            "characters in one reply; it was not read on.",
                        )
                if delta is not None:
                    calls.add(delta.tool_calls or [])
                if choice.finish_reason:
                    result.finish_reason = choice.finish_reason
    finally:
        stream.close()
    result.content = "".join(parts)
    result.tool_calls = _named_tool_calls(calls.calls)
    if not result.stopped and not result.finish_reason:
        if not received[0]:
            raise ModelError("malformed", "The AI server sent an empty stream.")
        raise ModelError("cut", "The answer stream ended before the model finished.")
    return result


def outbound_messages(endpoint: Endpoint, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as they leave the host: masked copies, unless the model runs here.

    The caller's list is not changed: what the host stores keeps the person's own text.
    """
    if endpoint.runs_locally:
        return messages
    known = endpoint.known_secrets
    return [masked_message(message, known) for message in messages]


def _open_stream(
    endpoint: Endpoint, messages: list[dict[str, Any]], tools: Sequence[Mapping[str, object]] | None
) -> openai.Stream[Any]:
    client = _client(endpoint)
    # Messages and tool schemas are built as wire-format JSON already: sent as the body
    # as they are, they skip the client's field-by-field type transform (6-10 ms a round).
    body: dict[str, Any] = {"messages": outbound_messages(endpoint, messages)}
    if tools:
        body["tools"] = tools
        body["tool_choice"] = "auto"
    create: Callable[..., openai.Stream[Any]] = client.chat.completions.create
    return create(
        model=endpoint.model,
        messages=[],
        stream=True,
        stream_options={"include_usage": True},
        extra_body=body,
    )


# Far above what a model sends (OpenAI allows 64-character names); beyond them a stream
# is broken or hostile, and reading on would only fill the worker's memory.
MAX_TOOL_NAME_CHARS = 256
MAX_STREAMED_TOOL_CALLS = 1000


class _StreamedCalls:
    """The tool calls of one streamed reply, collected piece by piece within bounds:
    at most MAX_STREAMED_TOOL_CALLS calls and `max_chars` of arguments for all of them."""

    def __init__(self, max_chars: int) -> None:
        self.calls: dict[int, ToolCall] = {}
        self.max_chars = max_chars
        self.chars = 0

    def add(self, pieces: list[ChoiceDeltaToolCall]) -> None:
        """A streamed tool call arrives in pieces: its id, then its name and arguments."""
        for piece in pieces:
            index = piece.index if piece.index is not None else len(self.calls)
            if index not in self.calls and len(self.calls) >= MAX_STREAMED_TOOL_CALLS:
                raise ModelError(
                    "malformed",
                    f"The AI server sent more than {MAX_STREAMED_TOOL_CALLS} tool calls in "
                    "one reply; none of them was run.",
                )
            call = self.calls.setdefault(index, ToolCall(id="", name=""))
            if piece.id:
                call.id = piece.id[:MAX_TOOL_NAME_CHARS]
            if piece.function is None:
                continue
            call.name += piece.function.name or ""
            call.arguments += piece.function.arguments or ""
            self.chars += len(piece.function.arguments or "")
            if len(call.name) > MAX_TOOL_NAME_CHARS:
                raise ModelError(
                    "malformed",
                    f"The AI server sent a tool call whose name is longer than "
                    f"{MAX_TOOL_NAME_CHARS} characters; it was not run.",
                )
            if self.chars > self.max_chars:
                raise ModelError(
                    "malformed",
                    f"The AI server sent tool calls with more than {self.max_chars:,} "
                    "characters of arguments; none of them was run.",
                )


def _named_tool_calls(calls: dict[int, ToolCall]) -> list[ToolCall]:
    """The round's tool calls in order, each with an id; a call without a name is refused."""
    ordered = [calls[i] for i in sorted(calls)]
    for number, call in enumerate(ordered):
        call.id = call.id or f"call_{number}"
        if not call.name:
            raise ModelError("malformed", "The AI server sent a tool call without a name.")
    return ordered
