"""The Anthropic Messages API, through the ``anthropic`` SDK (imported lazily, on first use).

What this adapter adds to the SDK:

- **Streaming**: text reaches ``on_text`` as it arrives; tool calls (several per reply are
  fine) come back whole, once the reply is complete.
- **Prompt caching**: see :meth:`AnthropicModel.request_params` for where the breakpoints
  go and why.
- **Retries and timeouts** are the SDK's own client options (``max_retries``, ``timeout``);
  the server's ``retry-after`` is honoured.
- **One clear line per failure**: the SDK's typed exceptions (a refused key, a model the
  key may not use, a rate limit that outlasts the retries, overload, a server error, a
  timeout, no connection) each become :class:`ModelError` with one line a person can act
  on; a refused key (401, 403) is a :class:`~formctl.errors.KeyRejectedError`, on which a
  chat stops rather than retry on every line. A connection lost once the reply has begun
  (the stream opened) is "dropped mid-reply" whatever the SDK calls it: releases differ
  (the HTTP library's own protocol error, ``APIConnectionError``, ``APITimeoutError``), so the
  line follows from when it happened, not from the exception's class. A malformed event may
  surface as ``json.JSONDecodeError``, not as an ``anthropic`` exception, so that is caught too. Only the SDK's calls are inside that mapping: an
  error of the caller's ``on_text`` (a closed pipe while printing) is the caller's own and
  propagates as it is. Nothing from a failed reply is returned, so the loop applies
  nothing from it.
- **Usage**: each reply carries the API's token counts (input, output, cache reads and
  cache writes); the loop adds them up for the conversation.

The environment: only ``ANTHROPIC_API_KEY`` and ``ANTHROPIC_BASE_URL`` (and formctl's own
``FORMCTL_*``, read by the caller) change what this does. The SDK would also read
``ANTHROPIC_AUTH_TOKEN``, profiles and federation settings, ``ANTHROPIC_CUSTOM_HEADERS``,
``ANTHROPIC_LOG``, the OpenTelemetry variables and the proxy/CA variables; the client is
built so none of those apply (explicit key and base URL, the SDK's ``default_headers`` set
to none, tracing off where the SDK has it,
``trust_env=False`` unless ``FORMCTL_TRUST_ENV=1`` opts in to the proxy/CA variables, SDK
logging kept at WARNING so a debug log can never carry the key).
The key is never logged, printed, recorded, or shown in ``repr``.
"""

from __future__ import annotations

import contextlib
import inspect
import os
from types import ModuleType
from typing import TYPE_CHECKING, Unpack

from formctl.agent.models._sdk import Provider, SdkClient, SdkModel, SdkOptions, Service, sendable
from formctl.agent.models._sdk import tail as _tail
from formctl.agent.models.base import ModelReply, ModelRequest, TextSink, content_blocks
from formctl.errors import ModelError
from formctl.json_types import JsonObject

if TYPE_CHECKING:
    from anthropic import Anthropic

__all__ = ["AnthropicModel"]

DEFAULT_BASE_URL = "https://api.anthropic.com"
_EPHEMERAL = {"type": "ephemeral"}


