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
import json
import os
from collections.abc import Iterator
from typing import Any

from formctl.agent.models._sdk import (
    Deadline,
    abandon_client,
    connection_lost,
    count_request,
    model_timeout,
    quiet_debug_logs,
    scrub,
    sendable,
    ssl_context,
    within_deadline,
)
from formctl.agent.models._sdk import is_malformed as _is_malformed
from formctl.agent.models._sdk import is_transport_error as _is_transport_error
from formctl.agent.models._sdk import tail as _tail
from formctl.agent.models._sdk import trust_env as _trust_env
from formctl.agent.models.base import ModelReply, ModelRequest, TextSink, content_blocks
from formctl.errors import KeyRejectedError, ModelError

__all__ = ["AnthropicModel"]

DEFAULT_BASE_URL = "https://api.anthropic.com"
_EPHEMERAL = {"type": "ephemeral"}


class AnthropicModel:
    """A :class:`~formctl.agent.models.base.ChatModel` over the Anthropic Messages API."""

    provider = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 2,
        timeout: float = 60.0,
        max_tokens: int = 1024,
        deadline: float | None = None,
    ) -> None:
        self.model = model
        self.name = model
        self.max_retries = max_retries
        self.deadline = model_timeout(deadline)  # the whole call, retries included (see _sdk.py)
        self.timeout = min(timeout, self.deadline)  # each read
        self.max_tokens = max_tokens
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL", "").strip() or DEFAULT_BASE_URL
        self.__api_key = api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY", "").strip()
        self._client: Any = None
        self._http: Any = None  # the client's HTTP client, closed to abandon a call (see _abandon)

    def __repr__(self) -> str:
        return f"AnthropicModel(model={self.model!r}, base_url={self.base_url!r})"

    # ------------------------------------------------------------------ the call

    def respond(self, request: ModelRequest, on_text: TextSink | None = None) -> ModelReply:
        client = self._get_client()
        params = self.request_params(request)
        late = (
            f"The Anthropic API did not finish its reply within {self.deadline:g}s (--model-timeout); "
            "nothing from it was applied. Send again."
        )
        deadline = Deadline(self.deadline, request.stop, self._abandon, late)
        return within_deadline(lambda push: self._stream(client, params, push), deadline, on_text)

    def _stream(self, client: Any, params: dict[str, Any], push: TextSink) -> ModelReply:
        """The call itself, in :func:`within_deadline`'s thread: text goes to ``push`` as it arrives."""
        with contextlib.ExitStack() as stack:
            with self._api_errors():
                stream = stack.enter_context(client.messages.stream(**params))
                events = iter(stream)
            while True:
                with self._api_errors(mid_reply=True):
                    event = next(events, None)
                if event is None:
                    break
                if getattr(event, "type", None) == "text" and event.text:
                    push(event.text)
            with self._api_errors(mid_reply=True):
                message = stream.get_final_message()
        return self._reply(message)

    def _abandon(self) -> None:
        """Let go of the client under a call that is no longer wanted (see :func:`abandon_client`)."""
        http, self._client, self._http = self._http, None, None
        abandon_client(http)

    @contextlib.contextmanager
    def _api_errors(self, *, mid_reply: bool = False) -> Iterator[None]:
        """Turn whatever the SDK raises into one :class:`ModelError` line (the key scrubbed from it).

        ``mid_reply``: the stream had begun, so a lost connection is a reply cut off, not a
        server that cannot be reached."""
        try:
            yield
        except ModelError:
            raise
        except Exception as exc:
            line = self._scrub(self._explain(exc, mid_reply=mid_reply))
            if _key_rejected(exc):
                raise KeyRejectedError(line) from None
            raise ModelError(line) from None

    def request_params(self, request: ModelRequest) -> dict[str, Any]:
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
        params: dict[str, Any] = {
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

    def _get_client(self) -> Any:
        if self._client is not None:
            return self._client
        if not self.__api_key:
            raise ModelError("No ANTHROPIC_API_KEY is set: set it, or run offline with the guided model.")
        try:
            import anthropic
        except ImportError as exc:  # pragma: no cover - anthropic is a dependency
            raise ModelError(f"The anthropic package is not installed ({exc}).") from None
        quiet_debug_logs("ANTHROPIC_LOG", "anthropic")
        options: dict[str, Any] = {}
        if "open_telemetry" in inspect.signature(anthropic.Anthropic).parameters:
            options["open_telemetry"] = False  # SDKs that trace would read the OTEL_* variables
        custom = _custom_header_names()
        if custom and hasattr(anthropic, "Omit"):
            # SDKs that have Omit also send the headers of ANTHROPIC_CUSTOM_HEADERS; they are not
            # ours to send, and an omitted default header is the SDK's own way to drop one.
            options["default_headers"] = {name: anthropic.Omit() for name in custom}
        try:
            trust = _trust_env()
            network: dict[str, Any] = {"trust_env": trust, "timeout": self.timeout}
            context = ssl_context(anthropic.DefaultHttpxClient, trust)  # one per process (see _sdk.py)
            if context is not None:
                network["verify"] = context
            http = anthropic.DefaultHttpxClient(**network, event_hooks={"request": [count_request]})
            client = anthropic.Anthropic(
                api_key=self.__api_key,
                base_url=self.base_url,
                max_retries=self.max_retries,
                timeout=self.timeout,
                http_client=http,
                **options,
            )
        except Exception as exc:
            raise ModelError(self._scrub(f"Could not set up the Anthropic client: {exc}")) from None
        self._client, self._http = client, http
        return client

    def _reply(self, message: Any) -> ModelReply:
        stop_reason = getattr(message, "stop_reason", None)
        if not stop_reason:
            raise ModelError(
                "The Anthropic API's reply ended before it was complete; nothing from it was applied. Send again."
            )
        content: list[dict[str, Any]] = []
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

    def _explain(self, exc: BaseException, *, mid_reply: bool = False) -> str:
        """One line for a person: what went wrong and what to do about it."""
        import anthropic

        if mid_reply and connection_lost(exc, anthropic):  # whatever this SDK release calls it (see _sdk.py)
            return (
                "The connection to the Anthropic API dropped mid-reply; nothing from that reply was applied. "
                "Send again."
            )
        retried = f" after {self.max_retries} retr{'y' if self.max_retries == 1 else 'ies'}" if self.max_retries else ""
        if isinstance(exc, anthropic.APIStatusError):
            detail = getattr(exc, "api_message", None) or _body_message(exc)
            kind = _error_type(exc)
            code: Any = exc.status_code
            if code < 400:  # an error event inside a 200 stream: the SDK neither types nor retries those
                code, retried = kind or "error", ""
            for class_name, error_type, line in _STATUS_ERRORS:
                cls = getattr(anthropic, class_name, None)  # newer SDKs type more statuses
                if (cls is not None and isinstance(exc, cls)) or kind == error_type:
                    return line.format(
                        retried=retried, detail=_tail(detail), model=self.model, base_url=self.base_url, status=code
                    )
            return f"The Anthropic API rejected the request ({code}){_tail(detail)}"
        if isinstance(exc, anthropic.APITimeoutError):
            return f"The Anthropic API did not answer within {self.timeout:g}s{retried}. Send again."
        if isinstance(exc, anthropic.APIResponseValidationError):
            return "The Anthropic API sent a malformed reply; nothing from it was applied. Send again."
        if isinstance(exc, anthropic.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            why = f": {cause}" if cause is not None and str(cause) else ""
            return f"Could not reach the Anthropic API at {self.base_url}{why}. Check the connection, then send again."
        if isinstance(exc, json.JSONDecodeError) or _is_malformed(exc):
            return "The Anthropic API sent a malformed reply; nothing from it was applied. Send again."
        if _is_transport_error(exc):  # the HTTP library's own error, before the reply began
            return (
                f"Could not reach the Anthropic API at {self.base_url}: {exc}. Check the connection, then send again."
            )
        text = str(exc).splitlines()[0] if str(exc) else ""
        return f"The Anthropic API call failed ({type(exc).__name__}{': ' + text if text else ''})."

    def _scrub(self, text: str) -> str:
        return scrub(text, self.__api_key)


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


def _body_message(exc: Any) -> str:
    """The ``error.message`` of an error body (SDKs before ``api_message`` keep only the body), or ""."""
    body = getattr(exc, "body", None)
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) else ""


def _error_type(exc: Any) -> str:
    """The ``error.type`` of an error body (``overloaded_error``, ``api_error``, ...), or ""."""
    kind = getattr(exc, "type", None)
    if isinstance(kind, str):
        return kind
    body = getattr(exc, "body", None)
    error = body.get("error") if isinstance(body, dict) else None
    kind = error.get("type") if isinstance(error, dict) else None
    return kind if isinstance(kind, str) else ""


def _wire_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as the API wants them: no empty text blocks, one cache breakpoint at the newest assistant turn."""
    out: list[dict[str, Any]] = []
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
