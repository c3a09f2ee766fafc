"""A fake OpenAI Chat Completions API on 127.0.0.1, for driving the real ``openai`` SDK in tests.

The sibling of ``fake_anthropic.py``, scripted the same way and with the same content helpers
(``text``, ``tool_use``: a reply is written in the Messages shape and sent as Chat Completions
chunks), so one test can script either server:

    with FakeOpenAI() as api:
        api.reply(text("Hello!"), tool_use("form_start", {"form": "travel-claim"}))
        api.reply(tool_use("form_fill", arguments='{"values": {'))   # arguments that are not JSON
        api.reply(text("Hm."), finish_reason="content_filter")
        api.fault(429, times=2)          # rate-limited twice (outlasts max_retries=1)
        api.fault(400, code="context_length_exceeded")
        api.drop_mid_stream("Partial")   # headers and some chunks, then the socket closes
        api.malformed()                  # a chunk whose data is not JSON
        api.stream_error("server_error") # an error object inside a 200 stream
        api.hang(2.0)                    # no answer at all (past the client's timeout)
        api.trickle(60, every=0.5)       # a 200 stream of empty chunks that never ends in time
        model = OpenAIChatModel("gpt-test", api_key="sk-test", base_url=api.base_url, max_retries=1)

Like the real API it is strict about the conversation it is sent, so a test of a broken
request can fail: a ``tool`` message that answers no call of the assistant message before it,
an assistant's call left unanswered, a system prompt or tool list that changed in the middle
of a conversation (one conversation: requests that open with the same first user message),
an empty assistant message, arguments that are not a string. Each is answered 400
``invalid_request_error`` and listed in ``rejected``.

Faults carry ``retry-after-ms: 1`` so the SDK's retries take a millisecond, not seconds.
When the script runs out the server answers 500 with ``x-should-retry: false`` and the
request is listed in ``unexpected``.
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


def tool_use(
    name: str, input: dict[str, Any] | None = None, id: str | None = None, *, arguments: str | None = None
) -> dict[str, Any]:
    """A tool call; ``arguments`` sends that text as the arguments instead of ``input`` as JSON."""
    block = {"type": "tool_use", "id": id or f"call_{next(_ids):04d}", "name": name, "input": input or {}}
    if arguments is not None:
        block["arguments"] = arguments
    return block


@dataclass
class _Reply:
    content: list[dict[str, Any]]
    finish_reason: str
    usage: dict[str, int] = field(default_factory=dict)
    delay: float = 0.0
    indexed: bool = True  # False: tool-call deltas carry no index (as some local servers send them)


@dataclass
class _Fault:
    status: int
    error_type: str
    code: str | None
    message: str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class _StreamError:
    code: str
    message: str


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "invalid_request_error",
    404: "invalid_request_error",
    429: "rate_limit_exceeded",
    500: "server_error",
    503: "server_error",
}
_ERROR_CODES = {401: "invalid_api_key", 404: "model_not_found", 429: "rate_limit_exceeded"}


class FakeOpenAI(LoopbackServer):
    """A scripted Chat Completions server. Use as a context manager, or call ``close()``."""

    def __init__(self, port: int = 0, *, knows_stream_options: bool = True) -> None:
        # False: answer 400 to a request carrying stream_options, as some compatible servers do.
        self.knows_stream_options = knows_stream_options
        super().__init__(_Handler, port=port, name="fake-openai")

    # ------------------------------------------------------------------ scripting

    @property
    def base_url(self) -> str:
        """What ``OPENAI_BASE_URL`` is set to: the server's ``/v1``."""
        return f"{self.url}/v1"

    def reply(
        self,
        *content: dict[str, Any],
        finish_reason: str | None = None,
        usage: dict[str, int] | None = None,
        delay: float = 0.0,
        indexed: bool = True,
    ) -> None:
        """Queue one assistant reply. ``finish_reason`` defaults to tool_calls when it calls tools, else stop.
        ``usage``: ``prompt_tokens``, ``completion_tokens``, ``cached_tokens``."""
        if finish_reason is None:
            finish_reason = "tool_calls" if any(b.get("type") == "tool_use" for b in content) else "stop"
        self._push(_Reply(list(content), finish_reason, dict(usage or {}), delay, indexed))

    def fault(self, status: int, *, times: int = 1, code: str | None = None, message: str | None = None) -> None:
        """Queue ``times`` HTTP error responses with the API's error body."""
        kind = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
        code = code or _ERROR_CODES.get(status)
        for _ in range(times):
            self._push(_Fault(status, kind, code, message or f"fake {code or kind}", {"retry-after-ms": "1"}))

    def drop_mid_stream(self, partial_text: str = "Let me", *, stall: float = 0.0) -> None:
        """A 200 stream that sends some text, then closes before the body ends (after ``stall``
        seconds of silence: past the client's timeout, the client gives up first)."""
        self._push(_Drop(partial_text, stall))

    def malformed(self) -> None:
        self._push(_Malformed())

    def hang(self, seconds: float = 2.0) -> None:
        self._push(_Hang(seconds))

    def trickle(self, seconds: float, every: float = 0.5, late: list[dict[str, Any]] | None = None) -> None:
        """Queue a 200 stream of empty chunks, one every ``every`` seconds for ``seconds``, then the
        reply ``late`` (blocks, as for :meth:`reply`) if given: a stream that never ends in time."""
        self._push(_Trickle(seconds, every, late))

    def stream_error(self, code: str = "server_error", message: str = "The server had an error") -> None:
        """Queue a 200 stream that carries an error object after its first chunk."""
        self._push(_StreamError(code, message))

    # ------------------------------------------------------------------ reading what was sent

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """Parsed bodies of the Chat Completions requests, in order (retries and rejected ones included)."""
        return [r.body for r in self.requests if r.path.split("?")[0].endswith("/chat/completions")]

    # ------------------------------------------------------------------ what the real API refuses

    def problem(self, body: Any) -> str | None:
        """Why the API would refuse this request body, or None."""
        if not isinstance(body, dict) or not isinstance(body.get("model"), str) or not body["model"]:
            return "a request needs a model"
        if not self.knows_stream_options and "stream_options" in body:
            return "Unrecognized request argument supplied: stream_options"
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return "messages must be a non-empty list"
        tools = body.get("tools")
        if tools is not None:
            for tool in tools:
                function = tool.get("function") if isinstance(tool, dict) else None
                if tool.get("type") != "function" or not isinstance(function, dict) or not function.get("name"):
                    return "each tool must be {type: function, function: {name, ...}}"
        system = ""
        waiting: list[str] = []  # call ids of the last assistant message not answered yet
        first_user = None
        for n, message in enumerate(messages):
            role = message.get("role") if isinstance(message, dict) else None
            if role == "system":
                if n != 0:
                    return f"messages[{n}]: a system message only comes first here"
                system = message.get("content") or ""
                continue
            if role == "tool":
                call_id = message.get("tool_call_id")
                if call_id not in waiting:
                    return (
                        f"messages[{n}]: messages with role 'tool' must be a response to a preceding message "
                        f"with 'tool_calls' (no call {call_id!r} is waiting)"
                    )
                waiting.remove(call_id)
                if not isinstance(message.get("content"), str):
                    return f"messages[{n}]: a tool message's content must be a string"
                continue
            if waiting:
                return f"messages[{n}]: an assistant message with 'tool_calls' must be followed by a tool message for each call: {waiting} unanswered"
            if role == "user":
                content = message.get("content")
                if not content:
                    return f"messages[{n}]: a user message needs content"
                if first_user is None:
                    first_user = content if isinstance(content, str) else json.dumps(content)
            elif role == "assistant":
                calls = message.get("tool_calls") or []
                if not message.get("content") and not calls:
                    return f"messages[{n}]: an assistant message needs content or tool_calls"
                for call in calls:
                    function = call.get("function") or {}
                    if not call.get("id") or not isinstance(function.get("name"), str):
                        return f"messages[{n}]: a tool call needs an id and a function name"
                    if not isinstance(function.get("arguments"), str):
                        return f"messages[{n}]: a tool call's arguments must be a string"
                waiting = [c["id"] for c in calls]
            else:
                return f"messages[{n}]: unknown role {role!r}"
        if waiting:
            return f"the last assistant message's tool calls are unanswered: {waiting}"
        # One conversation keeps its system prompt and tools: a request that continues one (it has
        # more than its first user message) is compared with the conversation's first request.
        prefix = (system, json.dumps(tools, sort_keys=True))
        key = first_user or ""
        with self._lock:
            known = self._conversations.get(key)
            continues = sum(1 for m in messages if m.get("role") != "system") > 1
            if known is None or not continues:
                self._conversations[key] = prefix
            elif known[0] != prefix[0]:
                return "the system prompt changed in the middle of a conversation"
            elif known[1] != prefix[1]:
                return "the tool list changed in the middle of a conversation"
        return None


