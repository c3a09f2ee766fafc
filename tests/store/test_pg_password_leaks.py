"""No output of any command, on any path, contains a PostgreSQL password (docs/store-postgres.md,
"Passwords"): a generated set of malformed and well-formed DSNs, every command that opens a
store, with and without ``--debug``. No server is needed: every DSN here points nowhere (or
is refused before a connection is tried), and what is checked is what a person would see.

In this process through typer's CliRunner (hundreds of runs); under ``--debug`` the command's
exception escapes, and the traceback Python would print is rendered and checked too. A
sample (two DSNs, plain and ``--debug``) runs through the real entry point in a child process.
"""

from __future__ import annotations

import itertools
import traceback
from typing import Any
from urllib.parse import quote

import pytest

from clitools import formctl, invoke
from fixture_project import FORMS
from formctl.cli import base
from formctl.store._pgconn import dsn_problem, mask_dsn, scrub

PASSWORDS = ["Summer50%off", "hunter2-x", "p@ss/w?rd#9", "pä ss'wörd", "%zz%", "colon:pass@x"]

SHAPES = [
    "postgresql://root:{pw}@db.invalid/forms",  # as typed, unencoded
    "postgresql://root:{q}@db.invalid/forms",  # percent-encoded
    "POSTGRESQL://root:{q}@db.invalid/forms",  # upper-case scheme
    "Postgres://root:{pw}@db.invalid/forms",
    "postgresql://root:{pw}@[::1/forms",  # an IPv6 host not closed
    "postgresql://root:{q}@[::1/forms",
    "postgresql://root:{q}@db.invalid:54x2/forms",  # a port that is not a number
    "postgresql://root:{q}@db.invalid:/forms",
    "postgresql://root:{q}@/forms?host=/nonexistent-socket-dir&port=abc",
    "postgresql://root:{q}@/forms?host=/nonexistent-socket-dir",  # well formed: nobody there
    "postgresql://root@db.invalid/forms?password={q}&sslmode=bogus",
    "postgresql://root@/forms?password={pw}&host=/nonexistent-socket-dir",
    "postgresql://root:{q}@db.invalid/forms?bogus_option=1",
    "postgresql://root:{q}@db.invalid/forms?connect_timeout=x",
    "postgresql://root:{pw}@@db.invalid/forms",
    "postgresql://root:{pw}",
    "postgresql://:{q}@db.invalid",
    "host=/nonexistent-socket-dir user=root password={kv} dbname=forms",
    "host=/nonexistent-socket-dir password={kv} bogus=1",
    "host=/nonexistent-socket-dir password='{pw}",  # an unclosed quote
    "postgresql://root:{q}@db.invalid,[::1/forms",
]

ID = "form_mx3tplc2_9jz5s0"
COMMANDS = [
    ["instances"],
    ["inspect", ID],
    ["history", ID],
    ["why", ID, "full_name"],
    ["export", ID],
    ["fill", ID, "full_name=Ann"],
    ["undo", ID, "full_name"],
    ["resolve", ID, "--reason", "ok"],
    ["submit", ID],
    ["abandon", ID, "--reason", "x"],
    ["run", "travel-claim", "--offline"],
    ["resume", ID, "--offline"],
    ["store", "check"],
    ["store", "init"],
    ["store", "reindex"],
    # Goal programs keep their own connection to the same database (store/goals_postgres.py).
    ["program", "list"],
    ["program", "start", "client-intake", "--subject", "firm:1/matter:2"],
    ["program", "show", "--subject", "firm:1/matter:2"],
    ["program", "update", "intake", "--subject", "firm:1/matter:2", "--completed", "x"],
    ["program", "sync", "--subject", "firm:1/matter:2"],
    ["program", "history", "--subject", "firm:1/matter:2"],
]


def dsns() -> list[tuple[str, str]]:
    """Each shape with two of the passwords (turn about, so every password meets many shapes)."""
    out = []
    for n, shape in enumerate(SHAPES):
        for pw in (PASSWORDS[n % len(PASSWORDS)], PASSWORDS[(n + 3) % len(PASSWORDS)]):
            kv = "'" + pw.replace("\\", "\\\\").replace("'", "\\'") + "'"
            out.append((shape.format(pw=pw, q=quote(pw, safe=""), kv=kv), pw))
    return out


