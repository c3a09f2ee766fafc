"""Drift through the CLI: an instance started on an older version of its form is listed,
read (marked stale), moved with ``formctl migrate`` (or ``run``/``resume`` after asking), and
``run`` on one it can't continue exits non-zero saying how. In process (the ``cli`` fixture),
but for the question asked in a real terminal."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pexpect
import pytest

from clitools import Cli
from helpers.terminal import close, spawn


def files(folder: str | Path) -> dict[str, str]:
    folder = Path(folder)
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def drifted(cli, tmp_path, monkeypatch) -> tuple[Cli, str]:
    """A claim with a name and a staff id, then version 2 of the form: the name may be at most
    5 characters and there is no staff id any more. The ``Cli`` on version 2 (a copy of the
    example forms), and the claim."""
    monkeypatch.setenv("FORMCTL_SUBJECT", "dana")
    started = cli("run", "travel-claim", "--offline", input="Dana Reeve\nAB1234\n")
    assert started.exit_code == 0, started.stderr
    (row,) = cli.json("instances")["instances"]
    shutil.copytree(cli.forms, tmp_path / "forms", ignore=shutil.ignore_patterns("__pycache__"))
    v2 = cli.at(forms=tmp_path / "forms")
    form = v2.forms / "travel_claim.py"
    text = form.read_text()
    text = text.replace("version=1,", "version=2,", 1)
    text = text.replace(
        'Annotated[str, Field(min_length=2)], label="Full name"',
        'Annotated[str, Field(min_length=2, max_length=5)], label="Full name"',
        1,
    )
    start = text.index('    .field("staff_id"')
    end = text.index("    .field(", start + 1)
    form.write_text(text[:start] + text[end:])
    return v2, row["instance_id"]


def test_instances_lists_a_stale_instance_without_writing_it(drifted):
    v2, instance_id = drifted
    before = files(v2.store)
    out = v2("instances", "--status", "stale", "--json")
    assert out.exit_code == 0, out.stderr
    (row,) = json.loads(out.stdout)["instances"]
    assert row["instance_id"] == instance_id and row["status"] == "stale"
    assert json.loads(v2("instances", "--status", "active", "--json").stdout)["instances"] == []
    assert files(v2.store) == before


def test_inspect_history_and_export_read_a_stale_instance_marked_stale(drifted):
    v2, instance_id = drifted
    before = files(v2.store)
    exported = v2("export", instance_id, "--json")
    assert exported.exit_code == 0, exported.stderr
    data = json.loads(exported.stdout)
    assert data["status"] == "stale" and data["stale"] is True
    assert data["started_on_version"] == 1 and data["registered_version"] == 2
    assert data["not_in_registered_version"] == {"staff_id": "AB1234"}
    assert f"formctl migrate {instance_id}" in exported.stderr

    inspected = v2("inspect", instance_id, "--field", "full_name", "--json")
    assert inspected.exit_code == 0, inspected.stderr
    assert json.loads(inspected.stdout)["stale"] is True
    history = v2("history", instance_id)
    assert history.exit_code == 0, history.stderr
    assert "Dana Reeve" in history.stdout and "AB1234" in history.stdout
    plain = v2("export", instance_id)
    assert "stale" in plain.stdout.splitlines()[0]
    assert files(v2.store) == before


def test_migrate_keeps_what_the_new_version_accepts_and_reports_the_rest(drifted):
    v2, instance_id = drifted
    out = v2("migrate", instance_id)
    assert out.exit_code == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == f"moved {instance_id} from version 1 to version 2 of travel-claim"
    assert any(line.startswith("  not kept: Full name — version 2 refuses it:") for line in lines)
    assert "  not kept: staff_id = AB1234 — version 2 has no such field" in lines
    data = v2.json("export", instance_id)
    assert data["status"] == "active" and data["version"] == 2 and "stale" not in data
    again = v2("migrate", instance_id)
    assert again.stdout.strip() == f"{instance_id} is already on version 2 of travel-claim; nothing to move."


def test_run_and_resume_piped_on_a_stale_instance_exit_1_and_say_how(drifted):
    v2, instance_id = drifted
    record = Path(v2.store) / "instances" / f"{instance_id}.json"
    before = record.read_bytes()
    for args in (("run", "travel-claim"), ("resume", instance_id)):
        out = v2(*args, "--offline", input="Dana\n")
        assert out.exit_code == 1, out.stdout + out.stderr
        assert f"formctl migrate {instance_id}" in out.stderr and "--migrate" in out.stderr
        assert "formctl abandon" in out.stderr
    assert record.read_bytes() == before  # nothing written to it
    rows = v2.json("instances")["instances"]
    assert [r["instance_id"] for r in rows] == [instance_id]  # and nothing started in its place


def test_run_with_migrate_moves_it_and_the_conversation_carries_on(drifted):
    v2, instance_id = drifted
    out = v2("run", "travel-claim", "--offline", "--migrate", input="Dana\n")
    assert out.exit_code == 0, out.stdout + out.stderr
    assert f"moved {instance_id} from version 1 to version 2 of travel-claim" in out.stdout
    assert "can't be continued" not in out.stdout
    data = v2.json("export", instance_id)
    assert data["values"]["full_name"] == "Dana"


@pytest.mark.e2e
def test_run_in_a_terminal_asks_before_moving_a_stale_instance(drifted):
    """A real pseudo-terminal: the question is asked only of a person at a terminal."""
    v2, instance_id = drifted
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORMCTL_", "ANTHROPIC_"))}
    env.update(v2.env)
    env.update(TERM="dumb", FORMCTL_SUBJECT="dana")  # a terminal, but the plain chat: the question is the point
    child = spawn(
        ["-m", "formctl.cli.app", "run", "travel-claim", "--offline"],
        env,
        cwd=Path(v2.store).parent,
        dimensions=(24, 80),  # pexpect's own size
        timeout=60,
    )
    try:
        child.expect(r"Move it to version 2 now\?")
        child.sendline("y")
        child.expect(f"moved {instance_id} from version 1 to version 2")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        close(child)
    data = v2.json("export", instance_id)
    assert data["version"] == 2
