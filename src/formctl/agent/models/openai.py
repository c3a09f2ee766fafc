"""Any OpenAI-compatible Chat Completions API, through the ``openai`` SDK (imported lazily, on first use).

OpenAI itself, and the local servers that speak the same API (Ollama, vLLM, LM Studio,
llama.cpp's server): point ``OPENAI_BASE_URL`` at one, e.g. ``http://localhost:11434/v1``.
docs/models.md says how a model is chosen and what every adapter promises; this module is
the Chat Completions half of that.

The loop speaks the Messages shape (``base.py``); this adapter translates both ways:

- **The request**: the system prompt is the first message (``role: system``); the tools
  become ``{"type": "function", "function": {name, description, parameters}}``, in the
  loop's order. Both are built from the loop's fixed values the same way every time, so
  they are byte-identical on every request of a conversation and the provider's automatic
  prefix caching applies (OpenAI caches a prompt's longest previously seen prefix, from
  about a thousand tokens on). A user turn becomes its ``tool`` messages (one per
  ``tool_result``, in order, each right after the assistant message that called it) and then
  one ``user`` message with its text blocks joined, so tier 0, the loop's last block, is the
  end of the last user message.
- **The reply**: streamed; text reaches ``on_text`` as it arrives; tool calls (several per
  reply are fine) are assembled from their deltas and come back whole, in the order the model
  gave them, with the ids it gave (an id a server left out is made up, so every call can be
  answered).
- **A weaker model's mistakes** become error results, never a crash or a write: arguments
  that are not valid JSON (or not an object) are handed to the tools as the text they were,
  which the tools refuse ("expected a JSON object") without applying anything; a tool name
  that does not exist is refused by the tools too. A reply with neither text nor a tool call
  and an endless tool loop are stopped by the loop with one line each (docs/models.md).
- **finish_reason**: ``stop`` → ``end_turn`` (``tool_use`` when the reply has tool calls: some
  servers say ``stop`` for those), ``tool_calls`` → ``tool_use``, ``length`` → ``max_tokens``
  (the loop applies nothing from it), ``content_filter`` → ``content_filter`` with every tool
  call dropped (a filtered reply may be cut anywhere; the loop says so plainly).
- **Failures**: the SDK retries rate limits, 408/409 and 5xx with backoff (``max_retries``)
  and honours ``retry-after``; what is left becomes one :class:`ModelError` line. A refused
  key (401, 403) is a :class:`~formctl.errors.KeyRejectedError` (a chat stops); a
  conversation past the context window and a content-filter refusal are said as such.
- **Usage**: requested with ``stream_options.include_usage``; ``prompt_tokens`` less the
  cached ones is ``input_tokens``, the cached ones ``cache_read_input_tokens``,
  ``completion_tokens`` is ``output_tokens`` (the names the loop adds up).

The environment: ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` (and formctl's own ``FORMCTL_*``,
read by the caller). A base URL other than OpenAI's needs no key: local servers take any,
so a placeholder is sent. Proxy and CA variables apply only with ``FORMCTL_TRUST_ENV=1``; SDK
debug logging (``OPENAI_LOG``) is kept at WARNING so a debug log never carries the key. The key
is never logged, printed, recorded, or shown in ``repr``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol, Unpack

from formctl.agent.models._sdk import (
    Closable,
    Provider,
    SdkClient,
    SdkModel,
    SdkOptions,
    Service,
    sendable,
    tail,
)
from formctl.agent.models.base import ModelReply, ModelRequest, TextSink, content_blocks
from formctl.errors import ModelError
from formctl.json_types import JsonObject, JsonValue

if TYPE_CHECKING:
    from openai import OpenAI

__all__ = ["DEFAULT_BASE_URL", "LOCAL_KEY", "OpenAIChatModel"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# What a local server gets as the key when none is set: they accept any (Ollama's own docs use "ollama").
LOCAL_KEY = "no-key"

# finish_reason → the stop reasons the loop knows (base.ModelReply.stop_reason).
_FINISH = {"stop": "end_turn", "tool_calls": "tool_use", "function_call": "tool_use", "length": "max_tokens"}


class OpenAIChatModel(SdkModel):
    """A :class:`~formctl.agent.models.base.ChatModel` over an OpenAI-compatible Chat Completions API."""

    provider = "openai"

    def __init__(self, model: str, **options: Unpack[SdkOptions]) -> None:
        settings = self._settle(model, options, _PROVIDER)
        key = settings.api_key or (LOCAL_KEY if not self.is_openai else "")
        self._sdk: SdkClient[OpenAI] = SdkClient(_PROVIDER, key, settings.connection, self._api_error)
        self._ask_usage = True  # off once a server refuses stream_options (see _create)

    @property
    def is_openai(self) -> bool:
        """True when the base URL is OpenAI's own API (not a local or third-party server)."""
        return self.base_url == DEFAULT_BASE_URL

    @property
    def _where(self) -> str:
        """Who answers, as a line names it: "the OpenAI API", "the model server at http://…"."""
        return self._sdk.service.name

    # ------------------------------------------------------------------ the call

    def respond(self, request: ModelRequest, on_text: TextSink | None = None) -> ModelReply:
        params = self.request_params(request)
        return self._sdk.call(lambda client, push: self._stream(client, params, push), request.stop, on_text)

    def _stream(self, client: OpenAI, params: JsonObject, push: TextSink) -> ModelReply:
        """The call itself, in :func:`within_deadline`'s thread: text goes to ``push`` as it arrives."""
        reply = _Assembly()
        with contextlib.ExitStack() as stack:
            with self._sdk.errors():
                stream = self._create(client, params)
                stack.callback(_close, stream)
                chunks = iter(stream)
            for chunk in self._sdk.each(chunks):
                with self._sdk.errors(mid_reply=True):
                    shown = reply.add(chunk)
                if shown:
                    push(shown)
        return self._reply(reply)

    def _create(self, client: OpenAI, params: JsonObject) -> _ChunkStream:
        """``chat.completions.create``; a server that refuses ``stream_options`` (a 400 naming it: some
        compatible servers do not know it) is asked again without it, and never asked for usage again."""
        if not self._ask_usage:
            params = {k: v for k, v in params.items() if k != "stream_options"}
        try:
            return _open_stream(client, params)
        except Exception as exc:
            if "stream_options" not in params or getattr(exc, "status_code", None) not in (400, 422):
                raise
            if "stream_options" not in _api_message(exc) + str(exc):
                raise
        self._ask_usage = False
        return _open_stream(client, {k: v for k, v in params.items() if k != "stream_options"})

    def request_params(self, request: ModelRequest) -> JsonObject:
        """The keyword arguments for ``chat.completions.create``: the request in wire shape.

        The token limit is ``max_completion_tokens`` on OpenAI's own API (its newer models
        refuse ``max_tokens``) and ``max_tokens`` elsewhere (what every local server reads).
        """
        messages: list[JsonObject] = []
        if request.system:
            messages.append({"role": "system", "content": _sendable(request.system)})
        messages.extend(wire_messages(request.messages))
        params: JsonObject = {
            "model": self.model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        limit = request.max_tokens or self.max_tokens
        params["max_completion_tokens" if self.is_openai else "max_tokens"] = limit
        if request.tools:
            params["tools"] = wire_tools(request.tools)
        return params

    # ------------------------------------------------------------------ plumbing

    def _reply(self, reply: _Assembly) -> ModelReply:
        if reply.finish is None:
            raise ModelError(
                f"The reply from {self._where} ended before it was complete; nothing from it was applied. Send again."
            )
        content: list[JsonObject] = []
        text = "".join(reply.text)
        if text:
            content.append({"type": "text", "text": text})
        if reply.refusal and not text:
            content.append({"type": "text", "text": "".join(reply.refusal)})
        stop_reason = _FINISH.get(reply.finish, reply.finish)
        if reply.refusal:
            stop_reason = "refusal"
        if stop_reason in ("end_turn", "tool_use") and reply.calls:
            stop_reason = "tool_use"
            content.extend(reply.tool_blocks())
        elif stop_reason == "max_tokens":
            pass  # the loop keeps the text and runs nothing: the calls may be cut off
        elif stop_reason == "tool_use":
            stop_reason = "end_turn"  # said tool_calls but sent none
        return ModelReply(content=content, stop_reason=stop_reason, usage=reply.usage)

    def _api_error(self, exc: BaseException) -> str | None:
        """The line for the API's own refusal (a status, or an error event inside a 200 stream), or
        None for a failure :meth:`SdkClient.explain` words alike for both SDKs."""
        import openai

        where, who, retried = self._where, self._sdk.service.who, self._sdk.connection.retried
        if isinstance(exc, openai.APIStatusError):
            code = exc.status_code
            detail = _api_message(exc)
            kind = _error_code(exc)
            if code == 401:
                return f"{who} refused the key ({code}): check OPENAI_API_KEY."
            if code == 403:
                return f"{who} refused OPENAI_API_KEY for {self.model} ({code}){tail(detail)}"
            if code == 404:
                return f'No model "{self.model}" at {self.base_url} ({code}): check --model or FORMCTL_MODEL.'
            if _context_exceeded(kind, detail):
                return f"The conversation no longer fits {self.model}'s context window ({code}){tail(detail)}"
            if _content_filtered(kind, detail):
                return f"{who}'s content filter refused the request ({code}){tail(detail)}"
            if code == 429:
                if kind == "insufficient_quota":
                    return f"{who} says the key's quota is used up ({code}){tail(detail)}"
                return f"Rate-limited by {where} ({code}){retried}. Wait a moment, then send again."
            if code >= 500:
                return f"{who} failed ({code}){retried}. Send again."
            return f"{who} rejected the request ({code}){tail(detail)}"
        if isinstance(exc, openai.APIError) and not isinstance(
            exc, (openai.APIConnectionError, openai.APIResponseValidationError)
        ):  # an error event inside a 200 stream
            detail = _api_message(exc)
            if _context_exceeded(_error_code(exc), detail):
                return f"The conversation no longer fits {self.model}'s context window{tail(detail)}"
            return f"{who} reported an error mid-reply; nothing from it was applied{tail(detail)}"
        return None


def _service(base_url: str) -> Service:
    """How a line names the server: "the OpenAI API", "the model server at http://…"."""
    name = "the OpenAI API" if base_url == DEFAULT_BASE_URL else f"the model server at {base_url}"
    return Service(name, name, "the connection (and OPENAI_BASE_URL)")


_PROVIDER = Provider(
    module="openai",
    client_class="OpenAI",
    label="OpenAI",
    log_variable="OPENAI_LOG",
    no_key=(
        "No OPENAI_API_KEY is set: set it (or OPENAI_BASE_URL for a local server), "
        "or run offline with the guided model."
    ),
    not_installed="The openai package is not installed: pip install 'formctl[openai]', or pick another model.",
    options=lambda openai: {},
    service=_service,
    key_rejected=lambda exc: getattr(exc, "status_code", None) in (401, 403),
    key_variable="OPENAI_API_KEY",
    url_variable="OPENAI_BASE_URL",
    default_url=DEFAULT_BASE_URL,
    strip_slash=True,
)


def _open_stream(client: OpenAI, params: JsonObject) -> _ChunkStream:
    """``chat.completions.create`` for a streamed reply (``params`` always ask for one: request_params)."""
    rest = {k: v for k, v in params.items() if k != "stream"}
    stream: _ChunkStream = client.chat.completions.create(stream=True, **rest)
    return stream


class _ChunkStream(Closable, Protocol):
    """A streamed reply as the SDK hands it over: its chunks, and closing it."""

    def __iter__(self) -> Iterator[object]: ...


class _Assembly:
    """One streamed reply, put together chunk by chunk."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.refusal: list[str] = []
        self.calls: dict[int, dict[str, str]] = {}
        self.finish: str | None = None
        self.usage: dict[str, int] = {}

    def add(self, chunk: object) -> str:
        """Take one chunk in; returns its text (to show as it arrives), or ""."""
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.usage = _usage(usage)
        shown = ""
        for choice in getattr(chunk, "choices", None) or []:
            if getattr(choice, "index", 0) not in (0, None):
                continue  # only one choice is asked for
            delta = getattr(choice, "delta", None)
            if delta is not None:
                piece = getattr(delta, "content", None)
                if isinstance(piece, str) and piece:
                    self.text.append(piece)
                    shown += piece
                refusal = getattr(delta, "refusal", None)
                if isinstance(refusal, str) and refusal:
                    self.refusal.append(refusal)
                for call in getattr(delta, "tool_calls", None) or []:
                    self._call_delta(call)
            finish = getattr(choice, "finish_reason", None)
            if finish:
                self.finish = str(finish)
        return shown

    def _call_delta(self, call: object) -> None:
        index = getattr(call, "index", None)
        call_id = getattr(call, "id", None) or ""
        if not isinstance(index, int):
            # A server that numbers nothing: a new id (or the first delta) starts a new call.
            last = max(self.calls) if self.calls else -1
            index = last + 1 if last < 0 or (call_id and call_id != self.calls[last]["id"]) else last
        slot = self.calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
        if call_id and not slot["id"]:
            slot["id"] = call_id
        function = getattr(call, "function", None)
        if function is not None:
            name = getattr(function, "name", None)
            if isinstance(name, str) and name and name != slot["name"]:
                slot["name"] += name
            arguments = getattr(function, "arguments", None)
            if isinstance(arguments, str):
                slot["arguments"] += arguments

    def tool_blocks(self) -> list[JsonObject]:
        """The calls as ``tool_use`` blocks, in the model's order, each with an id unique in the reply."""
        blocks: list[JsonObject] = []
        seen: set[str] = set()
        for n, index in enumerate(sorted(self.calls), 1):
            slot = self.calls[index]
            call_id = slot["id"] or f"call_{n}"
            while call_id in seen:
                call_id += f"_{n}"
            seen.add(call_id)
            blocks.append({"type": "tool_use", "id": call_id, "name": slot["name"], "input": parse_arguments(slot)})
        return blocks


def parse_arguments(slot: dict[str, str]) -> JsonValue:
    """A call's arguments: the JSON object they spell, ``{}`` for none, else the text as it was.

    Text that is not a JSON object goes to the tools as it is: they refuse anything but an
    object with an error result ("expected a JSON object, got str"), and sending the same text
    back keeps the conversation what the model said.
    """
    text = slot["arguments"]
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return text
    return value if isinstance(value, dict) else text


def wire_tools(tools: list[JsonObject]) -> list[JsonObject]:
    """The loop's tool definitions (Messages shape) as Chat Completions functions, in the same order."""
    out = []
    for tool in tools:
        function: JsonObject = {"name": tool["name"]}
        if tool.get("description"):
            function["description"] = tool["description"]
        function["parameters"] = tool.get("input_schema") or {"type": "object", "properties": {}}
        out.append({"type": "function", "function": function})
    return out


def wire_messages(messages: list[JsonObject]) -> list[JsonObject]:
    """The conversation (Messages shape) as Chat Completions messages.

    A user turn's ``tool_result`` blocks become ``tool`` messages first (they answer the
    assistant message just before), then its text blocks one ``user`` message, joined by a
    blank line (a plain string: every compatible server reads that). An assistant turn is one
    message: its text, and its ``tool_use`` blocks as ``tool_calls`` with the arguments as
    compact JSON (or the text the model sent, when that was not JSON).
    """
    out: list[JsonObject] = []
    for message in messages:
        blocks = content_blocks(message.get("content"))
        if message.get("role") == "assistant":
            text = _sendable("".join(b.get("text", "") for b in blocks if b.get("type") == "text"))
            calls = [
                {
                    "id": b.get("id", ""),
                    "type": "function",
                    "function": {
                        "name": _sendable(str(b.get("name", ""))),
                        "arguments": _arguments_text(b.get("input")),
                    },
                }
                for b in blocks
                if b.get("type") == "tool_use"
            ]
            if not text and not calls:
                continue
            wire: JsonObject = {"role": "assistant", "content": text or None}
            if calls:
                wire["tool_calls"] = calls
            out.append(wire)
            continue
        for block in blocks:
            if block.get("type") == "tool_result":
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": block.get("tool_use_id", ""),
                        "content": _result_text(block.get("content")),
                    }
                )
        texts = [b.get("text", "") for b in blocks if b.get("type") == "text" and b.get("text")]
        if texts:
            out.append({"role": "user", "content": _sendable("\n\n".join(texts))})
    return out


