"""``formctl program …``: the README's returning-client story runs as written, reads take
--json, bad input is one line that changes nothing, and ``formctl instances`` / ``inspect`` say
which program item an instance serves. In process (the ``cli`` fixture: the example project,
a store of the test's own); ``program list`` and ``start`` also through the real console
script (e2e)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from helpers.readme import blocks, section

SUBJECT = "firm:1/matter:2"


def test_the_readme_returning_client_story_runs_as_written(cli):
    (commands,) = blocks(section("Goal programs: an intake across forms and visits"), "sh")
    outputs = []
    for line in commands.strip().splitlines():
        words = shlex.split(line, comments=True)
        assert words[0] == "formctl"
        outputs.append(cli.ok(*words[1:]).stdout)
    show = outputs[4]
    assert "[goals: client-intake] complete · deferred: 1" in show
    assert "New documents (updates.documents) — Will send the documents tomorrow" in show
    assert "Intake [retired]" in show and "✓ Verify the client" in show

    status = cli.json("program", "show", "--subject", SUBJECT)
    assert status["version"] == 5 and status["complete"] and status["follow_ups"] == []
    docs = next(i for g in status["goals"] if g["key"] == "updates" for i in g["items"] if i["key"] == "documents")
    assert docs == {
        "key": "documents",
        "label": "New documents",
        "disposition": "completed",
        "reason": "Documents received",
    }
    history = cli.json("program", "history", "--subject", SUBJECT)["history"]
    assert [(h["version"], h["change"], h["actor"]) for h in history][:3] == [
        (1, "start", "reception"),
        (2, "update", history[1]["actor"]),
        (3, "revise", history[2]["actor"]),
    ]
    assert [h["complete"] for h in history] == [False, False, False, True, True]
    assert history[3]["follow_ups"][0]["item"] == "documents"
    cli.ok("store", "check")  # a store only programs have written is a whole store


@pytest.mark.e2e
def test_program_list_shows_registered_and_running_programs_as_json(cli):
    """Through the real console script: the program commands' one run as a user's shell runs them."""

    def ok(*args: str):
        done = cli.process(*args)
        assert done.returncode == 0, done.stderr
        return done

    listed = json.loads(ok("program", "list", "--json").stdout)
    assert [p["key"] for p in listed["programs"]] == ["client-intake"] and listed["running"] == []
    cli.ok("program", "start", "client-intake", "--subject", SUBJECT, "--key", "intake")  # (in process: set-up)
    running = json.loads(ok("program", "list", "--json").stdout)["running"]
    assert [(r["scope"]["subject"], r["scope"]["key"], r["program"], r["active_goal"]) for r in running] == [
        (SUBJECT, "intake", "client-intake", "identity")
    ]


def test_bad_input_is_one_line_and_changes_nothing(cli):
    cli.ok("program", "start", "client-intake", "--subject", SUBJECT)
    for args, message in [
        (("program", "update", "identity", "--completed", "nope"), 'Goal "identity" has no item "nope"'),
        (("program", "update", "identity", "--completed", "client", "--declined", "client"), "named twice"),
        (("program", "start", "client-intake"), "already runs"),
        (("program", "start", "no-such-program"), 'No program "no-such-program"'),
        (
            ("program", "revise", "--from", "forms/client_intake_follow_up.toml", "--if-version", "9"),
            "expected version 9",
        ),
        (("program", "revise", "--from", "forms/missing.toml", "--if-version", "1"), "Cannot read forms/missing.toml"),
    ]:
        result = cli(*args, "--subject", SUBJECT)
        assert result.exit_code == 1, (args, result.stdout)
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ") and message in result.stderr
        assert "Traceback" not in result.stderr
    assert cli.json("program", "show", "--subject", SUBJECT)["version"] == 1
    result = cli("program", "show", "--subject", "nobody")
    assert result.exit_code == 1 and "No goal program has started" in result.stderr


@pytest.mark.parametrize("command", ["show", "sync", "history"])
def test_a_scope_without_a_program_is_one_line_for_every_read(cli, command):
    cli.ok("program", "start", "client-intake", "--subject", SUBJECT)

    result = cli("program", command, "--subject", SUBJECT, "--key", "nope")

    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert result.stderr == (
        f'error: No goal program "nope" has started for "{SUBJECT}" (formctl program start PROGRAM --subject ...).\n'
    )


def test_a_locked_item_cannot_be_revised_from_the_command_line(cli, tmp_path):
    cli.ok("program", "start", "client-intake", "--subject", SUBJECT)
    edited = tmp_path / "edited.toml"
    text = (cli.forms / "client_intake_follow_up.toml").read_text()
    edited.write_text(text.replace('label = "Verify the client"', 'label = "Check their ID"'))
    result = cli("program", "revise", "--from", str(edited), "--if-version", "1", "--subject", SUBJECT)
    assert result.exit_code == 1 and 'item "identity.client" edited' in result.stderr


def test_show_json_can_be_edited_and_revised_back(cli, tmp_path, monkeypatch):
    cli.ok("program", "start", "client-intake", "--subject", SUBJECT)
    shown = cli.json("program", "show", "--subject", SUBJECT)
    shown["definition"]["goals"].append({"key": "extra", "title": "Extra", "items": [{"key": "x", "label": "X"}]})
    monkeypatch.chdir(tmp_path)  # --from names a file in the working folder
    (tmp_path / "shown.json").write_text(json.dumps(shown))
    revised = cli.json("program", "revise", "--from", "shown.json", "--if-version", "1", "--subject", SUBJECT)
    assert [g["key"] for g in revised["goals"]][-1] == "extra" and revised["version"] == 2


def test_instances_and_inspect_say_which_program_item_an_instance_serves(cli):
    cli.ok("program", "start", "client-intake", "--subject", "dana", "--key", "intake")
    instance_id = cli.start(subject="dana", form="client-intake")
    other = cli.start(subject="erin", form="client-intake")
    rows = cli.json("instances")["instances"]
    serves = {r["instance_id"]: r.get("serves") for r in rows}
    assert serves[other] is None
    assert [(s["program"], s["goal"], s["item"]) for s in serves[instance_id]] == [("client-intake", "intake", "form")]
    assert (
        f'{instance_id} serves program client-intake (dana / intake): intake.form "Client intake form"'
        in cli.ok("instances").stdout
    )
    assert "Serves program client-intake" in cli.ok("inspect", instance_id).stdout
    assert cli.json("inspect", instance_id)["serves"][0]["item"] == "form"
    shown = cli.json("program", "show", "--subject", "dana")
    form_item = shown["goals"][1]["items"][0]
    assert form_item["instance"] == instance_id and form_item["disposition"] == "pending"


def test_sync_completes_an_item_whose_form_was_completed_outside_the_program(cli):
    from formctl import FormRegistry, FormRunner, JsonFileAdapter
    from formctl.forms.instance import Commit, Provenance, now_iso

    cli.ok("program", "start", "client-intake", "--subject", "dana")
    adapter = JsonFileAdapter(cli.store)
    registry = FormRegistry.from_toml(cli.forms / "registry.toml")
    instance_id = FormRunner(adapter, registry=registry, subject="dana").start("client-intake").view.instance_id
    synced = cli.json("program", "sync", "--subject", "dana")
    assert synced["version"] == 1  # open, not complete: nothing settles, no new version
    # Completed elsewhere (a host's tooling writing the store directly, as any process may).
    instance = adapter.get_instance(instance_id)
    adapter.commit_instance(
        instance_id,
        Commit(status="complete", completed_at=now_iso()),
        if_version=instance.version,
        provenance=Provenance("test", "tester", now_iso()),
    )
    synced = cli.json("program", "sync", "--subject", "dana")
    item = synced["goals"][1]["items"][0]
    assert (synced["version"], item["disposition"], item["instance"]) == (2, "completed", instance_id)
    assert synced["change"] == "form" and item["reason"] == 'Form "client-intake" completed.'


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (b'{"format": 1, "scope": {"sub', "is corrupt (not JSON: Unterminated string"),
        (b"\xff\xfe\x00", "is corrupt (not UTF-8 text, byte 0)"),
        (b"[]", "is not a formctl goal program (format 1)"),
    ],
)
def test_a_damaged_program_file_is_one_line_naming_it_and_is_left_as_it_is(cli, store, damage, message):
    cli.ok("program", "start", "client-intake", "--subject", SUBJECT)
    (head,) = (Path(store) / "goals").glob("*[!y].json")  # the head, not a .history.jsonl
    head.write_bytes(damage)

    for command in ("show", "sync", "history"):
        result = cli("program", command, "--subject", SUBJECT)

        assert result.exit_code == 1, result.output
        assert result.stderr.startswith(f"error: The goal program file {head} {message}"), result.stderr
        assert result.stderr.count("\n") == 1
        assert head.read_bytes() == damage
