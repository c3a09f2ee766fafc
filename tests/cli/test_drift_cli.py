"""Drift through the real CLI: an instance started on an older version of its form is listed,
read (marked stale), moved with ``formctl migrate`` (or ``run``/``resume`` after asking), and
``run`` on one it can't continue exits non-zero saying how."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from clitools import invoke
from fixture_project import FORMS

pytestmark = pytest.mark.e2e  # every test here crosses a process boundary


def formctl(*args: str, cwd: Path, input: str | None = "") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORMCTL_", "ANTHROPIC_"))}
    env["FORMCTL_SUBJECT"] = "dana"
    return subprocess.run(
        [sys.executable, "-m", "formctl.cli.app", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        input=input,
        timeout=120,
    )


def files(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def drifted(tmp_path, monkeypatch) -> tuple[Path, str]:
    """A claim with a name and a staff id, then version 2 of the form: the name may be at most
    5 characters and there is no staff id any more."""
    shutil.copytree(FORMS, tmp_path / "forms", ignore=shutil.ignore_patterns("__pycache__"))
    # Version 1 is the shipped form, so the chat that starts the claim runs in this process, on
    # the example project's forms (never edited: this process keeps the modules it imported);
    # every command after the edit below runs in a child process, which imports the edited one.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FORMCTL_SUBJECT", "dana")
    started = invoke(
        "run", "travel-claim", "--offline", "--store", "store", "--forms", str(FORMS), input="Dana Reeve\nAB1234\n"
    )
    assert started.exit_code == 0, started.stderr
    (row,) = json.loads(invoke("instances", "--store", "store", "--json").stdout)["instances"]
    form = tmp_path / "forms" / "travel_claim.py"
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
    return tmp_path, row["instance_id"]


def test_instances_lists_a_stale_instance_without_writing_it(drifted):
    root, instance_id = drifted
    before = files(root / "store")
    out = formctl("instances", "--store", "store", "--status", "stale", "--json", cwd=root)
    assert out.returncode == 0, out.stderr
    (row,) = json.loads(out.stdout)["instances"]
    assert row["instance_id"] == instance_id and row["status"] == "stale"
    assert (
        json.loads(formctl("instances", "--store", "store", "--status", "active", "--json", cwd=root).stdout)[
            "instances"
        ]
        == []
    )
    assert files(root / "store") == before


def test_inspect_history_and_export_read_a_stale_instance_marked_stale(drifted):
    root, instance_id = drifted
    before = files(root / "store")
    exported = formctl("export", instance_id, "--store", "store", "--json", cwd=root)
    assert exported.returncode == 0, exported.stderr
    data = json.loads(exported.stdout)
    assert data["status"] == "stale" and data["stale"] is True
    assert data["started_on_version"] == 1 and data["registered_version"] == 2
    assert data["not_in_registered_version"] == {"staff_id": "AB1234"}
    assert f"formctl migrate {instance_id}" in exported.stderr

    inspected = formctl("inspect", instance_id, "--store", "store", "--field", "full_name", "--json", cwd=root)
    assert inspected.returncode == 0, inspected.stderr
    assert json.loads(inspected.stdout)["stale"] is True
    history = formctl("history", instance_id, "--store", "store", cwd=root)
    assert history.returncode == 0, history.stderr
    assert "Dana Reeve" in history.stdout and "AB1234" in history.stdout
    plain = formctl("export", instance_id, "--store", "store", cwd=root)
    assert "stale" in plain.stdout.splitlines()[0]
    assert files(root / "store") == before


def test_migrate_keeps_what_the_new_version_accepts_and_reports_the_rest(drifted):
    root, instance_id = drifted
    out = formctl("migrate", instance_id, "--store", "store", cwd=root)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == f"moved {instance_id} from version 1 to version 2 of travel-claim"
    assert any(line.startswith("  not kept: Full name — version 2 refuses it:") for line in lines)
    assert "  not kept: staff_id = AB1234 — version 2 has no such field" in lines
    data = json.loads(formctl("export", instance_id, "--store", "store", "--json", cwd=root).stdout)
    assert data["status"] == "active" and data["version"] == 2 and "stale" not in data
    again = formctl("migrate", instance_id, "--store", "store", cwd=root)
    assert again.stdout.strip() == f"{instance_id} is already on version 2 of travel-claim; nothing to move."


def test_run_and_resume_piped_on_a_stale_instance_exit_1_and_say_how(drifted):
    root, instance_id = drifted
    record = root / "store" / "instances" / f"{instance_id}.json"
    before = record.read_bytes()
    for args in (("run", "travel-claim"), ("resume", instance_id)):
        out = formctl(*args, "--offline", "--store", "store", cwd=root, input="Dana\n")
        assert out.returncode == 1, out.stdout + out.stderr
        assert f"formctl migrate {instance_id}" in out.stderr and "--migrate" in out.stderr
        assert "formctl abandon" in out.stderr
    assert record.read_bytes() == before  # nothing written to it
    rows = json.loads(formctl("instances", "--store", "store", "--json", cwd=root).stdout)["instances"]
    assert [r["instance_id"] for r in rows] == [instance_id]  # and nothing started in its place


def test_run_with_migrate_moves_it_and_the_conversation_carries_on(drifted):
    root, instance_id = drifted
    out = formctl("run", "travel-claim", "--offline", "--store", "store", "--migrate", cwd=root, input="Dana\n")
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"moved {instance_id} from version 1 to version 2 of travel-claim" in out.stdout
    assert "can't be continued" not in out.stdout
    data = json.loads(formctl("export", instance_id, "--store", "store", "--json", cwd=root).stdout)
    assert data["values"]["full_name"] == "Dana"


def test_run_in_a_terminal_asks_before_moving_a_stale_instance(drifted):
    root, instance_id = drifted
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORMCTL_", "ANTHROPIC_"))}
    env.update(TERM="dumb", FORMCTL_SUBJECT="dana")  # a terminal, but the plain chat: the question is the point
    child = pexpect.spawn(
        sys.executable,
        ["-m", "formctl.cli.app", "run", "travel-claim", "--offline", "--store", "store"],
        env=env,
        cwd=str(root),
        encoding="utf-8",
        timeout=60,
        use_poll=True,
    )
    try:
        child.expect(r"Move it to version 2 now\?")
        child.sendline("y")
        child.expect(f"moved {instance_id} from version 1 to version 2")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close()
    data = json.loads(formctl("export", instance_id, "--store", "store", "--json", cwd=root).stdout)
    assert data["version"] == 2
