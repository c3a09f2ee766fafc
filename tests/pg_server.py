"""Fixtures for the PostgreSQL store's tests: one server per test session, one schema per test.

* ``pg_server`` (session): the server named by ``FORMCTL_TEST_PG_DSN`` (``.ci/run`` starts one
  and exports it, with ``FORMCTL_TEST_PG_DIR``/``_PORT`` so a test may restart it), else one
  throwaway cluster for the whole run (``helpers/pg_cluster.py``): the first xdist worker that
  needs it starts it, the others find it (``FORMCTL_TEST_PG_RUN``, the folder the run's first
  process made for it in ``pytest_configure``), and that process stops it at the end. When
  neither is possible the PostgreSQL tests are skipped with the reason, except under
  ``CI=true``, where they fail: CI must never go green by silently not testing the PostgreSQL store.
* ``pg_dsn``: a DSN whose ``search_path`` is a fresh schema, dropped afterwards, with formctl's
  tables in it (``formctl store init`` run there, as the README's set-up does).
* ``pg_bare_dsn``: the same with the schema left empty (what ``store init`` finds first).
* ``pg_adapter``: a :class:`PostgresAdapter` on ``pg_dsn``, closed afterwards.
* ``private_pg``: a cluster no other test uses at the same time, for a test that stops or
  restarts it (the run's server is shared by every xdist worker's tests): one per process,
  lent to its tests in turn, each given a fresh schema on it.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pytest

from helpers import pg_cluster


def unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"PostgreSQL is required under CI=true, and {reason}", pytrace=False)
    pytest.skip(f"PostgreSQL tests skipped: {reason}")


@dataclass
class Server:
    dsn: str
    cluster: pg_cluster.Cluster | None  # None: given from outside, and not ours to restart

    def restart(self) -> None:
        if self.cluster is None:
            pytest.skip("the PostgreSQL server was given by FORMCTL_TEST_PG_DSN alone: cannot restart it")
        self.cluster.restart()
        pg_cluster.wait_ready(self.dsn)

    def stop(self) -> None:
        if self.cluster is None:
            pytest.skip("the PostgreSQL server was given by FORMCTL_TEST_PG_DSN alone: cannot stop it")
        self.cluster.stop()

    def start(self) -> None:
        assert self.cluster is not None
        self.cluster.start()
        pg_cluster.wait_ready(self.dsn)

    def tcp_dsn(self, password: str = pg_cluster.PASSWORD) -> str:
        if self.cluster is None:
            pytest.skip("the PostgreSQL server was given by FORMCTL_TEST_PG_DSN alone: its TCP port is unknown")
        return self.cluster.tcp_dsn(password=password)


def with_options(dsn: str, options: str) -> str:
    return dsn + ("&" if "?" in dsn else "?") + "options=" + quote(options, safe="")


@pytest.fixture(scope="session")
def pg_server():
    try:
        import psycopg
    except ImportError:
        unavailable("psycopg is not installed (pip install -e '.[test]')")
    given = os.environ.get("FORMCTL_TEST_PG_DSN")
    if given:
        folder, port = os.environ.get("FORMCTL_TEST_PG_DIR"), os.environ.get("FORMCTL_TEST_PG_PORT")
        bindir = pg_cluster.bin_dir()
        cluster = pg_cluster.Cluster(folder, int(port), bindir) if folder and port and bindir else None
        try:
            pg_cluster.wait_ready(given, timeout=10)
        except psycopg.Error as exc:
            unavailable(f"FORMCTL_TEST_PG_DSN cannot be reached: {exc}")
        yield Server(given, cluster)
        return
    run = os.environ.get(RUN)
    if not run:
        yield from _own_cluster()  # a session without the conftest's configure (pytester)
        return
    try:
        cluster = pg_cluster.shared(run, fsync=False)  # why no test needs the flush: helpers/pg_cluster.py
        pg_cluster.wait_ready(cluster.dsn())
    except pg_cluster.ClusterUnavailable as exc:
        unavailable(str(exc))
    yield Server(cluster.dsn(), cluster)


# The folder of the run's own cluster, made by the run's first process and inherited by its
# xdist workers: see configure().
RUN = "FORMCTL_TEST_PG_RUN"


def configure() -> None:
    """In the run's first process (the xdist controller, or the only process): a folder for the
    run's cluster, which no process starts until a test asks for it. Nothing when
    ``FORMCTL_TEST_PG_DSN`` names a server, or in an xdist worker (it inherits the folder)."""
    if os.environ.get("FORMCTL_TEST_PG_DSN") or os.environ.get(RUN):
        return
    global _run_folder
    _run_folder = pg_cluster.run_folder()
    os.environ[RUN] = _run_folder


def unconfigure() -> None:
    """Stop and remove the run's cluster: after the xdist workers, as the run's first process ends;
    and in every process, the cluster :func:`private_pg` lent to its tests."""
    global _run_folder, _spare
    if _spare is not None and _spare.cluster is not None:
        _spare.cluster.destroy()  # this process's cluster for private_pg
        _spare = None
    if _run_folder is not None:
        os.environ.pop(RUN, None)
        pg_cluster.remove(_run_folder)
        _run_folder = None


_run_folder: str | None = None


@pytest.fixture
def private_pg(pg_server):
    """A cluster no other test uses while this one runs, running, with a fresh empty schema as
    the DSN's search path: the test may stop, restart or start it. One cluster per process,
    created when a test first asks for one and lent to its tests one after the other (started
    again if a test left it stopped), removed as the process ends (:func:`unconfigure`):
    creating a cluster costs about a CPU-second and two seconds, starting one a tenth of that
    (and the clusters of one run's processes are copies of one initdb: ``pg_cluster.private``)."""
    import psycopg

    global _spare
    if _spare is None:
        try:
            # a copy of the run's one initdb (see helpers/pg_cluster.py, which says too why no
            # test needs the flush)
            cluster = pg_cluster.private(os.environ.get(RUN), fsync=False)
        except pg_cluster.ClusterUnavailable as exc:
            unavailable(str(exc))
        _spare = Server(cluster.dsn(), cluster)
    try:
        psycopg.connect(_spare.dsn, connect_timeout=5).close()
    except psycopg.OperationalError:
        _spare.start()
    schema = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(_spare.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    dsn = with_options(_spare.dsn, f"-csearch_path={schema}")
    initialise(dsn)
    yield Server(dsn, _spare.cluster)


_spare: Server | None = None


def _own_cluster():
    """A cluster started here, for as long as the fixture lasts."""
    try:
        cluster = pg_cluster.create(fsync=False)  # why no test needs the flush: helpers/pg_cluster.py
    except pg_cluster.ClusterUnavailable as exc:
        unavailable(str(exc))
    try:
        pg_cluster.wait_ready(cluster.dsn())
        yield Server(cluster.dsn(), cluster)
    finally:
        cluster.destroy()


class Schemas:
    """Makes and drops the tests' schemas over one connection of this process's own: a connection
    of their own for each (two a test) cost a server process each, about 5 ms of wall time and
    more than the CREATE or DROP itself. A connection the server dropped (a test restarted it)
    is replaced once."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self._conn: Any = None

    def execute(self, statement: str) -> None:
        import psycopg

        if self._conn is not None:
            try:
                self._conn.execute(statement)
                return
            except psycopg.OperationalError:
                self.close()  # the server went away under it since: once more, on a new connection
        self._conn = psycopg.connect(self.dsn, autocommit=True)
        self._conn.execute(statement)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


@pytest.fixture(scope="session")
def _pg_schemas(pg_server):
    import psycopg

    schemas = Schemas(pg_server.dsn)
    # pg_trgm (formctl find's index) is one per database: made here, in public, it outlives every
    # test's schema; made by a test's store init it would live in that test's schema and go with
    # it, under the indexes of the stores other workers are using at that moment.
    try:
        schemas.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public")
    except psycopg.errors.UniqueViolation:
        pass  # another xdist worker made it in the same instant: IF NOT EXISTS does not hold between two
    yield schemas
    schemas.close()


def initialise(dsn: str) -> None:
    """``formctl store init`` on ``dsn``, in process."""
    from formctl.store.postgres import PostgresAdapter

    adapter = PostgresAdapter(dsn)
    try:
        adapter.init()
    finally:
        adapter.close()


@pytest.fixture
def pg_dsn(pg_bare_dsn):
    initialise(pg_bare_dsn)
    return pg_bare_dsn


@pytest.fixture
def pg_bare_dsn(pg_server, _pg_schemas):
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:16]}"
    _pg_schemas.execute(f"CREATE SCHEMA {schema}")
    yield with_options(pg_server.dsn, f"-csearch_path={schema}")
    try:
        _pg_schemas.execute(f"DROP SCHEMA {schema} CASCADE")
    except psycopg.Error:
        pass  # a test that stopped the server; the cluster goes away with the session


@pytest.fixture
def pg_adapter(pg_dsn):
    from formctl.store.postgres import PostgresAdapter

    adapter = PostgresAdapter(pg_dsn)
    yield adapter
    adapter.close()
