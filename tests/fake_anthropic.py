"""A fake Anthropic Messages API on 127.0.0.1, for driving the real ``anthropic`` SDK in tests.

Real HTTP (``http.server`` in a thread), real JSON and real server-sent-event streams, so
the SDK's own request building, retries, streaming and error mapping all run. Replies are
scripted in order; every request is recorded (method, path, headers, parsed body, raw
bytes). Faults can be queued like replies:

    with FakeAnthropic() as api:
        api.reply(text("Hello!"), tool_use("form_start", {"form": "travel-claim"}))
        api.fault(429, times=2)          # rate-limited twice (outlasts max_retries=1)
        api.drop_mid_stream("Partial")   # headers and some events, then the socket closes
        api.malformed()                  # an event whose data is not JSON
        api.stream_error("overloaded_error")  # an SSE error event after a 200
        api.hang(2.0)                    # no answer at all (past the client's timeout)
        api.trickle(60, every=0.5)       # a message started, then only pings, never ended in time
        api.reply(text("Hm."), delay=2.5)     # a slow model: the answer starts after 2.5 s
        api.answer_with(lambda body: ([text("Hi")], None))   # then answer every request from its body
        model = AnthropicModel("claude-test", api_key="sk-test", base_url=api.url, max_retries=1)

Like the real API it is strict about the conversation it is sent, so a test of a broken
request can fail: a ``tool_result`` that answers no ``tool_use`` of the assistant turn just
before it, a ``tool_use`` left unanswered by the next user turn (whose results must come
first), two turns of one role in a row, a system prompt or tool list that changed in the
middle of a conversation (one conversation: requests that open with the same first user
message). Each is answered 400 ``invalid_request_error`` and listed in ``rejected``.

Faults carry ``retry-after-ms: 1`` so the SDK's retries take a millisecond, not seconds.
When the script runs out the server answers 500 with ``x-should-retry: false`` and the
request is listed in ``unexpected``, so a test that sends more than it scripted fails
clearly instead of hanging.
"""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any

from loopback import Drop as _Drop
from loopback import Hang as _Hang
from loopback import LoopbackHandler, LoopbackServer
from loopback import Malformed as _Malformed
from loopback import Trickle as _Trickle

_ids = itertools.count(1)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(name: str, input: dict[str, Any], id: str | None = None) -> dict[str, Any]:
    return {"type": "tool_use", "id": id or f"toolu_{next(_ids):04d}", "name": name, "input": input}


@dataclass
class _Reply:
    content: list[dict[str, Any]]
    stop_reason: str
    usage: dict[str, int] = field(default_factory=dict)
    delay: float = 0.0  # seconds the "model" thinks before it answers


@dataclass
class _Fault:
    status: int
    error_type: str
    message: str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class _StreamError:
    error_type: str
    message: str


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


