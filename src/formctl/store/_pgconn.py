"""PostgreSQL connection strings: recognising one, showing one without its password, and
turning a failure to connect into one line that names the server.

String work, with no import of psycopg at module level (only :func:`connect_options` loads
it, to parse a DSN as libpq will), so the CLI can decide which store it was given (and print
a masked DSN in an error) before anything heavy loads.

Passwords (docs/store-postgres.md, "Passwords"): every text formctl builds from a DSN, or
from a message libpq or psycopg wrote about one, goes through :func:`scrub` first. It
replaces every string of the DSN that could be its password: the user-info after the first
``:`` up to *any* ``@`` (a malformed DSN may have several, or a ``/`` or ``?`` inside the
password), ``password=`` in the query or in the key/value form, each as written and
percent-decoded. It errs on the side of hiding too much. A DSN is also checked here
(:func:`dsn_problem`) before the library sees it, so that a malformed one is reported in
our words rather than in a library message that quotes it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from formctl.errors import StoreError
from formctl.redact import register

SCHEMES = ("postgresql://", "postgres://")

_KV_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:\\.|[^'\\])*'?|\S+)", re.IGNORECASE)
# In free text (and a URI's query), a password= value ends at a space or an &.
_TEXT_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:\\.|[^'\\])*'?|(?!\*\*\*)[^\s&]+)", re.IGNORECASE)
# The key/value form (``host=db dbname=forms``) starts with one of libpq's keywords.
_KV_START = re.compile(
    r"^\s*(host|hostaddr|port|dbname|user|password|passfile|service|sslmode|connect_timeout|options|"
    r"application_name|target_session_attrs)\s*=",
    re.IGNORECASE,
)
_MASK = "***"
# Free text is scrubbed of candidates this long or longer: a one- or two-character "password"
# would turn every such pair of letters into *** (a DSN itself is masked whatever the length,
# and no message of ours quotes a part of a DSN that could hold one).
_SHORTEST = 3


def is_dsn(store: object) -> bool:
    """True when ``--store`` / ``FORMCTL_STORE`` names a PostgreSQL database rather than a folder:
    a ``postgresql://`` or ``postgres://`` URI (any case), or libpq's key/value form
    (``host=db dbname=forms``)."""
    return isinstance(store, str) and (store.lower().startswith(SCHEMES) or bool(_KV_START.match(store)))


def _is_uri(dsn: str) -> bool:
    return dsn.lower().startswith(SCHEMES)


# libpq's keywords whose values are never secret (docs/store-postgres.md, "Passwords"). The value
# of any other keyword is masked: ``password`` and ``sslpassword``, and every keyword libpq does not
# know, which is most often a misspelt ``password`` (``passwrd=``, ``pwd=``, ``?passwd=``).
SAFE_KEYWORDS = frozenset(
    """host hostaddr port dbname user passfile service sslmode connect_timeout options application_name
    fallback_application_name target_session_attrs keepalives keepalives_idle keepalives_interval
    keepalives_count tcp_user_timeout client_encoding sslrootcert sslcert sslkey sslcrl sslcrldir
    sslcompression sslsni sslnegotiation ssl_min_protocol_version ssl_max_protocol_version gssencmode
    gsslib gssdelegation krbsrvname channel_binding require_auth requirepeer replication
    load_balance_hosts""".split()
)
# One ``keyword = value`` of the key/value form, as libpq reads it: a keyword runs to a space or
# an ``=``; a value is in single quotes (backslash escapes; an unclosed quote runs to the end) or
# runs to the next space. A word with no ``=`` after it is a bare word.
_KV_PAIR = re.compile(r"([^\s=]+)\s*=\s*('(?:\\.|[^'\\])*'?|(?:\\.|\S)*)")
_WORD = re.compile(r"\S+")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _kv_hidden(dsn: str) -> list[tuple[int, int]]:
    """The spans of a key/value DSN that may hold a secret: the value of every keyword not in
    :data:`SAFE_KEYWORDS`; every bare word (the rest of an unquoted password that had a space in
    it: ``password=Summer50 Qz7wing``); and a keyword that cannot be one (``Qz7/b=``) or that
    libpq does not know and follows an unquoted secret (``password=Summer50 Qz7=x``), which libpq
    would quote in its complaint."""
    spans: list[tuple[int, int]] = []
    at, after_secret = 0, False
    while at < len(dsn):
        if dsn[at].isspace():
            at += 1
            continue
        match = _KV_PAIR.match(dsn, at)
        if match is None:
            word = _WORD.match(dsn, at)
            assert word is not None  # dsn[at] is not a space
            spans.append(word.span())
            at, after_secret = word.end(), True
            continue
        keyword, value = match.group(1), match.group(2)
        known = keyword.lower() in SAFE_KEYWORDS or keyword.lower() in ("password", "sslpassword")
        hidden = keyword.lower() not in SAFE_KEYWORDS and bool(value)
        if not _IDENTIFIER.fullmatch(keyword) or (after_secret and not known):
            spans.append((match.start(), match.end() if hidden else match.end(1)))  # one span: one secret
        elif hidden:
            spans.append(match.span(2))
        at, after_secret = match.end(), hidden and not value.startswith("'")
    return spans


def _query_hidden(query: str) -> list[str]:
    """The values of a URI query's parameters that are not in :data:`SAFE_KEYWORDS`, as written."""
    out = []
    for pair in query.split("&"):
        key, equals, value = pair.partition("=")
        if equals and value and unquote(key).lower() not in SAFE_KEYWORDS:
            out.append(value)
    return out


