"""What the adapters over a provider's SDK share: the network settings they honour, how their
client is built and let go (:class:`SdkClient`, with a :class:`Provider` table for each SDK),
and how they recognise a failure the SDK let through untyped.

Both SDKs (``anthropic``, ``openai``) are built the same way on the same HTTP library, so a
dropped connection or a malformed body looks the same from either; the provider-specific
lines a person reads stay in each adapter.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import queue
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, Generic, Protocol, TypedDict, TypeVar

from formctl.errors import KeyRejectedError, ModelCancelledError, ModelError, ModelTimeoutError
from formctl.json_types import JsonObject, JsonValue

if TYPE_CHECKING:
    import ssl

    from formctl.agent.models.base import TextSink

__all__ = [
    "DEFAULT_MODEL_TIMEOUT",
    "Connection",
    "Deadline",
    "Provider",
    "SdkClient",
    "SdkModel",
    "SdkOptions",
    "Settings",
    "abandon_client",
    "connection_lost",
    "failed_call",
    "count_request",
    "is_malformed",
    "model_timeout",
    "within_deadline",
    "is_transport_error",
    "quiet_debug_logs",
    "scrub",
    "sendable",
    "ssl_context",
    "tail",
    "trust_env",
    "unreachable_because",
]

# A surrogate code point on its own (a str holds a valid pair as one code point): UTF-8 cannot
# encode it, and both SDKs send the body as UTF-8, so one lone surrogate anywhere in the history
# (a terminal's undecodable byte in what the person typed, a model's stray "\udc80" escape)
# would fail that request and every later one of the conversation.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def sendable(value: JsonValue, _depth: int = 0) -> JsonValue:
    """``value`` (a string, or JSON data) with every lone surrogate in its strings as U+FFFD.

    Data nested deeper than 200 levels is left as it is (no conversation nests that deep; the
    bound keeps a runaway value from reaching the interpreter's recursion limit)."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value) if _LONE_SURROGATE.search(value) else value
    if _depth > 200:
        return value
    if isinstance(value, dict):
        return {sendable(k, _depth + 1): sendable(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [sendable(v, _depth + 1) for v in value]
    return value


def trust_env() -> bool:
    """Proxy and CA variables (HTTPS_PROXY, SSL_CERT_FILE, ...) apply only when FORMCTL_TRUST_ENV=1.

    Off by default so that nothing but the provider's key and base URL variables and
    FORMCTL_* changes where a conversation goes; a network that needs a proxy or its own CA
    opts in.
    """
    return os.environ.get("FORMCTL_TRUST_ENV", "").strip().lower() in ("1", "true", "yes", "on")


_contexts: dict[tuple[object, ...], ssl.SSLContext] = {}
_contexts_lock = threading.Lock()


def ssl_context(client_class: type, trust_env: bool) -> ssl.SSLContext | None:
    """The TLS context an SDK client (``client_class``: ``anthropic.DefaultHttpxClient``,
    ``openai.DefaultHttpxClient``) would build for itself, built once per process and shared.

    Left to itself, every client builds its own default context, and reading the trusted
    certificates into it (``load_verify_locations``) costs ~20 ms: paid again for every model
    a host makes, and by every ``formctl run`` before its first turn. Here the context comes
    from the SDK's own HTTP library (httpx2, or httpx for older SDKs), by its own
    ``create_ssl_context(verify=True, trust_env=...)``, so it trusts exactly what the client
    would have: the same bundle or system store, and ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` when
    ``trust_env`` lets the library read them (their values are part of the cache key, so
    changing one builds a new context). The client is then given it as ``verify=``. Sharing one
    context between clients is what the HTTP libraries recommend; verification and hostname
    checks stay on. None when the library cannot be found: the client then builds its own.
    (docs/startup.md, "One TLS context per process".)
    """
    library = next(
        (b.__module__.split(".")[0] for b in client_class.__mro__ if b.__module__.split(".")[0] in ("httpx2", "httpx")),
        None,
    )
    if library is None:
        return None
    env = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")) if trust_env else ()
    key = (library, trust_env, *env)
    with _contexts_lock:
        context = _contexts.get(key)
        if context is None:
            create = getattr(import_module(library), "create_ssl_context", None)
            if create is None:
                return None
            context = _contexts[key] = create(verify=True, trust_env=trust_env)
        return context


def quiet_debug_logs(variable: str, sdk_logger: str) -> None:
    """Keep the SDK's and its HTTP library's loggers at WARNING when ``variable`` (``ANTHROPIC_LOG``,
    ``OPENAI_LOG``) is set. The SDK turns debug logging on from it at import, and a debug log of a
    request is exactly where a key or a person's answers could leak. Call it after the import."""
    if os.environ.get(variable):
        for name in (sdk_logger, "httpx2", "httpx"):
            logging.getLogger(name).setLevel(logging.WARNING)


def scrub(text: str, key: str) -> str:
    """``text`` on one line, with ``key`` written ``[key]`` wherever it appears (an SDK's error may
    quote a header or a URL). A key under 8 characters is left alone: replacing it would garble
    the line, and no provider issues one that short."""
    line = " ".join(text.split())
    return line.replace(key, "[key]") if key and len(key) >= 8 else line


def tail(detail: str) -> str:
    """``": detail"`` on one line, or ``"."`` when there is no detail (the end of an error line)."""
    detail = " ".join(str(detail).split())
    return f": {detail}" if detail else "."


def is_transport_error(exc: BaseException) -> bool:
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


def connection_lost(exc: BaseException, sdk: ModuleType) -> bool:
    """The connection failed, closed or timed out, however the SDK (the ``anthropic`` or ``openai``
    module) reports it: as its own ``APIConnectionError`` (``APITimeoutError`` is one), or as the
    HTTP library's error let through untyped. SDK releases differ in which of these a stream cut
    after its first bytes raises, so an adapter decides from *when* it happened (before the
    reply began: the server could not be reached; after: the reply was cut off), not from the
    exception's class."""
    return isinstance(exc, sdk.APIConnectionError) or is_transport_error(exc)


def unreachable_because(exc: BaseException) -> str:
    """``": cause"`` for an SDK's ``APIConnectionError`` (what the HTTP library said), or ""."""
    cause = exc.__cause__ or exc.__context__
    return f": {cause}" if cause is not None and str(cause) else ""


def failed_call(exc: BaseException) -> str:
    """``"(ClassName: first line)"``: an error no other line names, as the end of "... call failed"."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"({type(exc).__name__}{': ' + text if text else ''})"


def is_malformed(exc: BaseException) -> bool:
    """A body that does not parse: bad JSON in an event, a field the SDK cannot read, events out of order."""
    try:
        from pydantic import ValidationError
    except ImportError:  # pragma: no cover - pydantic is a dependency
        return isinstance(exc, (ValueError, KeyError, IndexError)) and not isinstance(exc, UnicodeError)
    if isinstance(exc, (ValueError, ValidationError)) and not isinstance(exc, UnicodeError):
        return True
    if isinstance(exc, (KeyError, IndexError)):
        return True
    return isinstance(exc, RuntimeError) and "Unexpected event order" in str(exc)


# ---------------------------------------------------------------------------- one call's deadline

# The longest one model call may take, streaming and the SDK's retries included, unless
# ``--model-timeout`` or FORMCTL_MODEL_TIMEOUT says otherwise. The SDK's own timeout bounds each
# read and restarts with every chunk, so a server that trickles empty chunks would hold a chat
# for ever without this. Two minutes is several times what a hosted model takes for a
# 1,024-token reply; a slow local model may need more (docs/models.md, "Deadlines").
DEFAULT_MODEL_TIMEOUT = 120.0
# How often the caller's wait looks at Ctrl-C and the deadline: well under the second a person
# waits for the prompt to come back.
_TICK = 0.05

T = TypeVar("T")
C = TypeVar("C")  # an SDK's client class: anthropic.Anthropic, openai.OpenAI


class Closable(Protocol):
    """What is let go of by closing it: an SDK's HTTP client, a reply's stream."""

    def close(self) -> object: ...


def model_timeout(given: float | None = None) -> float:
    """The deadline of one model call in seconds: ``given``, else ``FORMCTL_MODEL_TIMEOUT``, else
    :data:`DEFAULT_MODEL_TIMEOUT`. Anything but a number of seconds above 0 is one line."""
    where, value, shown = "--model-timeout", given, repr(given)
    if value is None:
        text = os.environ.get("FORMCTL_MODEL_TIMEOUT", "").strip()
        if not text:
            return DEFAULT_MODEL_TIMEOUT
        where, shown = "FORMCTL_MODEL_TIMEOUT", repr(text)
        try:
            value = float(text)
        except ValueError:
            value = math.nan
    if isinstance(value, bool) or not (isinstance(value, (int, float)) and 0 < value < math.inf):
        raise ModelError(f"{where} must be a number of seconds above 0, got {shown}.")
    return float(value)


# The HTTP requests the call running in this thread has sent (its retries included): the HTTP
# client's request hook adds one each time; :func:`within_deadline` reads it.
_sent: ContextVar[list[int] | None] = ContextVar("formctl_model_requests", default=None)


def count_request(request: object) -> None:
    """The HTTP client's ``request`` event hook: one more request of the call under way."""
    counter = _sent.get()
    if counter is not None:
        counter[0] += 1


def abandon_client(http: Closable | None) -> None:
    """Close ``http`` (an SDK client's HTTP client, whose call was abandoned) in a thread of its
    own: closing waits for the request still in flight, and the person must not. Its connection
    closes and the call's thread ends; the adapter builds a new client for the next call."""
    if http is not None:
        threading.Thread(target=_close_quietly, args=(http,), name="formctl-close-client", daemon=True).start()


def _close_quietly(http: Closable) -> None:
    try:
        http.close()
    except Exception:  # an abandoned call's client: nothing is waiting for it
        pass


@dataclass(frozen=True, slots=True)
class Deadline:
    """How one call may end early: ``seconds`` (the deadline), ``stop`` (set when the caller no
    longer wants the reply: Ctrl-C), ``abandon`` (close what the call holds, so its thread ends
    soon; called from the waiting thread) and ``late`` (the line said when the deadline passes)."""

    seconds: float
    stop: threading.Event | None
    abandon: Callable[[], None]
    late: str

    @classmethod
    def of_call(cls, seconds: float, who: str, stop: threading.Event | None, abandon: Callable[[], None]) -> Deadline:
        """The deadline of one model call to ``who`` ("The Anthropic API", "The model server at …")."""
        late = (
            f"{who} did not finish its reply within {seconds:g}s (--model-timeout); nothing from it was applied. "
            "Send again."
        )
        return cls(seconds, stop, abandon, late)


def within_deadline(work: Callable[[Callable[[str], None]], T], deadline: Deadline, on_text: TextSink | None) -> T:
    """``work(push)`` run in a thread of its own, its text (what it ``push``es) handed to
    ``on_text`` in this thread, and its result returned, unless the deadline passes first
    (:class:`ModelTimeoutError` with ``deadline.late``) or ``deadline.stop`` is set
    (:class:`ModelCancelledError`). Then, and on a Ctrl-C in this thread, the call is abandoned:
    ``deadline.abandon()`` is called, nothing it pushes later is shown and its result, if one
    comes, is dropped, so nothing from it can be applied. The error or reply carries how many
    HTTP requests the call sent (``attempts``)."""
    pieces: queue.SimpleQueue[str | None] = queue.SimpleQueue()  # None: the work is done
    outcome: list[T | BaseException] = []
    sent = [0]

    def run() -> None:
        _sent.set(sent)
        try:
            outcome.append(work(pieces.put))
        except BaseException as exc:  # handed to the waiting thread
            outcome.append(exc)
        finally:
            pieces.put(None)

    threading.Thread(target=run, name="formctl-model-call", daemon=True).start()
    ends = time.monotonic() + deadline.seconds
    finished = False
    try:
        while not finished:
            _check(deadline, ends, sent[0])
            try:
                piece = pieces.get(timeout=max(0.0, min(_TICK, ends - time.monotonic())))
            except queue.Empty:
                continue
            finished = piece is None
            if piece is not None and on_text is not None:
                on_text(piece)
    finally:
        if not finished:
            deadline.abandon()
    result = outcome[0]
    if isinstance(result, BaseException):
        if isinstance(result, ModelError):
            result.attempts = sent[0]
        raise result
    if hasattr(result, "attempts"):
        result.attempts = sent[0]
    return result


def _check(deadline: Deadline, ends: float, sent: int) -> None:
    """Raise when the caller has stopped waiting or the deadline has passed."""
    error: ModelError | None = None
    if deadline.stop is not None and deadline.stop.is_set():
        error = ModelCancelledError("Stopped: the model's reply was abandoned; nothing from it was applied.")
    elif time.monotonic() >= ends:
        error = ModelTimeoutError(deadline.late)
    if error is not None:
        error.attempts = sent
        raise error


# ---------------------------------------------------------------------------- one adapter's client


@dataclass(frozen=True, slots=True)
class Connection:
    """Where an adapter's calls go and how long they may take."""

    base_url: str
    max_retries: int
    timeout: float  # each read (the SDK's own timeout, restarted by every chunk)
    deadline: float  # the whole call, retries included (see model_timeout)

    @classmethod
    def of(cls, base_url: str, max_retries: int, timeout: float, deadline: float | None) -> Connection:
        """``deadline`` from ``--model-timeout`` or the environment; no read may outlast it."""
        whole = model_timeout(deadline)
        return cls(base_url, max_retries, min(timeout, whole), whole)

    @property
    def retried(self) -> str:
        """``" after 2 retries"`` (the middle of a line about a failure the SDK retried), or ""."""
        if not self.max_retries:
            return ""
        return f" after {self.max_retries} retr{'y' if self.max_retries == 1 else 'ies'}"


class SdkOptions(TypedDict, total=False):
    """The keywords an SDK adapter (``AnthropicModel``, ``OpenAIChatModel``) takes after the model's
    name: the key and the base URL (else the provider's environment variables), the SDK's retries
    and read timeout, the reply's token limit, and the whole call's deadline (:func:`model_timeout`)."""

    api_key: str | None
    base_url: str | None
    max_retries: int
    timeout: float
    max_tokens: int
    deadline: float | None


@dataclass(frozen=True, slots=True)
class Settings:
    """An adapter's :class:`SdkOptions` with their defaults and the environment applied."""

    base_url: str
    api_key: str
    connection: Connection
    max_tokens: int

    @classmethod
    def of(cls, options: SdkOptions, provider: Provider) -> Settings:
        """``options`` as ``provider``'s adapter reads them; a keyword it does not take is a TypeError,
        as it would be for a parameter of its own."""
        unknown = sorted(set(options) - set(SdkOptions.__annotations__))
        if unknown:
            raise TypeError(f"unexpected keyword argument {unknown[0]!r}")
        base_url = options.get("base_url") or os.environ.get(provider.url_variable, "").strip() or provider.default_url
        if provider.strip_slash:
            base_url = base_url.rstrip("/")
        given = options.get("api_key")
        key = given if given is not None else os.environ.get(provider.key_variable, "").strip()
        timeout = options.get("timeout", 60.0)
        connection = Connection.of(base_url, options.get("max_retries", 2), timeout, options.get("deadline"))
        return cls(base_url, key, connection, options.get("max_tokens", 1024))


class SdkModel:
    """What both SDK adapters keep of their options: the model, where it is served, the most tokens
    a reply may take, and the connection's retries and limits (see :class:`Settings`)."""

    model: str
    name: str
    base_url: str
    max_tokens: int
    max_retries: int
    timeout: float
    deadline: float

    def _settle(self, model: str, options: SdkOptions, provider: Provider) -> Settings:
        """``options`` read as ``provider``'s adapter reads them and kept here; the settings, for
        the adapter's client."""
        self.model = self.name = model
        settings = Settings.of(options, provider)
        connection = settings.connection
        self.base_url, self.max_tokens = settings.base_url, settings.max_tokens
        self.max_retries, self.timeout, self.deadline = connection.max_retries, connection.timeout, connection.deadline
        return settings

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"


@dataclass(frozen=True, slots=True)
class Provider:
    """What tells one SDK from another where an adapter builds its client and maps its errors."""

    module: str  # the SDK's import name: "anthropic"
    client_class: str  # its client: "Anthropic"
    label: str  # as "Could not set up the {label} client" names it
    log_variable: str  # the SDK's debug-log switch (see quiet_debug_logs)
    no_key: str  # the line when no key is set
    not_installed: str  # the line when the SDK cannot be imported ({exc}: why)
    options: Callable[[ModuleType], JsonObject]  # more arguments for the client, from the SDK module
    key_rejected: Callable[[BaseException], bool]  # the key itself refused: a chat stops
    service: Callable[[str], Service]  # how a line names the service at a base URL
    key_variable: str  # where the key is read from when none is given: "ANTHROPIC_API_KEY"
    url_variable: str  # where the base URL is read from: "ANTHROPIC_BASE_URL"
    default_url: str  # the provider's own API
    strip_slash: bool = False  # the base URL is kept without a trailing "/" (its paths are appended)


@dataclass(frozen=True, slots=True)
class Service:
    """How a line about a failed call names where it went (see :meth:`SdkClient.explain`)."""

    name: str  # "the Anthropic API", "the model server at http://…"
    reach: str  # where a connection could not be made: "the Anthropic API at https://…"
    check: str  # what the person is asked to check then: "the connection"

    @property
    def who(self) -> str:
        """The name at the start of a line: "The Anthropic API"."""
        return self.name[0].upper() + self.name[1:]


class SdkClient(Generic[C]):
    """One adapter's SDK client: built on first use (the SDK imported then), let go when a call
    is abandoned, holding the key (which it scrubs from every line it raises), and turning what
    the SDK raises into one :class:`ModelError` line (:meth:`explain`; an API's own refusals
    through the adapter's ``api_error``)."""

    def __init__(
        self,
        provider: Provider,
        api_key: str,
        connection: Connection,
        api_error: Callable[[BaseException], str | None],
    ) -> None:
        self.provider = provider
        self.connection = connection
        self.service = provider.service(connection.base_url)  # how a line names where calls go
        self.__api_key = api_key
        self._api_error = api_error
        self._client: C | None = None
        self._http: Closable | None = None  # the client's HTTP client, closed to abandon a call (see abandon)

    def __repr__(self) -> str:
        return f"SdkClient({self.provider.module!r}, base_url={self.connection.base_url!r})"

    def call(self, work: Callable[[C, TextSink], T], stop: threading.Event | None, on_text: TextSink | None) -> T:
        """``work(client, push)`` within the connection's deadline (see :func:`within_deadline`)."""
        client = self.get()
        deadline = Deadline.of_call(self.connection.deadline, self.service.who, stop, self.abandon)
        return within_deadline(lambda push: work(client, push), deadline, on_text)

    def get(self) -> C:
        """The SDK's client, built on first use and again after a call was abandoned."""
        if self._client is not None:
            return self._client
        provider = self.provider
        if not self.__api_key:
            raise ModelError(provider.no_key)
        try:
            sdk = import_module(provider.module)
        except ImportError as exc:
            raise ModelError(provider.not_installed.format(exc=exc)) from None
        quiet_debug_logs(provider.log_variable, provider.module)
        options = provider.options(sdk)
        try:
            http = self._http_client(sdk)
            client: C = getattr(sdk, provider.client_class)(
                api_key=self.__api_key,
                base_url=self.connection.base_url,
                max_retries=self.connection.max_retries,
                timeout=self.connection.timeout,
                http_client=http,
                **options,
            )
        except Exception as exc:
            raise ModelError(self.scrub(f"Could not set up the {provider.label} client: {exc}")) from None
        self._client, self._http = client, http
        return client

    def _http_client(self, sdk: ModuleType) -> Closable:
        """The SDK's HTTP client: the process's TLS context, proxies only when trusted, requests counted."""
        trust = trust_env()
        network: JsonObject = {"trust_env": trust, "timeout": self.connection.timeout}
        context = ssl_context(sdk.DefaultHttpxClient, trust)  # one per process (see ssl_context)
        if context is not None:
            network["verify"] = context
        http: Closable = sdk.DefaultHttpxClient(**network, event_hooks={"request": [count_request]})
        return http

    def abandon(self) -> None:
        """Let go of the client under a call that is no longer wanted (see :func:`abandon_client`)."""
        http, self._client, self._http = self._http, None, None
        abandon_client(http)

    @contextlib.contextmanager
    def errors(self, *, mid_reply: bool = False) -> Iterator[None]:
        """Turn whatever the SDK raises into one :class:`ModelError` line (the key scrubbed from it).

        ``mid_reply``: the stream had begun, so a lost connection is a reply cut off, not a
        server that cannot be reached."""
        try:
            yield
        except ModelError:
            raise
        except Exception as exc:
            line = self.scrub(self.explain(exc, mid_reply))
            if self.provider.key_rejected(exc):
                raise KeyRejectedError(line) from None
            raise ModelError(line) from None

    def explain(self, exc: BaseException, mid_reply: bool = False) -> str:
        """One line for a person: what went wrong and what to do about it. Both SDKs come from one
        code generator and raise alike, so what is not the API's own refusal (the adapter's
        ``api_error`` words that) is worded here: a reply cut off, a timeout, a server out of
        reach, a malformed reply, anything else."""
        sdk = import_module(self.provider.module)
        service, retried = self.service, self.connection.retried
        if mid_reply and connection_lost(exc, sdk):  # whatever this SDK release calls it (see connection_lost)
            return (
                f"The connection to {service.name} dropped mid-reply; nothing from that reply was applied. Send again."
            )
        line = self._api_error(exc)
        if line is not None:
            return line
        if isinstance(exc, sdk.APITimeoutError):
            return f"{service.who} did not answer within {self.connection.timeout:g}s{retried}. Send again."
        if isinstance(exc, sdk.APIConnectionError):
            why = unreachable_because(exc)
            return f"Could not reach {service.reach}{why}. Check {service.check}, then send again."
        if isinstance(exc, (sdk.APIResponseValidationError, json.JSONDecodeError)) or is_malformed(exc):
            return f"{service.who} sent a malformed reply; nothing from it was applied. Send again."
        if is_transport_error(exc):  # the HTTP library's own error, before the reply began
            return f"Could not reach {service.reach}: {exc}. Check {service.check}, then send again."
        return f"{service.who} call failed {failed_call(exc)}."

    def each(self, stream: Iterator[T]) -> Iterator[T]:
        """Each event of a reply's stream, as it arrives; a failure while reading one is mapped as
        :meth:`errors` maps one mid-reply. What the caller does with an event (show its text) is
        outside that mapping: an error of its own propagates as it is."""
        while True:
            with self.errors(mid_reply=True):
                event = next(stream, None)
            if event is None:
                return
            yield event

    def scrub(self, text: str) -> str:
        """``text`` on one line without the key (see :func:`scrub`)."""
        return scrub(text, self.__api_key)
