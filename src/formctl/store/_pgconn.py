"""PostgreSQL connection strings: recognising one, showing one without its password, and
turning a failure to connect into one line that names the server.

Pure string work, with no import of psycopg, so the CLI can decide which store it was given
(and print a masked DSN in an error) before anything heavy loads.
"""

from __future__ import annotations

import os
import re
from urllib.parse import parse_qsl, unquote, urlsplit

SCHEMES = ("postgresql://", "postgres://")

_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&#]*", re.IGNORECASE)
_KV_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:\\.|[^'\\])*'|\S+)", re.IGNORECASE)


def is_dsn(store: object) -> bool:
    """True when ``--store`` / ``FORMCTL_STORE`` names a PostgreSQL database rather than a folder."""
    return isinstance(store, str) and store.lower().startswith(SCHEMES)


def mask_dsn(dsn: str) -> str:
    """``dsn`` with any password replaced by ``***`` (URI user-info, a ``password=`` query
    parameter, or a ``password=`` key in the key/value form); the rest exactly as given."""
    if not is_dsn(dsn):
        return _KV_PASSWORD.sub(lambda m: m.group(1) + "***", dsn)
    head = dsn.index("://") + 3
    rest = dsn[head:]
    end = min([rest.find(c) for c in "/?#" if c in rest] or [len(rest)])
    netloc, tail = rest[:end], rest[end:]
    if "@" in netloc:
        userinfo, hosts = netloc.rsplit("@", 1)
        if ":" in userinfo:
            netloc = f"{userinfo.split(':', 1)[0]}:***@{hosts}"
    tail = _QUERY_PASSWORD.sub(lambda m: m.group(1) + "***", tail)
    return dsn[:head] + netloc + tail


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
    if reason.startswith(("Connection refused", "No such file or directory")):
        reason = f"no server is running there ({reason[0].lower()}{reason[1:-1]})."
    return f"Cannot connect to the PostgreSQL store at {describe_server(dsn)}: {reason}"


def _reason(exc: BaseException) -> str:
    """The useful part of libpq's message, without any connection string: the server's reason
    after ``FATAL:``, else what follows the last ``failed:`` (``Connection refused``)."""
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
    reason = _KV_PASSWORD.sub(lambda m: m.group(1) + "***", reason).rstrip(".?! ")
    return reason + "."