def secrets(dsn: str) -> list[str]:
    """Every string in ``dsn`` that could be its password, longest first (as written, and
    percent-decoded). Deliberately generous: a malformed DSN is guessed at every way, and the
    value of any keyword that is not known to be harmless counts."""
    found: set[str] = set()
    if _is_uri(dsn):
        rest = dsn[dsn.index("://") + 3 :]
        colon = rest.find(":")
        if colon >= 0:
            for at in [m.start() for m in re.finditer("@", rest)]:
                if at > colon:
                    found.add(rest[colon + 1 : at])
            if "@" not in rest:  # user:password with the @host forgotten: libpq reads a port
                tail = rest[colon + 1 :].split("/")[0]
                if not tail.isdigit():
                    found.add(tail)
        query = rest.find("?")
        if query >= 0:
            found.update(_query_hidden(rest[query + 1 :].split("#")[0]))
    else:
        for start, end in _kv_hidden(dsn):
            keyword, equals, value = dsn[start:end].partition("=")
            found.update((dsn[start:end], keyword.strip(), value.strip()) if equals else (keyword,))
    for match in _KV_PASSWORD.finditer(dsn):
        found.add(match.group(2))
    for raw in list(found):
        if raw.startswith("'"):
            inner = raw[1:-1] if raw.endswith("'") and len(raw) > 1 else raw[1:]
            found.add(inner)
            found.add(re.sub(r"\\(.)", r"\1", inner))
    for text in list(found):
        try:
            found.add(unquote(text, errors="strict"))
        except UnicodeDecodeError:
            pass
        found.add(unquote(text))
    return sorted((s for s in found if s), key=len, reverse=True)


def scrub(text: str, dsn: str | None) -> str:
    """``text`` with every possible password of ``dsn`` (see :func:`secrets`) replaced by ``***``,
    and any ``password=…`` in it masked too."""
    if dsn:
        # Every place any candidate occurs in the text as given, then masked as one where they
        # overlap: replacing one candidate after another let the first cut into the second
        # (``0'= 9Zq9 '= 9``: masking "'= 9" took the "9" of "9Zq9", which then no longer matched).
        spans = []
        for secret in secrets(dsn):
            if len(secret) < _SHORTEST:
                continue
            at = text.find(secret)
            while at >= 0:
                spans.append((at, at + len(secret)))
                at = text.find(secret, at + 1)
        text = _masked(text, spans)
    return _TEXT_PASSWORD.sub(lambda m: m.group(1) + _MASK, text)