class AnthropicModel(SdkModel):
    """A :class:`~formctl.agent.models.base.ChatModel` over the Anthropic Messages API."""

    provider = "anthropic"

    def __init__(self, model: str, **options: Unpack[SdkOptions]) -> None:
        settings = self._settle(model, options, _PROVIDER)
        self._sdk: SdkClient[Anthropic] = SdkClient(_PROVIDER, settings.api_key, settings.connection, self._api_error)

    # ------------------------------------------------------------------ the call

    def respond(self, request: ModelRequest, on_text: TextSink | None = None) -> ModelReply:
        params = self.request_params(request)
        return self._sdk.call(lambda client, push: self._stream(client, params, push), request.stop, on_text)

    def _stream(self, client: Anthropic, params: JsonObject, push: TextSink) -> ModelReply:
        """The call itself, in :func:`within_deadline`'s thread: text goes to ``push`` as it arrives."""
        with contextlib.ExitStack() as stack:
            with self._sdk.errors():
                stream = stack.enter_context(client.messages.stream(**params))
                events = iter(stream)
            for event in self._sdk.each(events):
                text = getattr(event, "text", None) if getattr(event, "type", None) == "text" else None
                if text:
                    push(text)
            with self._sdk.errors(mid_reply=True):
                message = stream.get_final_message()
        return self._reply(message)

    def request_params(self, request: ModelRequest) -> JsonObject:
        """The keyword arguments for ``messages.stream``: the request in wire shape, with cache breakpoints.

        Two breakpoints, where a cache read pays:

        * the system prompt: the API caches the prefix up to a breakpoint (tools, then
          system), and the loop keeps both byte-identical from call to call. The prefix is
          only cached once it is long enough for the model (about a thousand tokens or more);
          below that the API ignores the breakpoint at no cost, so it stays for forms whose
          prompt is longer. One breakpoint covers the tools too: they come first in the prefix.
        * the newest assistant turn: every call resends the whole conversation, and all of it
          up to that turn is unchanged since the last call (what changes is the person's new
          message and the form's state after it), so the conversation so far is read from the
          cache instead of being processed again.
        """
        params: JsonObject = {
            "model": self.model,
            "max_tokens": request.max_tokens or self.max_tokens,
            "messages": sendable(_wire_messages(request.messages)),
        }
        if request.system:
            params["system"] = [{"type": "text", "text": sendable(request.system), "cache_control": dict(_EPHEMERAL)}]
        if request.tools:
            params["tools"] = [dict(t) for t in request.tools]
        return params

    # ------------------------------------------------------------------ plumbing

    def _reply(self, message: object) -> ModelReply:
        stop_reason = getattr(message, "stop_reason", None)
        if not stop_reason:
            raise ModelError(
                "The Anthropic API's reply ended before it was complete; nothing from it was applied. Send again."
            )
        content: list[JsonObject] = []
        for block in getattr(message, "content", None) or []:
            kind = getattr(block, "type", None)
            if kind == "text":
                if block.text:
                    content.append({"type": "text", "text": block.text})
            elif kind == "tool_use":
                tool_input = block.input if isinstance(block.input, dict) else {}
                content.append({"type": "tool_use", "id": block.id, "name": block.name, "input": tool_input})
        usage: dict[str, int] = {}
        raw_usage = getattr(message, "usage", None)
        for key in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
            value = getattr(raw_usage, key, None)
            if isinstance(value, int):
                usage[key] = value
        return ModelReply(content=content, stop_reason=str(stop_reason), usage=usage)

    def _api_error(self, exc: BaseException) -> str | None:
        """The line for the API's own refusal (a status, or an error event inside a stream), or None
        for a failure :meth:`SdkClient.explain` words alike for both SDKs."""
        import anthropic

        if not isinstance(exc, anthropic.APIStatusError):
            return None
        retried = self._sdk.connection.retried
        detail = getattr(exc, "api_message", None) or _body_message(exc)
        kind = _error_type(exc)
        code: int | str = exc.status_code
        if exc.status_code < 400:  # an error event inside a 200 stream: the SDK neither types nor retries those
            code, retried = kind or "error", ""
        for class_name, error_type, line in _STATUS_ERRORS:
            cls = getattr(anthropic, class_name, None)  # newer SDKs type more statuses
            if (cls is not None and isinstance(exc, cls)) or kind == error_type:
                return line.format(
                    retried=retried, detail=_tail(detail), model=self.model, base_url=self.base_url, status=code
                )
        return f"The Anthropic API rejected the request ({code}){_tail(detail)}"


def _client_options(anthropic: ModuleType) -> JsonObject:
    """What this SDK's client is given beyond the key, the base URL and the network settings."""
    options: JsonObject = {}
    if "open_telemetry" in inspect.signature(anthropic.Anthropic).parameters:
        options["open_telemetry"] = False  # SDKs that trace would read the OTEL_* variables
    custom = _custom_header_names()
    if custom and hasattr(anthropic, "Omit"):
        # SDKs that have Omit also send the headers of ANTHROPIC_CUSTOM_HEADERS; they are not
        # ours to send, and an omitted default header is the SDK's own way to drop one.
        options["default_headers"] = {name: anthropic.Omit() for name in custom}
    return options


