"""The Anthropic Messages API, through the ``anthropic`` SDK (imported lazily, on first use).

What this adapter adds to the SDK:

- **Streaming**: text reaches ``on_text`` as it arrives; tool calls (several per reply are
  fine) come back whole, once the reply is complete.
- **Prompt caching**: three ``cache_control`` breakpoints of the four the API allows: the
  last tool (caches the tool list), the system prompt, and the last block of the newest
  assistant turn (caches the conversation up to the tail, where tier 0 changes every
  call). The loop keeps tools and system byte-identical, so those prefixes keep hitting.
- **Retries and timeouts** are the SDK's own (``max_retries``, ``timeout``); the server's
  ``retry-after`` is honoured.
- **One clear line per failure**: a refused key (401), a rate limit that outlasts the
  retries (429), overload (529), a server error (500), a timeout, a connection dropped
  mid-stream, a malformed body: each becomes :class:`ModelError` with one line a person
  can act on. The SDK surfaces a connection dropped mid-stream as the HTTP library's own
  protocol error and a malformed event as ``json.JSONDecodeError``, not as an
  ``anthropic`` exception, so those are caught too. Nothing from a failed reply is
  returned, so the loop applies nothing from it.

The environment: only ``ANTHROPIC_API_KEY`` and ``ANTHROPIC_BASE_URL`` (and formctl's own
``FORMCTL_*``, read by the caller) change what this does. The SDK would also read
``ANTHROPIC_AUTH_TOKEN``, profiles and federation settings, ``ANTHROPIC_CUSTOM_HEADERS``,
``ANTHROPIC_LOG``, the OpenTelemetry variables and the proxy/CA variables; the client is
built so none of those apply (explicit key and base URL, no custom headers, tracing off,
``trust_env=False`` unless ``FORMCTL_TRUST_ENV=1`` opts in to the proxy/CA variables, SDK
logging kept at WARNING so a debug log can never carry the key).
The key is never logged, printed, recorded, or shown in ``repr``.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

from formctl.agent.models.base import ModelError, ModelReply, ModelRequest, TextSink, content_blocks

__all__ = ["AnthropicModel"]

DEFAULT_BASE_URL = "https://api.anthropic.com"
_EPHEMERAL = {"type": "ephemeral"}


class AnthropicModel:
    """A :class:`~formctl.agent.models.base.ChatModel` over the Anthropic Messages API."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 2,
        timeout: float = 60.0,
        max_tokens: int = 1024,
    ) -> None:
        self.model = model
        self.name = model
        self.max_retries = max_retries
        self.timeout = timeout
        self.max_tokens = max_tokens
        self.base_url = (base_url or os.environ.get("ANTHROPIC_BASE_URL", "").strip() or DEFAULT_BASE_URL)
        self.__api_key = api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY", "").strip()
        self._client: Any = None

    def __repr__(self) -> str:
        return f"AnthropicModel(model={self.model!r}, base_url={self.base_url!r})"

    # ------------------------------------------------------------------ the call

    def respond(self, request: ModelRequest, on_text: TextSink | None = None) -> ModelReply:
        client = self._get_client()
        params = self.request_params(request)
        try:
            with client.messages.stream(**params) as stream:
                for event in stream:
                    if on_text is not None and getattr(event, "type", None) == "text" and event.text:
                        on_text(event.text)
                message = stream.get_final_message()
        except ModelError:
            raise
        except Exception as exc:
            raise ModelError(self._scrub(self._explain(exc))) from None
        return self._reply(message)

    def request_params(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments for ``messages.stream``: the request in wire shape, with cache breakpoints."""
        tools = [dict(t) for t in request.tools]
        if tools:
            tools[-1]["cache_control"] = dict(_EPHEMERAL)
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens or self.max_tokens,
            "messages": _wire_messages(request.messages),
        }
        if request.system:
            params["system"] = [{"type": "text", "text": request.system, "cache_control": dict(_EPHEMERAL)}]
        if tools:
            params["tools"] = tools
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
        if os.environ.get("ANTHROPIC_LOG"):
            # The SDK turns on debug logging from ANTHROPIC_LOG at import; a debug log of a
            # request is exactly where a key or a person's answers could leak.
            for name in ("anthropic", "httpx2", "httpx"):
                logging.getLogger(name).setLevel(logging.WARNING)
        try:
            client = anthropic.Anthropic(
                api_key=self.__api_key,
                base_url=self.base_url,
                max_retries=self.max_retries,
                timeout=self.timeout,
                open_telemetry=False,
                http_client=anthropic.DefaultHttpxClient(trust_env=_trust_env(), timeout=self.timeout),
            )
        except Exception as exc:
            raise ModelError(self._scrub(f"Could not set up the Anthropic client: {exc}")) from None
        if getattr(client, "_custom_headers", None):
            client._custom_headers = {}  # ANTHROPIC_CUSTOM_HEADERS is not ours to honour
        self._client = client
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

    def _explain(self, exc: BaseException) -> str:
        """One line for a person: what went wrong and what to do about it."""
        import anthropic

        retried = f" after {self.max_retries} retr{'y' if self.max_retries == 1 else 'ies'}" if self.max_retries else ""
        if isinstance(exc, anthropic.APIStatusError):
            status = exc.status_code
            if status < 400:  # an error event inside a 200 stream: the SDK does not retry those
                retried = ""
            detail = getattr(exc, "api_message", None) or ""
            kind = getattr(exc, "type", None) or ""
            if status == 401 or kind == "authentication_error":
                return "The Anthropic API refused the key (401): check ANTHROPIC_API_KEY."
            if status == 403 or kind == "permission_error":
                return f"The API key may not use {self.model} (403){_tail(detail)}"
            if status == 404 or kind == "not_found_error":
                return f'No model "{self.model}" at {self.base_url} (404): check --model or FORMCTL_MODEL.'
            if status == 429 or kind == "rate_limit_error":
                return f"Rate-limited by the Anthropic API (429){retried}. Wait a moment, then send again."
            if status == 529 or kind == "overloaded_error":
                return f"The Anthropic API is overloaded (529){retried}. Send again in a moment."
            if status >= 500 or kind == "api_error":
                code = status if status >= 500 else "api_error"
                return f"The Anthropic API failed ({code}){retried}. Send again."
            if status == 413 or kind == "request_too_large":
                return "The conversation is too large for the model (413)."
            return f"The Anthropic API rejected the request ({status}){_tail(detail)}"
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
        if _is_transport_error(exc):
            return (
                "The connection to the Anthropic API dropped mid-reply; nothing from that reply was applied. "
                "Send again."
            )
        text = str(exc).splitlines()[0] if str(exc) else ""
        return f"The Anthropic API call failed ({type(exc).__name__}{': ' + text if text else ''})."

    def _scrub(self, text: str) -> str:
        key = self.__api_key
        line = " ".join(text.split())
        return line.replace(key, "[key]") if key and len(key) >= 8 else line


def _trust_env() -> bool:
    """Proxy and CA variables (HTTPS_PROXY, SSL_CERT_FILE, ...) apply only when FORMCTL_TRUST_ENV=1.

    Off by default so that nothing but ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL and FORMCTL_*
    changes where a conversation goes; a network that needs a proxy or its own CA opts in.
    """
    return os.environ.get("FORMCTL_TRUST_ENV", "").strip().lower() in ("1", "true", "yes", "on")


def _tail(detail: str) -> str:
    detail = " ".join(str(detail).split())
    return f": {detail}" if detail else "."


def _is_transport_error(exc: BaseException) -> bool:
    """The HTTP library's own errors (httpx2 or httpx), wherever the SDK let them through."""
    for module_name in ("httpx2", "httpx"):
        try:
            module = __import__(module_name)
        except ImportError:
            continue
        base = getattr(module, "HTTPError", None) or getattr(module, "TransportError", None)
        if base is not None and isinstance(exc, base):
            return True
        stream_error = getattr(module, "StreamError", None)
        if stream_error is not None and isinstance(exc, stream_error):
            return True
    return isinstance(exc, (ConnectionError, EOFError))


def _is_malformed(exc: BaseException) -> bool:
    """A body that does not parse: bad JSON in an event, tool input the SDK cannot read, events out of order."""
    try:
        from pydantic import ValidationError
    except ImportError:  # pragma: no cover
        ValidationError = ()  # type: ignore[assignment]
    if isinstance(exc, (ValueError, ValidationError)) and not isinstance(exc, UnicodeError):
        return True
    if isinstance(exc, (KeyError, IndexError)):
        return True
    return isinstance(exc, RuntimeError) and "Unexpected event order" in str(exc)


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
            blocks.append(block)
        out.append({"role": message.get("role"), "content": blocks})
    for message in reversed(out):
        if message["role"] == "assistant" and message["content"]:
            message["content"][-1] = {**message["content"][-1], "cache_control": dict(_EPHEMERAL)}
            break
    return out
