"""Ctrl-C during ``formctl store copy`` (docs/store-postgres.md, "Copying"): one clear line and
no driver internals, nothing half-copied that ``store check`` or the copy's verification would
call damaged, and running the same command again completes. A real ``formctl`` process is
sent SIGINT while it copies, both ways between a folder and a real PostgreSQL; what it left
behind is then checked, and copied again, in process (the ``cli`` fixture)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from clitools import ctrl_c_at_default
from formctl import JsonFileAdapter
from formctl.forms.instance import Provenance, now_iso

pytestmark = pytest.mark.e2e

MANY = 2400  # twelve batches of 200: the copy takes long enough to be interrupted part way


def _folder_with_many(folder: Path) -> list[str]:
    adapter = JsonFileAdapter(folder)
    try:
        return [
            adapter.create_instance("travel-claim", 1, f"person-{n % 40}", Provenance("test", "host", now_iso())).id
            for n in range(MANY)
        ]
    finally:
        adapter.close()


def _count_in_database(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
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


def test_ctrl_c_while_copying_a_folder_into_postgresql_leaves_whole_batches_and_a_rerun_completes(
    cli, pg_dsn, tmp_path
):
    local = tmp_path / "local"
    ids = _folder_with_many(local)
    args = ["store", "copy", "--from", str(local), "--to", pg_dsn]

    interrupted = _interrupt_part_way(args, lambda: _count_in_database(pg_dsn))
    _one_clear_line(interrupted)
    landed = _count_in_database(pg_dsn)
    assert 0 < landed < MANY and landed % 200 == 0  # whole batches, never part of one

    check = cli.at(store=pg_dsn)("store", "check", "--json")
    assert check.exit_code == 0 and json.loads(check.stdout)["ok"], check.stdout + check.stderr
    again = cli(*args, "--json")
    report = json.loads(again.stdout)
    assert again.exit_code == 0 and report["verified"], again.stdout + again.stderr
    assert report["unchanged"] == landed and report["copied"] == MANY - landed
    assert _count_in_database(pg_dsn) == len(ids)


def test_ctrl_c_while_copying_postgresql_into_a_folder_leaves_a_sound_folder_and_a_rerun_completes(
    cli, pg_dsn, tmp_path
):
    local = tmp_path / "local"
    _folder_with_many(local)
    cli.ok("store", "copy", "--from", str(local), "--to", pg_dsn)
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