def _masked(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each run of overlapping or touching ``spans`` replaced by one ``***``."""
    out, last, run = [], 0, None
    for start, end in sorted(spans):
        if run is not None and start <= run[1]:
            run = (run[0], max(run[1], end))
            continue
        if run is not None:
            out += [text[last : run[0]], _MASK]
            last = run[1]
        run = (start, end)
    if run is not None:
        out += [text[last : run[0]], _MASK]
        last = run[1]
    return "".join([*out, text[last:]])


def mask_dsn(dsn: str) -> str:
    """``dsn`` with any password replaced by ``***``: the URI's user-info password, and the value
    of every query parameter or key/value keyword that is not known to be harmless (a misspelt
    ``password`` included), and any bare word of the key/value form; the rest exactly as given."""
    if not _is_uri(dsn):
        masked, last = [], 0
        for start, end in _kv_hidden(dsn):
            masked += [dsn[last:start], _MASK]
            last = end
        return scrub("".join([*masked, dsn[last:]]), dsn)
    head = dsn.index("://") + 3
    rest = dsn[head:]
    query = rest.find("?")
    at = rest.rfind("@", 0, query if query >= 0 else len(rest))
    if at >= 0 and ":" in rest[:at]:
        rest = f"{rest[: rest.index(':')]}:{_MASK}{rest[at:]}"
    elif "@" not in rest and re.match(r"[^/?\[]*:(?!\d*(/|\?|$))", rest):  # no @: a "port" that is no number
        rest = f"{rest[: rest.index(':')]}:{_MASK}"
    query = rest.find("?")
    if query >= 0:
        rest = rest[: query + 1] + "&".join(_masked_pair(pair) for pair in rest[query + 1 :].split("&"))
    return scrub(dsn[:head] + rest, dsn)


def _masked_pair(pair: str) -> str:
    key, equals, value = pair.partition("=")
    return f"{key}={_MASK}" if equals and value and unquote(key).lower() not in SAFE_KEYWORDS else pair


def _parts(dsn: str) -> tuple[str, dict[str, str]]:
    """The host list of a URI (after its last user-info ``@``, before the path) and its query."""
    rest = dsn[dsn.index("://") + 3 :]
    query_at = rest.find("?")
    query_text = rest[query_at + 1 :] if query_at >= 0 else ""
    rest = rest[:query_at] if query_at >= 0 else rest
    rest = rest.rpartition("@")[2]
    slash = rest.find("/")
    hosts = rest[:slash] if slash >= 0 else rest
    query: dict[str, str] = {}
    for pair in query_text.split("&"):
        key, _, value = pair.partition("=")
        if key:
            query[unquote(key)] = unquote(value)
    return hosts, query


def _first_host(hosts: str) -> tuple[str | None, str | None]:
    first = hosts.split(",")[0]
    if first.startswith("["):  # [::1]:5432
        host, _, rest = first[1:].partition("]")
        port = rest.lstrip(":") or None
    else:
        host, _, port_text = first.partition(":")
        port = port_text or None
    return (unquote(host) if host else None), port


def dsn_problem(dsn: str) -> str | None:
    problem = _problem(dsn)
    return None if problem is None else scrub(problem, dsn)


def _problem(dsn: str) -> str | None:
    """Why ``dsn`` cannot be a connection string, in our words (None when it looks usable).

    Catches what libpq would otherwise report by quoting the DSN, password and all: an
    upper-case scheme, a bad ``%`` escape, an unclosed ``[`` around an IPv6 host, a port that
    is not a number."""
    if not _is_uri(dsn):
        return None
    scheme = dsn[: dsn.index("://")]
    if scheme not in ("postgresql", "postgres"):
        return f"the scheme must be written in lower case (postgresql://, not {scheme}://)"
    if re.search(r"%(?![0-9A-Fa-f]{2})", dsn):
        return "a % that is not followed by two hex digits (write a % in a password as %25)"
    hosts, query = _parts(dsn)
    for entry in hosts.split(","):
        if entry.startswith("[") and "]" not in entry:
            return "an IPv6 host opened with [ is not closed with ]"
        _, port = _first_host(entry)
        if port is not None and not port.isdigit():
            return "the port after the host is not a number"  # never quoted: it may be a password
    port = query.get("port")
    if port is not None and not all(p.isdigit() for p in port.split(",")):
        return "the port= parameter is not a number"
    return None


def describe_server(dsn: str) -> str:
    """Where ``dsn`` connects, for people: ``db.example.com:5432`` or ``the socket in /run/pg (port 5432)``.

    Falls back on ``PGHOST``/``PGPORT`` as libpq does, and names no password."""
    host = port = service = None
    if _is_uri(dsn):
        hosts, query = _parts(dsn)
        if hosts:
            host, port = _first_host(hosts)
        host = query.get("host", host) or None
        port = query.get("port", port) or None
        service = query.get("service")
    else:
        for match in re.finditer(r"\b(host|port|service)\s*=\s*('(?:\\.|[^'\\])*'|\S+)", dsn):
            key, value = match.group(1), match.group(2).strip("'")
            host, port, service = (
                value if key == "host" else host,
                value if key == "port" else port,
                value if key == "service" else service,
            )
    named = _service(service or os.environ.get("PGSERVICE"))  # what the DSN leaves out, as libpq reads it
    host = host or named.get("host") or os.environ.get("PGHOST") or None
    port = port or named.get("port") or os.environ.get("PGPORT") or "5432"
    if host is None:
        where = f"the local PostgreSQL socket (port {port})"
    elif host.startswith("/"):
        where = f"the socket in {host} (port {port})"
    else:
        where = f"{host}:{port}"
    return scrub(where, dsn)


def _service(name: str | None) -> dict[str, str]:
    """The settings of connection service ``name``, from the first service file that has it
    (``PGSERVICEFILE`` or ``~/.pg_service.conf``, then ``PGSYSCONFDIR/pg_service.conf``), as
    libpq reads them; ``{}`` when there is none."""
    if not name:
        return {}
    import configparser

    files = [os.environ.get("PGSERVICEFILE") or os.path.expanduser("~/.pg_service.conf")]
    if os.environ.get("PGSYSCONFDIR"):
        files.append(os.path.join(os.environ["PGSYSCONFDIR"], "pg_service.conf"))
    for path in files:
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, OSError, UnicodeDecodeError):
            continue
        if parser.has_section(name):
            return {key: value.strip() for key, value in parser.items(name)}
    return {}


def connect_failure(dsn: str, exc: BaseException) -> str:
    """One line for a connection that could not be made: where, and the server's reason."""
    reason = _reason(exc, dsn)
    if reason.startswith(("Connection refused", "No such file or directory")):
        reason = f"no server is running there ({reason[0].lower()}{reason[1:-1]})."
    return f"Cannot connect to the PostgreSQL store at {describe_server(dsn)}: {reason}"


def _reason(exc: BaseException, dsn: str | None = None) -> str:
    """The useful part of libpq's message, without any connection string: the server's reason
    after ``FATAL:``, else what follows the last ``failed:`` (``Connection refused``); scrubbed
    of ``dsn``'s password."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    reason = lines[0] if lines else type(exc).__name__
    for line in lines:
        if "FATAL:" in line:
            reason = line.split("FATAL:", 1)[1].strip()
            break
    else:
        for line in lines:
            if "failed:" in line and line.rsplit("failed:", 1)[1].strip():
                reason = line.rsplit("failed:", 1)[1].strip()
                break
    reason = scrub(reason, dsn).rstrip(".?! ")
    return reason + "."


def connect_options(dsn: str, *, connect_timeout: int) -> dict[str, Any]:
    """The options to connect to ``dsn`` with, after checking it in our words: a malformed DSN
    is a :class:`StoreError` naming it masked, before libpq sees it (its messages quote the
    whole string, password and all). Every store that connects asks here first."""
    from psycopg import Error
    from psycopg.conninfo import conninfo_to_dict

    problem = dsn_problem(dsn)
    if problem is not None:
        raise StoreError(f"Not a valid PostgreSQL connection string ({mask_dsn(dsn)}): {problem}.")
    try:
        given = conninfo_to_dict(dsn)
    except (Error, ValueError) as exc:  # ValueError: a NUL in the string
        raise StoreError(f"Not a valid PostgreSQL connection string ({mask_dsn(dsn)}): {_reason(exc, dsn)}") from None
    register(*secrets(dsn))  # from now on every line and file formctl writes leaves them out (formctl.redact)
    options: dict[str, Any] = {}
    if "connect_timeout" not in given and "PGCONNECT_TIMEOUT" not in os.environ:
        options["connect_timeout"] = connect_timeout
    if "application_name" not in given and "PGAPPNAME" not in os.environ:
        options["application_name"] = "formctl"
    for key, value in KEEPALIVES.items():
        if key not in given:
            options[key] = value
    if "PGOPTIONS" not in os.environ:  # the server ends a statement that runs past the limit itself
        limit = f"-c statement_timeout={int(statement_seconds() * 1000)}"
        options["options"] = f"{given['options']} {limit}" if given.get("options") else limit
    return options


# How a connection notices a server that went away while it was idle or mid-statement (a host
# powered off, a network partition): TCP keepalives from 10 s of silence, every 5 s, 3 missed
# ends it (25 s); data not acknowledged for 20 s ends it too (tcp_user_timeout, Linux).
KEEPALIVES = {
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
    "tcp_user_timeout": 20_000,
}

STATEMENT_SECONDS = 15.0
"""The longest one statement may run (docs/store-postgres.md, "Deadlines"). The server enforces
it (``statement_timeout``) while it runs; a server that cannot (frozen: its processes stopped, as
in a partition the kernel still answers for) is given up on by the client a second later, which
closes the connection. ``FORMCTL_PG_STATEMENT_TIMEOUT`` changes it."""


def statement_seconds() -> float:
    """:data:`STATEMENT_SECONDS`, or ``FORMCTL_PG_STATEMENT_TIMEOUT`` when it is a number of seconds above 0."""
    try:
        seconds = float(os.environ.get("FORMCTL_PG_STATEMENT_TIMEOUT", STATEMENT_SECONDS))
    except ValueError:
        return STATEMENT_SECONDS
    return seconds if 0 < seconds < 86_400 else STATEMENT_SECONDS


def connect(dsn: str, *, connect_timeout: int, on_wait: Callable[[], None] | None = None) -> Any:
    """A psycopg connection to ``dsn`` in autocommit, with formctl's limits (:func:`connect_options`)
    and a deadline on every statement (:class:`~formctl.store._pgwatch.Bounded`): ``on_wait`` hears
    once when a statement has waited a second for the server (the chat's "waiting for the
    database…" line). Raises psycopg's own errors; the caller says them in its words."""
    from formctl.store._pgwatch import bounded_connection

    options = connect_options(dsn, connect_timeout=connect_timeout)
    return bounded_connection(dsn, options, limit=statement_seconds() + 1.0, on_wait=on_wait)


def require_psycopg() -> None:
    """Raise :class:`StoreError` in one line when PostgreSQL support (psycopg) is not installed.
    Imports psycopg only when asked, so this module stays free of it."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise StoreError(
            "PostgreSQL support is not installed: pip install 'formctl[postgres]' (it adds psycopg)."
        ) from None