class _Handler(LoopbackHandler):
    server_fake: FakeOpenAI
    REQUEST_ID_HEADER = "x-request-id"

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        record = self._record()
        body = record.body
        fake = self.server_fake
        if not self.path.split("?")[0].endswith("/v1/chat/completions"):
            self._json(404, _error_body("invalid_request_error", None, f"fake: no route {self.path}"))
            return
        why = fake.problem(body)
        if why is not None:
            with fake._lock:
                fake.rejected.append((record, why))
            self._json(400, _error_body("invalid_request_error", None, f"fake: {why}"))
            return
        item = fake._next()
        if item is None:
            with fake._lock:
                fake.unexpected.append(record)
            self._json(
                500,
                _error_body("server_error", None, "fake: the script has no more replies"),
                {"x-should-retry": "false"},
            )
            return
        streaming = body.get("stream") is True
        with_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        model = body.get("model", "gpt-test")
        if isinstance(item, _Fault):
            self._json(item.status, _error_body(item.error_type, item.code, item.message), item.headers)
        elif isinstance(item, _Reply):
            time.sleep(item.delay)
            if streaming:
                self._sse(_chunks(item, model, with_usage))
            else:
                self._json(200, _completion(item, model))
        elif isinstance(item, _Drop):
            chunks = _chunks(_Reply([text(item.text + " and then some more text")], "stop"), model, with_usage)
            payload = _encode(chunks)
            cut = payload.index(b'"content"', payload.index(b"data: ", 10)) + 60
            self._sse_partial(payload, cut, item.stall)
        elif isinstance(item, _Malformed):
            chunks = _chunks(_Reply([text("Fine")], "stop"), model, with_usage)
            payload = _encode(chunks[:1]) + b'data: {"id": "chatcmpl-x", "choices": [{"index": 0, \n\n'
            self._raw_sse(payload + _encode(chunks[1:]))
        elif isinstance(item, _Hang):
            time.sleep(item.seconds)
            self.close_connection = True
        elif isinstance(item, _Trickle):
            late = item.late or []
            finish = "tool_calls" if any(b.get("type") == "tool_use" for b in late) else "stop"
            chunks = _chunks(_Reply(late, finish), model, with_usage)
            beat = _encode([{**chunks[0], "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": None}]}])
            beat = beat[: -len(b"data: [DONE]\n\n")]
            head = _encode(chunks[:1])[: -len(b"data: [DONE]\n\n")]
            self._sse_trickle(head, beat, item, _encode(chunks[1:]) if item.late else b"")
        elif isinstance(item, _StreamError):
            chunks = _chunks(_Reply([text("Let")], "stop"), model, False)[:2]
            chunks.append({"error": {"message": item.message, "type": "server_error", "code": item.code}})
            self._sse(chunks)

    # ------------------------------------------------------------------ writers

    def _sse(self, chunks: list[Any]) -> None:
        self._raw_sse(_encode(chunks))