def _arguments_text(value: JsonValue) -> str:
    if isinstance(value, str):
        return _sendable(value)  # what the model sent, when it was not a JSON object
    try:
        encoded = json.dumps(value if value is not None else {}, ensure_ascii=False, separators=(",", ":"))
        if sendable(encoded) != encoded:  # a "\udc80" the model sent decodes to a lone surrogate: escape it again
            encoded = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
        return encoded
    except (TypeError, ValueError, RecursionError):
        return "{}"


def _result_text(content: JsonValue) -> str:
    if isinstance(content, str):
        return _sendable(content)
    return _sendable("".join(b.get("text", "") for b in content_blocks(content) if b.get("type") == "text"))


def _sendable(text: str) -> str:
    """``text`` with each lone surrogate (a terminal's undecodable byte, a model's stray escape) as U+FFFD."""
    return str(sendable(text))


def _usage(raw: object) -> dict[str, int]:
    prompt = getattr(raw, "prompt_tokens", None)
    completion = getattr(raw, "completion_tokens", None)
    details = getattr(raw, "prompt_tokens_details", None)
    # An SDK older than the field keeps it as the plain dict the server sent.
    cached = details.get("cached_tokens") if isinstance(details, dict) else getattr(details, "cached_tokens", None)
    cached = cached if isinstance(cached, int) else 0
    usage: dict[str, int] = {}
    if isinstance(prompt, int):
        usage["input_tokens"] = max(0, prompt - cached)
        usage["cache_read_input_tokens"] = cached
    if isinstance(completion, int):
        usage["output_tokens"] = completion
    return usage


def _close(stream: Closable) -> None:
    with contextlib.suppress(Exception):
        stream.close()


def _api_message(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
    message = getattr(exc, "message", None)
    return message if isinstance(message, str) else ""


def _error_code(exc: BaseException) -> str:
    for attribute in ("code", "type"):
        value = getattr(exc, attribute, None)
        if isinstance(value, str) and value:
            if attribute == "code" or value not in ("invalid_request_error", "server_error"):
                return value
    return ""


def _context_exceeded(code: str, detail: str) -> bool:
    text = detail.lower()
    return code == "context_length_exceeded" or "context length" in text or "context window" in text


def _content_filtered(code: str, detail: str) -> bool:
    return code in ("content_filter", "content_policy_violation") or "content management policy" in detail.lower()