@pytest.fixture(autouse=True)
def _invalid_hosts_are_not_looked_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """``.invalid`` never resolves (RFC 2606), so a lookup's answer is known without asking: asked,
    a resolver that cannot be reached (a sandbox, a train) stalls the first lookup for seconds."""
    import socket

    real = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(host, str) and host.rstrip(".").endswith(".invalid"):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def leaked(text: str, password: str) -> bool:
    return password in text or quote(password, safe="") in text


def test_masking_and_scrubbing_never_leave_a_password():
    for dsn, pw in dsns():
        assert not leaked(mask_dsn(dsn), pw), dsn
        assert not leaked(scrub(f"could not parse {dsn!r}: near {dsn}", dsn), pw), dsn


def test_malformed_dsns_are_named_in_our_words_before_libpq_sees_them():
    assert "lower case" in dsn_problem("POSTGRESQL://a:b@h/d")
    assert "%25" in dsn_problem("postgresql://root:Summer50%off@db.example.com/forms")
    assert "IPv6" in dsn_problem("postgresql://a:b@[::1/forms")
    assert dsn_problem("postgresql://a:b@h:5x/forms") == "the port after the host is not a number"
    assert dsn_problem("postgresql://a:b%40c@h:5432/forms?host=/run/pg") is None


def _run(args: list[str], debug: bool):
    try:
        result = invoke(*(["--debug"] if debug else []), *args, input="Ann\n")
    finally:
        base._debug = False
    shown = result.stdout + (result.stderr if result.stderr_bytes is not None else "")
    if result.exc_info is not None and not isinstance(result.exception, SystemExit):
        shown += "".join(traceback.format_exception(*result.exc_info))
    return result, shown


@pytest.mark.parametrize("debug", [False, True], ids=["plain", "debug"])
def test_no_command_prints_the_password_of_a_malformed_or_unreachable_dsn(debug, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FORMCTL_FORMS", str(FORMS))
    monkeypatch.setenv("PGCONNECT_TIMEOUT", "2")
    leaks = []
    for n, ((dsn, pw), args) in enumerate(itertools.product(dsns(), COMMANDS)):
        placed = [*args, "--store", dsn] if n % 2 else ["--store", dsn, *args]  # --store goes either side
        result, shown = _run(placed, debug)
        if leaked(shown, pw):
            leaks.append((placed, shown[-300:]))
        assert result.exit_code == 1, (placed, shown)
    copies = []
    for dsn, pw in dsns():
        copies.append((["store", "copy", "--from", str(tmp_path), "--to", dsn], pw))
        copies.append((["store", "copy", "--from", dsn, "--to", str(tmp_path / "backup")], pw))
    for args, pw in copies:
        result, shown = _run(args, debug)
        if leaked(shown, pw):
            leaks.append((args, shown[-300:]))
    assert leaks == [], "\n".join(map(str, leaks))


@pytest.mark.e2e
def test_the_real_command_keeps_the_password_out_of_its_output_and_its_traceback(tmp_path):
    """The console script itself (the command it builds alone, and Python's own traceback under
    ``--debug``), plain and with ``--debug``: a DSN refused before libpq sees it, and a well-formed
    one whose connection fails. Every shape of DSN meets every command in this process above."""
    env = {"FORMCTL_FORMS": str(FORMS), "PGCONNECT_TIMEOUT": "2"}
    for dsn, said in (
        ("postgresql://root:Summer50%off@db.invalid/forms", "Not a valid PostgreSQL connection string"),
        ("postgresql://root:Summer50off@/forms?host=/nonexistent-socket-dir", "Cannot connect to the PostgreSQL store"),
    ):
        for debug in ([], ["--debug"]):
            result = formctl(*debug, "instances", "--store", dsn, env=env, cwd=tmp_path)
            assert result.returncode == 1
            assert "Summer50" not in result.stdout + result.stderr
            assert said in result.stderr
