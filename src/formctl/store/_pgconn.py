"""PostgreSQL connection strings: recognising one, showing one without its password, and
turning a failure to connect into one line that names the server.

Pure string work, with no import of psycopg, so the CLI can decide which store it was given
(and print a masked DSN in an error) before anything heavy loads.
"""

from __future__ import annotations

import os
import re
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

SCHEMES = ("postgresql://", "postgres://")

_KV_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:\\.|[^'\\])*'|\S+)", re.IGNORECASE)


def is_dsn(store: object) -> bool:
    """True when ``--store`` / ``FORMCTL_STORE`` names a PostgreSQL database rather than a folder."""
    return isinstance(store, str) and store.lower().startswith(SCHEMES)


def mask_dsn(dsn: str) -> str:
    """``dsn`` with any password replaced by ``***`` (URI user-info, a ``password=`` query
    parameter, or a ``password=`` key in the key/value form)."""
    if not is_dsn(dsn):
        return _KV_PASSWORD.sub(lambda m: m.group(1) + "***", dsn)
    try:
        parts = urlsplit(dsn)
    except ValueError:
        return re.sub(r"//[^@/]*@", "//***@", dsn)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hosts = netloc.rpartition("@")
        user, sep, _password = userinfo.partition(":")
        netloc = f"{user}:***@{hosts}" if sep else f"{user}@{hosts}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(k.lower() == "password" for k, _ in pairs):
            query = urlencode([(k, "***" if k.lower() == "password" else v) for k, v in pairs], safe="/*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def describe_server(dsn: str) -> str:
    """Where ``dsn`` connects, for people: ``db.example.com:5432`` or ``the socket in /run/pg (port 5432)``.

    Falls back on ``PGHOST``/``PGPORT`` as libpq does, and names no password."""
    host = port = None
    try:
        parts = urlsplit(dsn)
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        hosts = parts.netloc.rpartition("@")[2]
        if hosts:
            first = hosts.split(",")[0]
            if first.startswith("["):  # [::1]:5432
                host, _, rest = first[1:].partition("]")
                port = rest.lstrip(":") or None
            else:
                host, _, port_text = first.partition(":")
                port = port_text or None
            host = unquote(host) if host else None
        host = query.get("host", host) or None
        port = query.get("port", port) or None
    except ValueError:
        pass
    host = host or os.environ.get("PGHOST") or None
    port = port or os.environ.get("PGPORT") or "5432"
    if host is None:
        return f"the local PostgreSQL socket (port {port})"
    if host.startswith("/"):
        return f"the socket in {host} (port {port})"
    return f"{host}:{port}"


def connect_failure(dsn: str, exc: BaseException) -> str:
    """One line for a connection that could not be made: where, and the server's reason."""
    reason = _reason(exc)
    return f"Cannot connect to the PostgreSQL store at {describe_server(dsn)}: {reason}"


def _reason(exc: BaseException) -> str:
    """The useful part of libpq's message: the last line that says what failed, no DSN."""
    text = str(exc).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    reason = lines[-1] if lines else type(exc).__name__
    for line in lines:  # libpq puts the cause after "FATAL:" or after the last "failed:"
        if "FATAL:" in line:
            reason = line.split("FATAL:", 1)[1].strip()
            break
    else:
        if "failed:" in reason:
            reason = reason.rsplit("failed:", 1)[1].strip()
    reason = _KV_PASSWORD.sub(lambda m: m.group(1) + "***", reason).rstrip(".")
    return reason + "."
