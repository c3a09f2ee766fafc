"""Damage is loud, through the ``formctl`` command.

An instance's journal loses records the store acknowledged (its last line cut off, the
file emptied, the last record's bytes corrupted). Reads go on, with one warning line on
stderr and ``"damaged"`` in ``--json``; ``fill`` is refused with ``store_damaged`` and
changes nothing; ``store check`` reports it; ``store repair`` accepts the loss (keeping a
copy of the damaged files), after which ``fill`` works and ``store check`` passes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clitools import FORMS, Cli, formctl, start
from formctl import FormRegistry, FormRunner, JsonFileAdapter


def _claim(store: str) -> str:
    """A claim with three answers, written one commit each after the start: version 5 acknowledged."""
    instance_id = start(store)
    runner = FormRunner(
        JsonFileAdapter(store), registry=FormRegistry.from_toml(FORMS / "registry.toml"), subject="dana"
    )
    for values in ({"full_name": "Dana Reeve"}, {"staff_id": "AB1234"}, {"email": "dana@example.org"}):
        runner.fill(values, instance_id=instance_id)
    return instance_id


def _cut_last_line(journal: Path) -> None:
    journal.write_bytes(b"".join(journal.read_bytes().splitlines(keepends=True)[:-1]))


def _empty(journal: Path) -> None:
    journal.write_bytes(b"")


def _corrupt_last_record(journal: Path) -> None:
    data = bytearray(journal.read_bytes())
    data[-4] ^= 0x20
    journal.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "harm, holds", [(_cut_last_line, 4), (_empty, 1), (_corrupt_last_record, 4)], ids=["cut", "emptied", "corrupt"]
)
def test_a_damaged_journal_warns_refuses_writes_and_is_repaired_explicitly(store, harm, holds):
    instance_id = _claim(store)
    instances = Path(store) / "instances"
    journal = instances / f"{instance_id}.journal"
    harm(journal)
    harmed = {p.name: p.read_bytes() for p in instances.iterdir()}
    at = Cli(store)

    exported = at("export", instance_id)
    assert exported.exit_code == 0
    assert exported.stderr.count("\n") == 1 and exported.stderr.startswith("warning: ")
    assert instance_id in exported.stderr and "store repair" in exported.stderr
    data = json.loads(at("export", instance_id, "--json").stdout)
    assert data["damaged"]["missing_versions"] == {"from": holds + 1, "to": 5}
    assert data["damaged"]["holds_version"] == holds
    for command in (("inspect", instance_id), ("history", instance_id)):
        assert json.loads(at(*command, "--json").stdout)["damaged"]["missing_versions"]["to"] == 5
    [row] = json.loads(at("instances", "--json").stdout)["instances"]
    assert row["damaged"]["instance_id"] == instance_id

    refused = at("fill", instance_id, "destination=Leeds", "--json")
    assert refused.exit_code == 1
    assert instance_id in refused.stderr and f"{holds + 1}" in refused.stderr and "store repair" in refused.stderr
    assert {p.name: p.read_bytes() for p in instances.iterdir()} == harmed  # the evidence is untouched
    checked = at("store", "check")
    assert checked.exit_code == 1 and instance_id in checked.stdout

    repaired = at("store", "repair", instance_id, "--as", "Sam Jones", "--json")
    assert repaired.exit_code == 0, repaired.stderr
    done = json.loads(repaired.stdout)
    assert done["repaired"] is True and done["repaired_by"] == "Sam Jones"
    assert done["lost_versions"] == {"from": holds + 1, "to": 5} and done["version"] == 6
    kept = Path(done["kept"])
    assert kept.parent == instances and kept.name.startswith(f"{instance_id}.damaged-")
    assert {p.name: p.read_bytes() for p in kept.iterdir()} == harmed

    assert at("fill", instance_id, "destination=Leeds").exit_code == 0
    assert at("export", instance_id).stderr == ""
    assert at("store", "check").exit_code == 0
    history = json.loads(at("history", instance_id, "--json").stdout)
    assert history["repairs"][0]["by"] == "Sam Jones" and history["repairs"][0]["lost"] == [holds + 1, 5]
    assert "damaged" not in history
    again = at("store", "repair", instance_id)
    assert again.exit_code == 0 and "not damaged" in again.stdout


def test_a_torn_unacknowledged_last_record_stays_silently_dropped(store):
    instance_id = _claim(store)
    journal = Path(store) / "instances" / f"{instance_id}.journal"
    with journal.open("ab") as f:  # killed mid-append, before the commit was acknowledged
        f.write(b'0badc0de {"s":9,"v":5,"at":"x","c":{"entr')
    at = Cli(store)
    exported = at("export", instance_id)
    assert exported.exit_code == 0 and exported.stderr == ""
    assert at("fill", instance_id, "destination=Leeds").exit_code == 0
    assert at("store", "check").exit_code == 0


@pytest.mark.e2e
def test_repair_through_the_console_entry_point_defaults_to_the_login_name(store, tmp_path):
    instance_id = _claim(store)
    _cut_last_line(Path(store) / "instances" / f"{instance_id}.journal")
    result = Cli(store).process("store", "repair", instance_id, env={"USER": "pat", "LOGNAME": "pat"})
    assert result.returncode == 0, result.stderr
    assert "version 5 was lost" in result.stdout and "pat" in result.stdout
    assert "Example:" in formctl("store", "repair", "--help").stdout
