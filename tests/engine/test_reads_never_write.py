"""Reads never write (docs/engine.md, "Reads and writes").

After the registry moves a form to another version, and with an executor left ``running``
by a process that died, every read (the real ``formctl`` commands and the runner's read API)
leaves every file of a JSON store byte-for-byte as it was: no ``stale`` committed, no
migration, no executor re-run, no index touched.
"""

from __future__ import annotations

import hashlib
import shutil
import socket
from pathlib import Path
from types import SimpleNamespace

import pytest

from clitools import invoke
from fixture_project import FORMS
from formctl import FormRegistry, FormRunner, FormStaleError, JsonFileAdapter
from formctl.forms.instance import DispatchState, Provenance, now_iso
from helpers.processes import dead_pid

CLAIMANT = {"full_name": "Dana Reeve", "staff_id": "AB1234", "email": "dana@example.org"}


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder``, by relative path, with the SHA-256 of its bytes."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def formctl(*args: str) -> SimpleNamespace:
    """``formctl ARGS`` in this process (test_cli.py runs these commands in child processes)."""
    result = invoke(*args)
    return SimpleNamespace(args=args, returncode=result.exit_code, stdout=result.stdout, stderr=result.stderr)


@pytest.fixture(params=["without-migrate", "with-migrate"])
def bumped(request, tmp_path):
    """(store folder, forms folder, instance id): a claim started on version 1, a dispatch left
    running by a dead process, then the registry moved to version 2 (with or without migrate)."""
    store = tmp_path / "store"
    forms = tmp_path / "forms"
    shutil.copytree(FORMS, forms)
    runner = FormRunner(
        JsonFileAdapter(store), registry=FormRegistry.from_toml(forms / "registry.toml"), subject="dana"
    )
    iid = runner.start("travel-claim", seed=CLAIMANT).instance_id
    key = f"{iid}:field:full_name:1"
    runner.adapter.record_dispatch(
        iid,
        key,
        DispatchState("field:full_name", "running", 1, now_iso(), owner=f"{socket.gethostname()}:{dead_pid()}"),
        Provenance("test", "crashed-process", now_iso()),
    )
    bump = "version=2," if request.param == "without-migrate" else "version=2, migrate=lambda old, v: dict(old),"
    # Under another module name per variant: this process may already have imported the others.
    module = f"travel_claim_v2_{request.param.replace('-', '_')}"
    (forms / f"{module}.py").write_text((forms / "travel_claim.py").read_text().replace("version=1,", bump))
    registry = forms / "registry.toml"
    registry.write_text(registry.read_text().replace('"travel_claim:travel_claim"', f'"{module}:travel_claim"'))
    return store, forms, iid, request.param


def test_the_cli_reads_leave_every_file_of_the_store_unchanged(bumped):
    store, forms, iid, variant = bumped
    before = snapshot(store)
    common = ["--store", str(store), "--forms", str(forms)]

    runs = [
        formctl("inspect", iid, *common),
        formctl("inspect", iid, "--field", "email", "--json", *common),
        formctl("history", iid, *common),
        formctl("history", iid, "email", "--json", *common),
        formctl("export", iid, *common),
        formctl("export", iid, "--json", *common),
        formctl("instances", "--store", str(store)),
        formctl("instances", "--status", "stale", "--json", "--store", str(store)),
    ]

    assert snapshot(store) == before
    for run in runs:  # each read either answered or refused in one line; none crashed
        assert run.returncode in (0, 1), (run.args, run.stderr)
        assert "Traceback" not in run.stderr
    # Every read answers: a drift the form can migrate is read against the new version, and a
    # stale instance's answers are read too, marked stale, with how to move it.
    assert all(run.returncode == 0 for run in runs), [r.stderr for r in runs]
    if variant != "with-migrate":
        assert f"{iid} is stale" in runs[0].stderr and f"formctl migrate {iid}" in runs[0].stderr


def test_the_runner_reads_leave_every_file_of_the_store_unchanged(bumped):
    store, forms, iid, variant = bumped
    before = snapshot(store)
    runner = FormRunner(
        JsonFileAdapter(store), registry=FormRegistry.from_toml(forms / "registry.toml"), subject="dana"
    )

    for read in (
        lambda: runner.status(),
        lambda: runner.status(instance_id=iid),
        lambda: runner.inspect("outline", instance_id=iid),
        lambda: runner.inspect("field", "email"),
        lambda: runner.history("email", instance_id=iid),
        lambda: runner.evaluation(iid),
    ):
        if variant == "with-migrate":
            read()
        else:
            with pytest.raises(FormStaleError):
                read()
    tier0 = runner.tier0()
    view = runner.view(iid)
    listed = runner.instances()

    assert snapshot(store) == before
    assert runner.tier0(instance_id=iid) == tier0
    if variant == "without-migrate":
        assert "stale" in tier0
        assert (view.status, [s.status for s in listed]) == ("stale", ["stale"])
    else:
        assert tier0.startswith("[form: travel-claim] step 2/")
        assert (view.status, [s.status for s in listed]) == ("active", ["active"])
    assert runner.open_instance(iid).def_version == 1
