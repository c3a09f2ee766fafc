"""A throwaway PostgreSQL cluster in a temporary folder, for the tests, CI and the benchmarks.

    python tests/helpers/pg_cluster.py start [--no-fsync] [DIR]   # prints: export FORMCTL_TEST_PG_DSN=...
    python tests/helpers/pg_cluster.py stop DIR

``initdb`` refuses to run as root, so as root the cluster belongs to ``nobody`` (the folder is
chowned to it and every server command runs through ``runuser``). The server listens on a
Unix socket in the folder and on 127.0.0.1 at a free port; local connections are trusted,
TCP ones need the password (so a test can try a wrong one).

``fsync`` is on unless the cluster is created with ``fsync=False`` (``--no-fsync``), which the
tests do: each commit then costs a write to the operating system rather than a flush to the
disk (about 5 ms here). Nothing a test does needs the flush: the tests kill clients and stop,
restart or kill the server, and committed data survives all of those through the operating
system's page cache; only a crash of the machine itself would need it. The benchmarks keep
it on, as a real server has it. The setting is in the cluster's ``postgresql.conf``, so it
holds across restarts.

``initdb`` costs about a CPU-second and a half. The clusters a run makes for the tests that stop
or restart their server (:func:`private`, one per xdist worker that runs one) are copies of one
data folder as ``initdb`` left it, never started, made by the first of them in the run's folder:
a copy costs a third of an ``initdb`` and holds the same superuser, password and settings; each
gets a port of its own when it starts.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import quote

SUPERUSER = "formctl"
PASSWORD = "formctl-test-secret"
UNPRIVILEGED = "nobody"


class ClusterUnavailable(RuntimeError):
    """No cluster could be started here (no binaries, or initdb/pg_ctl failed): the reason."""


def bin_dir() -> str | None:
    """The folder holding initdb and pg_ctl: PATH first, then Debian's versioned folders."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return os.path.dirname(os.path.realpath(found))
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if os.path.exists(os.path.join(candidate, "initdb")):
            return candidate
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Cluster:
    folder: str
    port: int
    bindir: str

    @property
    def data(self) -> str:
        return os.path.join(self.folder, "data")

    @property
    def socket_dir(self) -> str:
        return self.folder

    def dsn(self, database: str = "postgres", *, options: str | None = None) -> str:
        """A DSN over the Unix socket (trusted, no password)."""
        dsn = f"postgresql://{SUPERUSER}@/{database}?host={quote(self.socket_dir, safe='')}&port={self.port}"
        if options:
            dsn += f"&options={quote(options, safe='')}"
        return dsn

    def tcp_dsn(self, database: str = "postgres", *, password: str = PASSWORD) -> str:
        return f"postgresql://{SUPERUSER}:{quote(password, safe='')}@127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        cmd = [os.path.join(self.bindir, args[0]), *args[1:]]
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", UNPRIVILEGED, "--", *cmd]
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=self.folder)
        if check and done.returncode != 0:
            raise ClusterUnavailable(f"{args[0]} failed: {(done.stderr or done.stdout).strip()[-400:]}")
        return done

    def start(self) -> None:
        opts = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={self.socket_dir} "
            "-c max_connections=200 -c shared_buffers=64MB"
        )
        self._run(
            "pg_ctl", "-D", self.data, "-l", os.path.join(self.folder, "log"), "-w", "-t", "60", "-o", opts, "start"
        )

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", self.data, "-m", mode, "-w", "stop", check=False)

    def restart(self) -> None:
        self._run("pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop")
        self.start()

    def destroy(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.folder, ignore_errors=True)


def create(folder: str | None = None, *, fsync: bool = True, template: str | None = None) -> Cluster:
    """initdb (or copy ``template``, a data folder made by :func:`private`) and start a cluster;
    raises :class:`ClusterUnavailable` with the reason if it cannot."""
    cluster = _prepared(folder)
    if template is not None:
        # cp -a keeps the owner (nobody, as root) and the folder's 0700, both of which the server checks
        done = subprocess.run(["cp", "-a", template, cluster.data], capture_output=True, text=True)
        if done.returncode != 0:
            shutil.rmtree(cluster.folder, ignore_errors=True)
            raise ClusterUnavailable(f"copying {template} failed: {done.stderr.strip()[-400:]}")
    else:
        _initdb(cluster, fsync=fsync)
    try:
        cluster.start()
    except ClusterUnavailable:
        shutil.rmtree(cluster.folder, ignore_errors=True)
        raise
    return cluster


def private(run: str | None, *, fsync: bool) -> Cluster:
    """A cluster of the caller's own: a copy of the run's template (``run``: the folder of
    :func:`run_folder`), which the first caller makes, under a lock, in any process; without
    a run folder, an ``initdb`` of its own."""
    if run is None:
        return create(fsync=fsync)
    import fcntl

    template = os.path.join(run, "template")
    with open(os.path.join(run, "template.claim"), "a") as claim:
        fcntl.flock(claim, fcntl.LOCK_EX)  # released when the file is closed
        if not os.path.isdir(template):
            maker = _prepared(os.path.join(run, "template-initdb"))
            _initdb(maker, fsync=fsync)
            os.rename(maker.data, template)  # whole, or not there
            shutil.rmtree(maker.folder, ignore_errors=True)
    return create(fsync=fsync, template=template)


