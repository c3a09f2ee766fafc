"""A store or a file formctl cannot read, write or find, through the ``formctl`` command: one line
that names it, nothing the person gave is lost, and the evidence is kept.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from clitools import FORMS, ROOT, invoke
from formctl import FormRegistry, FormRunner, JsonFileAdapter


def _truncate(store: str, instance_id: str) -> Path:
    path = Path(store) / "instances" / f"{instance_id}.json"
    path.write_bytes(path.read_bytes()[:60])
    return path


def test_run_does_not_start_afresh_past_the_subjects_corrupt_open_instance(store, cli):
    instance_id = cli.start({"full_name": "Dana Reeve", "staff_id": "AB1234"})
    path = _truncate(store, instance_id)

    result = cli("run", "travel-claim", "--offline", "--subject", "dana", input="Dana\n")

    assert result.exit_code == 1
    assert str(path) in result.stderr and "Traceback" not in result.stderr
    assert len(list((Path(store) / "instances").glob("*.json"))) == 1  # no second instance was started


def test_a_corrupt_file_is_named_without_a_doubled_word(store, cli):
    instance_id = cli.start()
    _truncate(store, instance_id)

    result = cli("inspect", instance_id)

    assert result.exit_code == 1
    assert "not valid JSON" in result.stderr
    assert " at at " not in result.stderr


# --------------------------------------------------------------------------- a store that cannot be written


def _read_only_store(monkeypatch):
    """What a read-only mount answers (root ignores chmod, so the test cannot use it)."""
    import errno
    import os

    from formctl.store import _durable

    real_open = _durable.open_private

    def read_only(path, flags):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), path)
        return real_open(path, flags)

    monkeypatch.setattr(_durable, "open_private", read_only)


def test_run_on_a_read_only_store_stops_before_the_chat_in_one_line(store, cli, monkeypatch):
    instance_id = cli.start(subject="ann")  # a store with an instance (and its folders) in it
    _read_only_store(monkeypatch)

    result = cli(
        "run",
        "travel-claim",
        "--offline",
        "--subject",
        "bob",
        input="Bob Stone\nBS1234\n",
    )

    assert result.exit_code == 1
    assert result.stderr.startswith("error: ") and "read-only" in result.stderr
    assert result.stderr.count("\n") == 1
    assert "Bob Stone" not in result.stdout  # the person was not asked to type into a chat that cannot save
    assert [p.stem for p in (Path(store) / "instances").glob("*.json")] == [instance_id]


def test_run_with_a_store_folder_that_cannot_be_created_stops_in_one_line(cli, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")

    result = cli.at(store=blocker / "store")("run", "travel-claim", "--offline", input="Dana Reeve\n")

    assert result.exit_code == 1
    assert result.stderr.startswith("error: ") and str(blocker) in result.stderr
    assert "Nothing was started" not in result.stdout


# --------------------------------------------------------------------------- a damaged conversation file


@pytest.mark.parametrize("damage", [b'{"format": 1, "messages": [{"role": "us', b"\xff\xfe\x00", b"[]"])
def test_resume_past_a_damaged_conversation_keeps_the_answers_and_the_file(store, cli, damage):
    first = cli(
        "run",
        "travel-claim",
        "--offline",
        "--subject",
        "dana",
        input="Dana Reeve\n",
    )
    assert first.exit_code == 0, first.stderr
    (conversation,) = (Path(store) / "conversations").glob("*.jsonl")
    instance_id = conversation.stem
    damage += b"\n"  # a whole line: damage, not a line a killed writer left unfinished
    conversation.write_bytes(damage)

    result = cli("resume", instance_id, "--offline", input="AB1234\n")

    assert result.exit_code == 0, result.stderr
    assert str(conversation) in result.stdout and "every answer is kept" in result.stdout
    assert "saved Staff ID" in result.stdout
    (aside,) = (Path(store) / "conversations").glob(f"{instance_id}.jsonl.damaged*")
    assert aside.read_bytes() == damage  # set aside as it was, never overwritten
    export = cli("export", instance_id, "--json")
    assert '"full_name": "Dana Reeve"' in export.stdout and '"staff_id": "AB1234"' in export.stdout


# --------------------------------------------------------------------------- listing past a damaged file


def test_instances_warns_about_a_damaged_file_it_cannot_list(store, cli):
    kept = cli.start(subject="ann")
    damaged = cli.start(subject="bob")
    path = _truncate(store, damaged)

    result = cli("instances")
    as_json = cli("instances", "--json")

    assert result.exit_code == 0
    assert kept in result.stdout and damaged not in result.stdout
    assert str(path) in result.stderr and "formctl store check" in result.stderr
    assert as_json.exit_code == 0 and str(path) in as_json.stderr
    assert '"instances"' in as_json.stdout  # stdout stays valid JSON


# --------------------------------------------------------------------------- a --store that is not there


@pytest.mark.parametrize("command", ["check", "reindex"])
def test_store_check_and_reindex_of_a_folder_that_is_not_there_say_so(tmp_path, command):
    missing = tmp_path / "typo"

    result = invoke("store", command, "--store", str(missing))

    assert result.exit_code == 1
    assert (
        result.stderr.startswith("error: ")
        and str(missing) in result.stderr
        and "no form store" in result.stderr.lower()
    )
    assert "reindex" not in result.stdout
    assert not missing.exists()  # a check or repair does not create a store


def test_instances_in_a_folder_that_is_not_there_notes_it(tmp_path):
    missing = tmp_path / "typo"

    result = invoke("instances", "--store", str(missing))

    assert result.exit_code == 0
    assert "no instances" in result.stdout
    assert str(missing) in result.stderr


def test_an_os_error_names_the_path_in_plain_words(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    report = blocker / "reports" / "report.xml"

    result = invoke("replay", str(ROOT / "transcripts" / "straight_through.toml"), "--junit", str(report))

    assert result.exit_code == 1
    assert result.stderr == f"error: {blocker / 'reports'}: Not a directory.\n"


# --------------------------------------------------------------------------- a lost journal


def test_store_check_reports_answers_lost_with_a_journal_and_reindex_keeps_the_evidence(store, cli):
    runner = FormRunner(
        JsonFileAdapter(store), registry=FormRegistry.from_toml(FORMS / "registry.toml"), subject="dana"
    )
    instance_id = runner.start("travel-claim").view.instance_id
    runner.fill({"full_name": "Dana Reeve"})
    runner.fill({"staff_id": "AB1234"})
    runner.adapter.close()
    journal = Path(store) / "instances" / f"{instance_id}.journal"
    assert journal.exists()
    journal.unlink()

    checked = cli("store", "check")
    reindexed = cli("store", "reindex")
    again = cli("store", "check")

    for result in (checked, reindexed, again):
        assert result.exit_code == 1, result.stdout
        assert f"{instance_id}.json" in result.stdout and "missing" in result.stdout
    assert "run formctl store reindex" not in checked.stdout
