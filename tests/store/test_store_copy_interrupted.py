"""Ctrl-C during ``formctl store copy`` (docs/store-postgres.md, "Copying"): one clear line and
no driver internals, nothing half-copied that ``store check`` or the copy's verification would
call damaged, and running the same command again completes. A real ``formctl`` process is
sent SIGINT while it copies, both ways between a folder and a real PostgreSQL; what it left
behind is then checked, and copied again, in process (the ``cli`` fixture)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from clitools import ctrl_c_at_default
from formctl import JsonFileAdapter
from formctl.forms.instance import Provenance, now_iso
from formctl.store import _durable

pytestmark = pytest.mark.e2e

MANY = 2400  # twelve batches of 200: the copy takes long enough to be interrupted part way


@pytest.fixture(scope="session")
def many(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A JSON store folder holding MANY instances, built once per run and only ever read (both
    tests copy *from* it): building it costs two CPU-seconds, and what it holds is the set-up,
    not what is tested. The xdist workers of one run share it (the first builds it, under a
    lock); :func:`source` checks that no test changed it."""
    import fcntl

    worker = os.environ.get("PYTEST_XDIST_WORKER")
    run = tmp_path_factory.getbasetemp().parent if worker else tmp_path_factory.getbasetemp()
    folder = run / "copy-interrupted-many"
    with open(run / "copy-interrupted-many.lock", "a") as claim:
        fcntl.flock(claim, fcntl.LOCK_EX)  # released when the file is closed
        if not (folder / "complete").exists():
            shutil.rmtree(folder, ignore_errors=True)
            adapter = JsonFileAdapter(folder / "store")
            # without fsync, as the tests' own writes are (conftest's _no_fsync, which a session
            # fixture runs before)
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(_durable, "fsync_enabled", False)
                for n in range(MANY):
                    adapter.create_instance(
                        "travel-claim", 1, f"person-{n % 40}", Provenance("test", "host", now_iso())
                    )
            adapter.close()
            (folder / "complete").touch()
    return folder / "store"


@pytest.fixture
def source(many: Path) -> Iterator[Path]:
    """The folder of MANY instances, for a test that only reads it; afterwards, unchanged."""
    before = _state(many)
    yield many
    assert _state(many) == before, "a copy changed the folder it copied from"


def _state(folder: Path) -> dict[str, tuple[int, int]]:
    """Each file's size and modification time."""
    files = [path for path in folder.rglob("*") if path.is_file()]
    return {str(path.relative_to(folder)): (path.stat().st_size, path.stat().st_mtime_ns) for path in files}


def _count_in_database(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return _count_over(conn)


def _count_over(conn: psycopg.Connection) -> int:
    if not conn.execute("SELECT to_regclass('formctl_instances') IS NOT NULL").fetchone()[0]:
        return 0
    return int(conn.execute("SELECT count(*) FROM formctl_instances").fetchone()[0])


def _count_in_folder(folder: Path) -> int:
    try:
        return sum(1 for name in os.listdir(folder / "instances") if name.endswith(".json"))
    except FileNotFoundError:
        return 0


def _interrupt_part_way(args: list[str], copied: callable) -> subprocess.CompletedProcess[str]:
    """``formctl ARGS`` in a child process, sent SIGINT once some of the copy has landed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORMCTL_")}
    child = subprocess.Popen(
        [sys.executable, "-m", "formctl.cli.app", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=ctrl_c_at_default,
    )
    deadline = time.monotonic() + 120
    while copied() == 0 and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert child.poll() is None, "the copy ended before it could be interrupted: raise MANY"
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=120)
    return subprocess.CompletedProcess(child.args, child.returncode, out, err)


def _one_clear_line(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 130, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Interrupted:") and "run the same command again" in lines[0]
    for internal in ("Traceback", "psycopg", "KeyboardInterrupt", "QueryCanceled", "canceling statement"):
        assert internal not in result.stderr


def test_ctrl_c_while_copying_a_folder_into_postgresql_leaves_whole_batches_and_a_rerun_completes(cli, pg_dsn, source):
    args = ["store", "copy", "--from", str(source), "--to", pg_dsn]

    with psycopg.connect(pg_dsn, autocommit=True) as watching:  # one connection for every look, not one a look
        interrupted = _interrupt_part_way(args, lambda: _count_over(watching))
    _one_clear_line(interrupted)
    landed = _count_in_database(pg_dsn)
    assert 0 < landed < MANY and landed % 200 == 0  # whole batches, never part of one

    check = cli.at(store=pg_dsn)("store", "check", "--json")
    assert check.exit_code == 0 and json.loads(check.stdout)["ok"], check.stdout + check.stderr
    again = cli(*args, "--json")
    report = json.loads(again.stdout)
    assert again.exit_code == 0 and report["verified"], again.stdout + again.stderr
    assert report["unchanged"] == landed and report["copied"] == MANY - landed
    assert _count_in_database(pg_dsn) == MANY


def test_ctrl_c_while_copying_postgresql_into_a_folder_leaves_a_sound_folder_and_a_rerun_completes(
    cli, pg_dsn, source, tmp_path
):
    cli.ok("store", "copy", "--from", str(source), "--to", pg_dsn)
    backup = tmp_path / "backup"
    args = ["store", "copy", "--from", pg_dsn, "--to", str(backup)]

    interrupted = _interrupt_part_way(args, lambda: _count_in_folder(backup))
    _one_clear_line(interrupted)
    landed = _count_in_folder(backup)
    assert 0 < landed < MANY

    check = cli.at(store=backup)("store", "check", "--json")
    assert check.exit_code == 0 and json.loads(check.stdout)["ok"], check.stdout + check.stderr
    # Not even a write left for the next one to finish: the copy stopped between instances.
    assert "interrupted write" not in check.stdout, check.stdout
    again = cli(*args, "--json")
    report = json.loads(again.stdout)
    assert again.exit_code == 0 and report["verified"], again.stdout + again.stderr
    assert report["copied"] + report["unchanged"] == MANY and report["copied"] == MANY - landed
