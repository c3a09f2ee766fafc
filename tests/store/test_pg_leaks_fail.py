"""The suite fails a test that leaves a PostgreSQL connection to the garbage collector
(pyproject.toml's ``filterwarnings``; docs/store-postgres.md, "Connections").

psycopg's warning comes from the connection's ``__del__``, where an exception cannot propagate:
whether the filter lines really fail a test is pytest's behaviour, so it is checked here by
running pytest in this process (pytester) with exactly those lines on a test that leaks one."""

from __future__ import annotations

import tomllib
from pathlib import Path

pytest_plugins = ["pytester"]

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"

LEAKING = """
import gc
import psycopg

DSN = {dsn!r}


def test_drops_an_open_connection():
    conn = psycopg.connect(DSN)
    conn.execute("SELECT 1")
    del conn
    gc.collect()


def test_closes_its_connection():
    with psycopg.connect(DSN) as conn:
        conn.execute("SELECT 1")
"""


def test_a_connection_left_open_fails_the_test_that_dropped_it(pytester, pg_dsn):
    filters = tomllib.loads(PYPROJECT.read_text())["tool"]["pytest"]["ini_options"]["filterwarnings"]
    assert filters, "pyproject.toml turns no warning into an error"
    pytester.makeini("[pytest]\nfilterwarnings =\n" + "".join(f"    {line}\n" for line in filters))
    pytester.makepyfile(test_leak=LEAKING.format(dsn=pg_dsn))
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-q")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed") == 1 and outcomes.get("passed") == 1, result.stdout.str()
    result.stdout.fnmatch_lines(["*test_drops_an_open_connection*"])
    assert "was deleted while still open" in result.stdout.str()