def _error_body(kind: str, code: str | None, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def _usage(reply: _Reply) -> dict[str, Any]:
    prompt = reply.usage.get("prompt_tokens", 100)
    completion = reply.usage.get("completion_tokens", 20)
    cached = reply.usage.get("cached_tokens", 0)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def _arguments(block: dict[str, Any]) -> str:
    return block["arguments"] if "arguments" in block else json.dumps(block.get("input") or {})


def _completion(reply: _Reply, model: str) -> dict[str, Any]:
    text_ = "".join(b["text"] for b in reply.content if b["type"] == "text")
    calls = [
        {"id": b["id"], "type": "function", "function": {"name": b["name"], "arguments": _arguments(b)}}
        for b in reply.content
        if b["type"] == "tool_use"
    ]
    message: dict[str, Any] = {"role": "assistant", "content": text_ or None}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": f"chatcmpl-fake{next(_ids)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
        "usage": _usage(reply),
    }


def _chunks(reply: _Reply, model: str, with_usage: bool) -> list[dict[str, Any]]:
    base = {"id": f"chatcmpl-fake{next(_ids)}", "object": "chat.completion.chunk", "created": 0, "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    out = [chunk({"role": "assistant", "content": ""})]
    calls = 0
    for block in reply.content:
        if block["type"] == "text":
            words = block["text"].split(" ")
            for i, word in enumerate(words):
                piece = word + (" " if i < len(words) - 1 else "")
                if piece:
                    out.append(chunk({"content": piece}))
        else:
            index = calls
            calls += 1
            first: dict[str, Any] = {
                "id": block["id"],
                "type": "function",
                "function": {"name": block["name"], "arguments": ""},
            }
            if reply.indexed:
                first["index"] = index
            out.append(chunk({"tool_calls": [first]}))
            encoded = _arguments(block)
            half = len(encoded) // 2
            for part in (encoded[:half], encoded[half:]):
                if part:
                    more: dict[str, Any] = {"function": {"arguments": part}}
                    if reply.indexed:
                        more["index"] = index
                    out.append(chunk({"tool_calls": [more]}))
    out.append(chunk({}, reply.finish_reason))
    if with_usage:
        out.append({**base, "choices": [], "usage": _usage(reply)})
    return out


def _encode(chunks: list[Any]) -> bytes:
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


# --------------------------------------------------------------------------- a whole claim, scripted

# What the person types, line by line, in the scripted travel claim below (README, "Other models").
CLAIM_LINES = [
    "I need to claim for a trip to Leeds. I'm Dana Reeve, staff AB1234.",
    "dana@example.com. I went 2 to 4 March 2026 for a client workshop.",
    "By train, ticket TR-99812",
    "Hotel 240, meals 45.50, total 285.50",
    "Yes, send it.",
]


def script_travel_claim(api: Any) -> None:
    """Queue, on either fake (this one or ``FakeAnthropic``: both take the same replies), the replies of
    a model that fills in a travel claim from :data:`CLAIM_LINES` and sends it:
    the opening turn, then two model calls per line (tool calls, then what it says)."""
    api.reply(text("Hello! I can help with your travel claim. Where did you go, and who are you?"))
    api.reply(
        tool_use(
            "form_start",
            {
                "form": "travel-claim",
                "values": {"full_name": "Dana Reeve", "staff_id": "AB1234", "destination": "Leeds"},
                "quotes": {"full_name": "I'm Dana Reeve", "staff_id": "staff AB1234", "destination": "Leeds"},
            },
        )
    )
    api.reply(text("Thanks, Dana. What's your work email, and when and why did you travel?"))
    api.reply(
        tool_use(
            "form_fill",
            {
                "values": {
                    "email": "dana@example.com",
                    "departure_date": "2026-03-02",
                    "return_date": "2026-03-04",
                    "purpose": "Client workshop",
                },
                "quotes": {"email": "dana@example.com", "purpose": "for a client workshop"},
            },
        )
    )
    api.reply(text("How did you travel?"))
    api.reply(
        tool_use("form_fill", {"values": {"mode": "rail"}, "quotes": {"mode": "By train"}}),
        tool_use("form_fill", {"values": {"ticket_reference": "TR-99812"}, "quotes": {"ticket_reference": "TR-99812"}}),
    )
    api.reply(text("And the costs?"))
    api.reply(
        tool_use(
            "form_fill",
            {
                "values": {"accommodation": 240, "meals": 45.5, "total": 285.5},
                "quotes": {"accommodation": "Hotel 240", "meals": "meals 45.50", "total": "total 285.50"},
            },
        )
    )
    api.reply(
        text("Rail to Leeds, 2-4 March 2026, ticket TR-99812; hotel 240, meals 45.50, total 285.50. Send it?"),
        usage={"prompt_tokens": 2400, "completion_tokens": 30, "cached_tokens": 2048},
    )
    api.reply(tool_use("form_submit", {}))
    api.reply(text("All done: your claim is sent."))


def main(argv: list[str] | None = None) -> int:
    """``python3 tests/fake_openai.py --port 11435``: serve the scripted travel claim until stopped."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--port", type=int, default=11435)
    args = parser.parse_args(argv)
    api = FakeOpenAI(port=args.port)
    script_travel_claim(api)
    print(f"serving a scripted travel claim at {api.base_url} (Ctrl-C stops)", flush=True)
    try:
        # Until every scripted reply is taken and every request answered (written out): then at
        # once, so a script that waits for the server to end (the README's) does not wait longer.
        while api.pending or api.answered < len(api.requests):
            time.sleep(0.02)
    except KeyboardInterrupt:
        pass
    finally:
        api.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