class FakeAnthropic(LoopbackServer):
    """A scripted Messages API server. Use as a context manager, or call ``close()``."""

    def __init__(self) -> None:
        self._responder: Any = None
        super().__init__(_Handler, name="fake-anthropic")

    # ------------------------------------------------------------------ scripting

    def reply(
        self,
        *content: dict[str, Any],
        stop_reason: str | None = None,
        usage: dict[str, int] | None = None,
        delay: float = 0.0,
    ) -> None:
        """Queue one assistant reply. ``stop_reason`` defaults to tool_use when it calls tools, else end_turn.
        ``delay``: seconds before the answer starts (a slow model, within the client's timeout)."""
        if stop_reason is None:
            stop_reason = "tool_use" if any(b.get("type") == "tool_use" for b in content) else "end_turn"
        self._push(_Reply(list(content), stop_reason, dict(usage or {}), delay))

    def fault(self, status: int, *, times: int = 1, error_type: str | None = None, message: str | None = None) -> None:
        """Queue ``times`` HTTP error responses with the API's error body."""
        kind = error_type or _ERROR_TYPES.get(status, "api_error")
        for _ in range(times):
            self._push(_Fault(status, kind, message or f"fake {kind}", {"retry-after-ms": "1"}))

    def drop_mid_stream(self, partial_text: str = "Let me", *, stall: float = 0.0) -> None:
        """Queue a 200 stream that sends some text, then closes the connection before the body ends
        (after ``stall`` seconds of silence: past the client's timeout, the client gives up first)."""
        self._push(_Drop(partial_text, stall))

    def malformed(self) -> None:
        """Queue a 200 stream with an event whose data is not JSON."""
        self._push(_Malformed())

    def hang(self, seconds: float = 2.0) -> None:
        """Queue a request that gets no answer for ``seconds`` (longer than the client's timeout)."""
        self._push(_Hang(seconds))

    def trickle(self, seconds: float, every: float = 0.5, late: list[dict[str, Any]] | None = None) -> None:
        """Queue a 200 stream that starts a message, then sends a ping every ``every`` seconds for
        ``seconds``, then the rest of the reply ``late`` (blocks, as for :meth:`reply`) if given."""
        self._push(_Trickle(seconds, every, late))

    def stream_error(self, error_type: str = "overloaded_error", message: str = "Overloaded") -> None:
        """Queue a 200 stream that reports an error event mid-stream (as the API does when overloaded)."""
        self._push(_StreamError(error_type, message))

    def answer_with(self, respond: Any) -> None:
        """Once the queued script runs out, answer each Messages request with ``respond(body)``:
        a scripted model that reads the request (``(content_blocks, stop_reason or None)``; the
        stop reason defaults as in :meth:`reply`). ``None`` turns it off."""
        self._responder = respond

    # ------------------------------------------------------------------ reading what was sent

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """Parsed bodies of the Messages requests, in order (retries included)."""
        return [r.body for r in self.requests if r.path.endswith("/v1/messages")]

    # ------------------------------------------------------------------ what the real API refuses

    def problem(self, body: Any) -> str | None:
        """Why the Messages API would refuse this request body, or None."""
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list) or not body["messages"]:
            return "messages: a non-empty list is required"
        messages = body["messages"]
        waiting: list[str] = []  # tool_use ids of the assistant turn just before
        previous = None
        for n, message in enumerate(messages):
            role = message.get("role") if isinstance(message, dict) else None
            if role not in ("user", "assistant"):
                return f"messages.{n}.role: unexpected role {role!r}"
            if n == 0 and role != "user":
                return "messages.0: the first message must use the user role"
            if role == previous:
                return f"messages.{n}: roles must alternate between user and assistant"
            previous = role
            content = message.get("content")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            if not isinstance(blocks, list):
                return f"messages.{n}.content: a string or a list of blocks"
            kinds = [b.get("type") for b in blocks if isinstance(b, dict)]
            if role == "user":
                answered = [
                    b.get("tool_use_id") for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"
                ]
                for tool_use_id in answered:
                    if tool_use_id not in waiting:
                        return (
                            f"messages.{n}: unexpected `tool_use_id` found in `tool_result` blocks: {tool_use_id}. "
                            "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                        )
                if waiting:
                    missing = [i for i in waiting if i not in answered]
                    if missing:
                        return (
                            f"messages.{n}: `tool_use` ids were found without `tool_result` blocks immediately "
                            f"after: {', '.join(missing)}"
                        )
                    if kinds[: len(answered)] != ["tool_result"] * len(answered):
                        return f"messages.{n}: `tool_result` blocks must come first in the turn that answers them"
                waiting = []
            else:
                waiting = [b.get("id") for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
        # One conversation keeps its system prompt and tools: a request that continues one (it has
        # more than its first user message) is compared with the conversation's first request.
        # Conversations are told apart by their model and first message (runs played in parallel
        # through one server, each with a model name of its own, may all open with "Hello.").
        first = messages[0].get("content")
        first_text = first if isinstance(first, str) else ""
        if isinstance(first, list):
            first_text = next((b.get("text", "") for b in first if isinstance(b, dict) and b.get("type") == "text"), "")
        system = body.get("system")
        system_text = system if isinstance(system, str) else json.dumps(system, sort_keys=True)
        prefix = (system_text, json.dumps(body.get("tools"), sort_keys=True))
        with self._lock:
            key = f"{body.get('model')}\n{first_text}"
            known = self._conversations.get(key)
            if known is None or len(messages) == 1:
                self._conversations[key] = prefix
            elif known[0] != prefix[0]:
                return "system: the system prompt changed in the middle of a conversation"
            elif known[1] != prefix[1]:
                return "tools: the tool list changed in the middle of a conversation"
        return None


class _Handler(LoopbackHandler):
    server_fake: FakeAnthropic

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        record = self._record()
        body = record.body
        fake = self.server_fake
        if not self.path.split("?")[0].endswith("/v1/messages"):
            self._json(404, _error_body("not_found_error", f"fake: no route {self.path}"))
            return
        why = fake.problem(body)
        if why is not None:
            with fake._lock:
                fake.rejected.append((record, why))
            self._json(400, _error_body("invalid_request_error", f"fake: {why}"))
            return
        item = fake._next()
        if item is None and fake._responder is not None and isinstance(body, dict):
            content, stop_reason = fake._responder(body)
            if stop_reason is None:
                stop_reason = "tool_use" if any(b.get("type") == "tool_use" for b in content) else "end_turn"
            item = _Reply(list(content), stop_reason)
        if item is None:
            with fake._lock:
                fake.unexpected.append(record)
            self._json(
                500, _error_body("api_error", "fake: the script has no more replies"), {"x-should-retry": "false"}
            )
            return
        streaming = isinstance(body, dict) and body.get("stream") is True
        model = body.get("model", "claude-test") if isinstance(body, dict) else "claude-test"
        if isinstance(item, _Fault):
            self._json(item.status, _error_body(item.error_type, item.message), item.headers)
        elif isinstance(item, _Reply):
            time.sleep(item.delay)
            if streaming:
                self._sse(_reply_events(item, model))
            else:
                self._json(200, _message(item, model))
        elif isinstance(item, _Drop):
            events = _reply_events(_Reply([text(item.text + " and then some more text")], "end_turn"), model)
            payload = _encode(events)
            cut = payload.index(b"content_block_delta") + 200  # after the first text delta, before the end
            self._sse_partial(payload, cut, item.stall)
        elif isinstance(item, _Malformed):
            events = _reply_events(_Reply([text("Fine")], "end_turn"), model)
            payload = (
                _encode(events[:1])
                + b'event: content_block_start\ndata: {"type": "content_block_start", "index": 0, \n\n'
            )
            payload += _encode(events[1:])
            self._raw_sse(payload)
        elif isinstance(item, _Hang):
            time.sleep(item.seconds)
            self.close_connection = True
        elif isinstance(item, _Trickle):
            late = item.late or []
            stop = "tool_use" if any(b.get("type") == "tool_use" for b in late) else "end_turn"
            events = _reply_events(_Reply(late, stop), model)
            beat = _encode([("ping", {"type": "ping"})])
            self._sse_trickle(_encode(events[:1]), beat, item, _encode(events[1:]) if item.late else b"")
        elif isinstance(item, _StreamError):
            events = _reply_events(_Reply([text("")], "end_turn"), model)[:1]
            events.append(("error", {"type": "error", "error": {"type": item.error_type, "message": item.message}}))
            self._sse(events)

    # ------------------------------------------------------------------ writers

    def _sse(self, events: list[tuple[str, Any]]) -> None:
        self._raw_sse(_encode(events))


def _error_body(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def _usage(reply: _Reply) -> dict[str, int]:
    return {
        "input_tokens": 100,
        "output_tokens": 20,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        **reply.usage,
    }


def _message(reply: _Reply, model: str) -> dict[str, Any]:
    return {
        "id": f"msg_fake_{next(_ids)}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": reply.content,
        "stop_reason": reply.stop_reason,
        "stop_sequence": None,
        "usage": _usage(reply),
    }


def _reply_events(reply: _Reply, model: str) -> list[tuple[str, Any]]:
    usage = _usage(reply)
    start = _message(_Reply([], reply.stop_reason), model)
    start["stop_reason"] = None
    start["usage"] = {**usage, "output_tokens": 1}
    events: list[tuple[str, Any]] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(reply.content):
        if block["type"] == "text":
            events.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
                )
            )
            words = block["text"].split(" ")
            pieces = [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]
            for piece in pieces:
                if piece:
                    events.append(
                        (
                            "content_block_delta",
                            {
                                "type": "content_block_delta",
                                "index": index,
                                "delta": {"type": "text_delta", "text": piece},
                            },
                        )
                    )
        else:
            events.append(
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": index,
                        "content_block": {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}},
                    },
                )
            )
            encoded = json.dumps(block["input"])
            half = len(encoded) // 2
            for part in (encoded[:half], encoded[half:]):
                if part:
                    events.append(
                        (
                            "content_block_delta",
                            {
                                "type": "content_block_delta",
                                "index": index,
                                "delta": {"type": "input_json_delta", "partial_json": part},
                            },
                        )
                    )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def _encode(events: list[tuple[str, Any]]) -> bytes:
    return b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events)