def _prepared(folder: str | None) -> Cluster:
    """A folder for a cluster (a new temporary one when None), owned as the server needs."""
    bindir = bin_dir()
    if bindir is None:
        raise ClusterUnavailable("no PostgreSQL server binaries (initdb, pg_ctl) on PATH or in /usr/lib/postgresql")
    if folder is None:
        _sweep(bindir)
        folder = tempfile.mkdtemp(prefix=_PREFIX)
        with open(os.path.join(folder, "owner"), "w") as f:  # read by _sweep, should this process die unclean
            f.write(str(os.getpid()))
    os.makedirs(folder, exist_ok=True)
    os.chmod(folder, 0o755)
    if os.geteuid() == 0:
        if shutil.which("runuser") is None:
            raise ClusterUnavailable("running as root and runuser is missing (initdb refuses root)")
        shutil.chown(folder, UNPRIVILEGED)
    return Cluster(folder, _free_port(), bindir)


def _initdb(cluster: Cluster, *, fsync: bool) -> None:
    pwfile = os.path.join(cluster.folder, "pw")
    with open(pwfile, "w") as f:
        f.write(PASSWORD + "\n")
    if os.geteuid() == 0:
        shutil.chown(pwfile, UNPRIVILEGED)
    cluster._run(
        "initdb",
        "-D",
        cluster.data,
        "-U",
        SUPERUSER,
        f"--pwfile={pwfile}",
        "--auth-local=trust",
        "--auth-host=scram-sha-256",
        "-E",
        "UTF8",
        "--locale=C",
        "--no-sync",
    )
    os.unlink(pwfile)
    with open(os.path.join(cluster.data, "postgresql.conf"), "a", encoding="utf-8") as conf:
        conf.write(f"fsync = {'on' if fsync else 'off'}\n")


_PREFIX = "formctl-pg-"


def run_folder() -> str:
    """A folder for a cluster that :func:`shared` starts when first asked, owned by this process:
    should the process die before removing it, the next :func:`create` stops and removes it."""
    folder = tempfile.mkdtemp(prefix=_PREFIX)
    with open(os.path.join(folder, "owner"), "w") as f:
        f.write(str(os.getpid()))
    return folder


def shared(folder: str, *, fsync: bool = True) -> Cluster:
    """The cluster in ``folder`` (from :func:`run_folder`): started by the first caller, under a lock
    on the folder, and found by the next ones, in any process. Raises :class:`ClusterUnavailable`
    with the first caller's reason to every caller when it could not be started."""
    import fcntl

    with open(os.path.join(folder, "claim"), "a") as claim:
        fcntl.flock(claim, fcntl.LOCK_EX)  # released when the file is closed
        started, failed = os.path.join(folder, "port"), os.path.join(folder, "unavailable")
        if os.path.exists(failed):
            with open(failed, encoding="utf-8") as f:
                raise ClusterUnavailable(f.read())
        bindir = bin_dir()
        if os.path.exists(started) and bindir is not None:
            with open(started, encoding="utf-8") as f:
                return Cluster(folder, int(f.read()), bindir)
        try:
            cluster = create(folder, fsync=fsync)
        except ClusterUnavailable as exc:
            os.makedirs(folder, exist_ok=True)  # create() removes the folder when the server did not start
            with open(failed, "w", encoding="utf-8") as f:
                f.write(str(exc))
            raise
        with open(started, "w", encoding="utf-8") as f:
            f.write(str(cluster.port))
        return cluster


def remove(folder: str) -> None:
    """Stop the cluster in ``folder``, if one was started there, and remove the folder."""
    bindir = bin_dir()
    if bindir and os.path.isdir(os.path.join(folder, "data")):
        Cluster(folder, 0, bindir).destroy()
    else:
        shutil.rmtree(folder, ignore_errors=True)


def _sweep(bindir: str) -> None:
    """Stop and remove the clusters of test runs that were killed before their teardown (the
    process that created a cluster is gone): a killed pytest must not leave servers running."""
    for folder in glob.glob(os.path.join(tempfile.gettempdir(), _PREFIX + "*")):
        try:
            with open(os.path.join(folder, "owner")) as f:
                owner = int(f.read())
            os.kill(owner, 0)
            continue  # its owner is alive
        except ProcessLookupError:
            Cluster(folder, 0, bindir).destroy()
        except (OSError, ValueError):
            continue


def wait_ready(dsn: str, timeout: float = 30.0) -> None:
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        try:
            psycopg.connect(dsn, connect_timeout=5).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@contextmanager
def bench_schema(dsn: str | None, prefix: str) -> Iterator[str]:
    """A DSN for a schema of its own in ``dsn``'s database (a throwaway cluster when ``dsn`` is
    None), dropped (and the cluster removed) afterwards: what the benchmarks measure against."""
    import psycopg

    cluster = None
    if dsn is None:
        cluster = create()
        dsn = cluster.dsn()
        wait_ready(dsn)
    schema = f"{prefix}_{os.getpid()}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield dsn + ("&" if "?" in dsn else "?") + f"options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
        if cluster is not None:
            cluster.destroy()


def main(argv: list[str]) -> int:
    if len(argv) >= 1 and argv[0] == "start":
        fsync = "--no-fsync" not in argv
        rest = [a for a in argv[1:] if a != "--no-fsync"]
        cluster = create(rest[0] if rest else None, fsync=fsync)
        print(f"export FORMCTL_TEST_PG_DSN='{cluster.dsn()}'")
        print(f"export FORMCTL_TEST_PG_DIR='{cluster.folder}'")
        print(f"export FORMCTL_TEST_PG_PORT='{cluster.port}'")
        return 0
    if len(argv) == 2 and argv[0] == "stop":
        remove(argv[1])
        return 0
    sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
