"""The plumbing the loopback fakes of model APIs share (``fake_anthropic.py``, ``fake_openai.py``).

A :class:`LoopbackServer` is real HTTP on 127.0.0.1 (``http.server`` in a thread) with a script of
replies taken in order, and a record of every request. Each fake subclasses it with its API's
scripting calls and its own refusals (``problem``), and :class:`LoopbackHandler` with its routes and
wire formats; what is the same for every API lives here: starting and stopping the server, the
script, recording a request, and writing a JSON answer, a server-sent-event stream, or a stream
cut off mid-way.
"""

from __future__ import annotations

import itertools
import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_ids = itertools.count(1)


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes


# Faults every fake can queue like a reply; each API writes them in its own wire format.
@dataclass
class Drop:
    """Headers and part of the stream, then the connection closes; after ``stall`` seconds of
    silence when given (longer than the client's read timeout: the client gives up first)."""

    text: str
    stall: float = 0.0


@dataclass
class Malformed:
    """A streamed event whose data is not JSON."""


@dataclass
class Hang:
    """No answer at all for ``seconds`` (past the client's timeout), then the connection closes."""

    seconds: float


@dataclass
class Trickle:
    """A 200 stream that starts, then sends only an empty piece every ``every`` seconds for
    ``seconds`` (each one restarts the client's read timeout, so only a deadline on the whole call
    ends it), then ``late`` (a whole reply, in the Messages shape) if given, else nothing more."""

    seconds: float
    every: float
    late: list[dict[str, Any]] | None = None


class LoopbackServer:
    """A scripted HTTP server on 127.0.0.1 in a daemon thread. Use as a context manager, or call
    ``close()``. ``handler``: the fake's :class:`LoopbackHandler` subclass; ``port`` 0 picks a free one."""

    def __init__(self, handler: type[LoopbackHandler], *, port: int = 0, name: str = "loopback") -> None:
        self.requests: list[RecordedRequest] = []
        self.unexpected: list[RecordedRequest] = []  # sent after the script ran out
        self.rejected: list[tuple[RecordedRequest, str]] = []  # refused by ``problem``, with why
        self.answered = 0  # requests whose answer has been written out (see LoopbackHandler.handle_one_request)
        self._conversations: dict[str, tuple[str, str]] = {}  # a conversation's key: (system, tools)
        self._script: deque[Any] = deque()
        self._lock = threading.Lock()
        fake = self

        class Handler(handler):  # type: ignore[valid-type,misc]
            server_fake = fake

        self._server = _QuietServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name=name, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def _push(self, item: Any) -> None:
        with self._lock:
            self._script.append(item)

    def _next(self) -> Any:
        with self._lock:
            return self._script.popleft() if self._script else None

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._script)

    def reset(self) -> None:
        """Forget the script left, the requests and the conversations, as a new server would (the
        tool fuzz plays example after example through one server and one SDK client on it)."""
        with self._lock:
            self._script.clear()
            self._conversations.clear()
            self.requests.clear()
            self.unexpected.clear()
            self.rejected.clear()
            self.answered = 0

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hangs up (the SDK after a dropped stream) is not a test failure


class LoopbackHandler(BaseHTTPRequestHandler):
    """What every fake's request handler does the same way; a subclass writes ``do_POST``."""

    protocol_version = "HTTP/1.1"
    server_fake: Any
    REQUEST_ID_HEADER = "request-id"  # the header the API names its request ids in

    def setup(self) -> None:
        super().setup()
        # Headers and body go out as separate writes; without NODELAY, Nagle plus the
        # client's delayed ACK adds 40 ms to every response.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def handle_one_request(self) -> None:
        super().handle_one_request()
        if self.raw_requestline:  # a request read and answered (not a connection that closed)
            with self.server_fake._lock:
                self.server_fake.answered += 1

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    def _record(self) -> RecordedRequest:
        """Read the request's body (JSON, or None when it is not), and add it to the fake's record."""
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = None
        record = RecordedRequest(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body, raw)
        with self.server_fake._lock:
            self.server_fake.requests.append(record)
        return record

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header(self.REQUEST_ID_HEADER, f"req_fake_{next(_ids)}")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _raw_sse(self, payload: bytes) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("content-length", str(len(payload)))
        self.send_header(self.REQUEST_ID_HEADER, f"req_fake_{next(_ids)}")
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _sse_trickle(self, head: bytes, beat: bytes, item: Trickle, tail: bytes) -> None:
        """A stream with no length: ``head``, then ``beat`` every ``item.every`` seconds until
        ``item.seconds`` have passed, then ``tail``, then the connection closes. A client that
        hangs up meanwhile ends it (the write fails)."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        ends = time.monotonic() + item.seconds
        try:
            self.wfile.write(head)
            self.wfile.flush()
            while time.monotonic() < ends:
                time.sleep(min(item.every, max(0.0, ends - time.monotonic())))
                self.wfile.write(beat)
                self.wfile.flush()
            self.wfile.write(tail)
            self.wfile.flush()
        except OSError:
            pass

    def _sse_partial(self, payload: bytes, cut: int, stall: float = 0.0) -> None:
        """Promise the whole body, send part of it, then close (after ``stall`` seconds of silence):
        a connection dropped, or a stream stalled, mid-reply."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload[:cut])
        self.wfile.flush()
        time.sleep(stall)
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