def _custom_header_names() -> list[str]:
    """The header names in ANTHROPIC_CUSTOM_HEADERS (``Name: value`` lines), which the SDK would send."""
    names = []
    for line in os.environ.get("ANTHROPIC_CUSTOM_HEADERS", "").splitlines():
        name, colon, _ = line.partition(":")
        if colon and name.strip():
            names.append(name.strip())
    return names


# The SDK's exception classes, most specific first (OverloadedError is a kind of
# InternalServerError), the error type in the body that means the same (an SDK without the
# class, an error event inside a stream), and the line each becomes.
_STATUS_ERRORS = (
    (
        "AuthenticationError",
        "authentication_error",
        "The Anthropic API refused the key ({status}): check ANTHROPIC_API_KEY.",
    ),
    (
        "PermissionDeniedError",
        "permission_error",
        "The Anthropic API refused ANTHROPIC_API_KEY for {model} ({status}){detail}",
    ),
    (
        "NotFoundError",
        "not_found_error",
        'No model "{model}" at {base_url} ({status}): check --model or FORMCTL_MODEL.',
    ),
    (
        "RateLimitError",
        "rate_limit_error",
        "Rate-limited by the Anthropic API ({status}){retried}. Wait a moment, then send again.",
    ),
    ("ContentTooLargeError", "request_too_large", "The conversation is too large for the model ({status})."),
    (
        "OverloadedError",
        "overloaded_error",
        "The Anthropic API is overloaded ({status}){retried}. Send again in a moment.",
    ),
    ("InternalServerError", "api_error", "The Anthropic API failed ({status}){retried}. Send again."),
)


def _key_rejected(exc: BaseException) -> bool:
    """A 401 or 403 (or its error type inside a stream): the key itself is refused."""
    status = getattr(exc, "status_code", None)
    return status in (401, 403) or _error_type(exc) in ("authentication_error", "permission_error")


_PROVIDER = Provider(
    module="anthropic",
    client_class="Anthropic",
    label="Anthropic",
    log_variable="ANTHROPIC_LOG",
    no_key="No ANTHROPIC_API_KEY is set: set it, or run offline with the guided model.",
    not_installed="The anthropic package is not installed ({exc}).",
    options=_client_options,
    key_rejected=_key_rejected,
    service=lambda base_url: Service("the Anthropic API", f"the Anthropic API at {base_url}", "the connection"),
    key_variable="ANTHROPIC_API_KEY",
    url_variable="ANTHROPIC_BASE_URL",
    default_url=DEFAULT_BASE_URL,
)


def _body_message(exc: BaseException) -> str:
    """The ``error.message`` of an error body (SDKs before ``api_message`` keep only the body), or ""."""
    body = getattr(exc, "body", None)
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) else ""


def _error_type(exc: BaseException) -> str:
    """The ``error.type`` of an error body (``overloaded_error``, ``api_error``, ...), or ""."""
    kind = getattr(exc, "type", None)
    if isinstance(kind, str):
        return kind
    body = getattr(exc, "body", None)
    error = body.get("error") if isinstance(body, dict) else None
    kind = error.get("type") if isinstance(error, dict) else None
    return kind if isinstance(kind, str) else ""


def _wire_messages(messages: list[JsonObject]) -> list[JsonObject]:
    """The messages as the API wants them: no empty text blocks, one cache breakpoint at the newest assistant turn."""
    out: list[JsonObject] = []
    for message in messages:
        blocks = []
        for block in content_blocks(message.get("content")):
            if block.get("type") == "text" and not block.get("text"):
                continue
            block = dict(block)
            block.pop("cache_control", None)
            if block.get("type") == "tool_use" and not isinstance(block.get("input"), dict):
                # Arguments another provider's model sent that were not a JSON object (kept as
                # their text, see models/openai.py): the Messages API takes only an object.
                block["input"] = {}
            blocks.append(block)
        out.append({"role": message.get("role"), "content": blocks})
    for message in reversed(out):
        if message["role"] == "assistant" and message["content"]:
            message["content"][-1] = {**message["content"][-1], "cache_control": dict(_EPHEMERAL)}
            break
    return out
