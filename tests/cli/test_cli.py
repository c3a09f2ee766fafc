"""The ``formctl`` command: every command through typer's CliRunner (or a subprocess where the
process itself is what is being tested: imports, tracebacks, colour, completion).

Every test uses a store in ``tmp_path`` and the repository's example forms (copied when a
test changes them), never the repository's own ``.formctl``.
"""

from __future__ import annotations

import getpass
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clitools import CLAIMANT, CLAIMANT_AND_TRIP, FORMS, ROOT, TRIP, invoke
from formctl.cli import app as cli
from formctl.store.conversations import ConversationStore

# What a person types into `formctl run travel-claim` to finish a claim under the cap.
CLAIM_LINES = [*CLAIMANT_AND_TRIP, "car", "120", "skip", "skip", "100", "yes"]


def ok(*args: str, input: str | None = None) -> Any:
    result = invoke(*args, input=input)
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    return result


def as_json(*args: str) -> Any:
    return json.loads(ok(*args, "--json").stdout)


# --------------------------------------------------------------------------- list, check, new


def test_list_shows_the_registered_forms_and_json_gives_their_ids():
    text = ok("list", "--forms", str(FORMS)).stdout
    assert "travel-claim" in text and "Travel reimbursement claim" in text
    data = as_json("list", "--forms", str(FORMS))
    assert [f["id"] for f in data["forms"]] == ["travel-claim", "client-intake"]
    assert data["forms"][0] == {
        "id": "travel-claim",
        "name": "Travel reimbursement claim",
        "description": "Claimant, trip, travel and approval details.",
    }


def test_list_reads_forms_from_the_current_folder_by_default(tmp_path, monkeypatch):
    shutil.copytree(FORMS, tmp_path / "forms")
    monkeypatch.chdir(tmp_path)
    assert [f["id"] for f in as_json("list")["forms"]] == ["travel-claim", "client-intake"]


def test_list_without_a_registry_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("list")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: No form registry at forms/registry.toml")
    assert "--forms" in result.stderr


def _modules_loaded(args: list[str]) -> list[str]:
    code = (
        "import sys, json\n"
        "from formctl.cli.app import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "heavy = ('pydantic', 'rich', 'prompt_toolkit', 'anthropic', 'openai', 'mcp', 'psycopg', 'travel_claim', "
        "'client_intake', 'dateparser', 'price_parser', 'number_parser', 'phonenumbers', 'rapidfuzz')\n"
        "sys.stderr.write(json.dumps(sorted({m.split('.')[0] for m in sys.modules if m.split('.')[0] in heavy})))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORMCTL_")}
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=60
    )
    return json.loads(done.stderr.strip().splitlines()[-1])


@pytest.mark.e2e
def test_list_imports_no_form_module_and_none_of_pydantic_rich_prompt_toolkit_or_anthropic():
    assert _modules_loaded(["list"]) == []
    assert _modules_loaded(["list", "--json", "--forms", str(FORMS)]) == []


@pytest.mark.e2e
def test_help_imports_none_of_pydantic_rich_prompt_toolkit_or_anthropic():
    assert _modules_loaded(["--help"]) == []
    assert _modules_loaded(["inspect", "--help"]) == []


def _commands() -> list[list[str]]:
    import typer.main

    group = typer.main.get_command(cli.app)
    names = []
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            names += [[name, sub] for sub in command.commands]
        else:
            names.append([name])
    return names


def test_every_command_has_help_with_a_real_example():
    commands = _commands()
    expected = {
        "list",
        "check",
        "new",
        "run",
        "resume",
        "instances",
        "inspect",
        "history",
        "fill",
        "undo",
        "redo",
        "retract",
        "resolve",
        "abandon",
        "export",
    }
    assert expected <= {c[0] for c in commands}
    assert ["store", "check"] in commands and ["store", "reindex"] in commands
    for command in commands:
        text = ok(*command, "--help").stdout
        assert re.search(r"Examples?:\s*\n\s+formctl " + re.escape(command[0]), text), (command, text)


def test_check_prints_the_outline_with_each_fields_type_string(cli):
    text = cli.ok("check", "travel-claim").stdout
    assert "Claimant" in text and "full_name" in text
    assert "text (min 2 chars)" in text and "email address" in text and "date (YYYY-MM-DD)" in text
    assert "policy-cap" in text
    data = cli.json("check", "travel-claim")
    fields = {f["id"]: f for s in data["steps"] for f in s["fields"]}
    assert fields["mileage"] == {
        "id": "mileage",
        "label": "Miles driven",
        "type": "integer >= 1",
        "required": False,
        "conditional": True,
        "derived": False,
    }
    assert [s["id"] for s in data["steps"]] == ["claimant", "trip", "travel", "costs"]
    assert data["checkpoints"] == [{"id": "policy-cap", "blocking": True, "waits_for_host": True}]


BROKEN_FORM = """
from formctl import define_form
broken = (define_form("broken", name="Broken").step("a", title="A")
          .field("x", str, label="X").field("x", int, label="X again").build())
"""


def test_check_of_a_form_that_does_not_compile_exits_1_with_the_definition_error(cli, tmp_path):
    forms = tmp_path / "forms"
    forms.mkdir()
    (forms / "broken.py").write_text(BROKEN_FORM)
    (forms / "registry.toml").write_text('[forms.broken]\nname = "Broken"\nmodule = "broken:broken"\n')
    broken = cli.at(forms=forms)
    result = broken("check", "broken")
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: broken: ")
    assert "x" in result.stderr and "Traceback" not in result.stderr
    data = json.loads(broken("check", "broken", "--json").stdout)
    assert data["ok"] is False and data["code"] == "form_definition_error"


def test_check_of_an_unregistered_form_is_one_line(cli):
    result = cli("check", "nope")
    assert result.exit_code == 1
    assert result.stderr == 'error: No form registered as "nope".\n'


def test_new_scaffolds_a_form_that_compiles_and_registers_it_keeping_the_registry_comments(cli, tmp_path):
    forms = tmp_path / "forms"
    shutil.copytree(FORMS, forms, ignore=shutil.ignore_patterns("__pycache__"))
    copy = cli.at(forms=forms)
    before = (forms / "registry.toml").read_text()
    out = copy.ok("new", "expense-report", "--name", "Expense report").stdout
    assert "expense_report.py" in out
    after = (forms / "registry.toml").read_text()
    assert after.startswith(before)  # appended: the comments and the other forms untouched
    assert (forms / "expense_report.py").exists()
    ids = [f["id"] for f in copy.json("list")["forms"]]
    assert ids == ["travel-claim", "client-intake", "expense-report"]
    checked = copy.json("check", "expense-report")
    assert checked["ok"] is True and checked["name"] == "Expense report"
    again = copy("new", "expense-report")
    assert again.exit_code == 1 and "already registered" in again.stderr
    bad = copy("new", "Bad Id")
    assert bad.exit_code == 1 and "not a form id" in bad.stderr


def test_a_new_form_runs_in_the_chat(tmp_path, cli):
    feedback = cli.at(forms=tmp_path / "forms")
    feedback.ok("new", "feedback")  # into a folder with no registry yet
    lines = "Dana Reeve\ndana@example.org\nquestion\nnone\nyes\n"
    out = feedback.ok("run", "feedback", "--offline", input=lines).stdout
    assert "complete" in out
    (row,) = cli.json("instances")["instances"]
    assert row["form"] == "feedback" and row["status"] == "complete"


# --------------------------------------------------------------------------- run and resume (plain mode)


def test_run_with_piped_input_completes_a_claim_with_the_guided_model(cli):
    result = cli.ok(
        "run",
        "travel-claim",
        "--offline",
        "--subject",
        "dana",
        input="\n".join(CLAIM_LINES) + "\n",
    )
    out = result.stdout
    assert out.splitlines()[0].startswith("Travel reimbursement claim")
    assert "guided offline model (--offline)" in out.splitlines()[0]
    assert "\x1b[" not in out  # plain text
    assert "· saved Full name" in out
    assert 'step 2/4 "Trip"' in out and 'step 4/4 "Costs"' in out
    assert "Done: Travel reimbursement claim" in out
    (row,) = cli.json("instances")["instances"]
    assert row["status"] == "complete" and row["subject"] == "dana"
    exported = cli.json("export", row["instance_id"])
    assert exported["values"]["full_name"] == "Dana Reeve"
    assert exported["values"]["mileage"] == 120 and exported["values"]["mileage_cost"] == 54.0
    assert exported["complete"] is True


def test_without_a_model_key_run_says_it_uses_the_guided_model(cli):
    out = cli.ok("run", "travel-claim", input="").stdout
    assert "guided offline model (no model key is set)" in out.splitlines()[0]


def test_run_continues_the_subjects_open_instance_and_resume_continues_the_conversation(store, cli):
    args = ["--offline", "--subject", "dana"]
    first = cli.ok("run", "travel-claim", *args, input="Dana Reeve\nAB1234\n").stdout
    (row,) = cli.json("instances")["instances"]
    instance_id = row["instance_id"]
    assert f"formctl resume {instance_id}" in first
    conversation = Path(store) / "conversations" / f"{instance_id}.jsonl"
    assert conversation.exists()

    second = cli.ok("run", "travel-claim", *args, input="dana@example.org\n").stdout
    assert "Work email?" in second.split("· saved")[0]  # shows what was asked before carrying on
    assert len(cli.json("instances")["instances"]) == 1
    assert "saved Work email" in second

    third = cli.ok("resume", instance_id, "--offline", input="Leeds\n").stdout
    assert "saved Destination" in third
    history = cli.json("history", instance_id)
    assert [h["field"] for h in history["fields"]] == ["full_name", "staff_id", "email", "destination"]
    saved = ConversationStore(store).load(instance_id)
    assert any("Leeds" in json.dumps(m) for m in saved)


def test_a_complete_instance_is_not_continued_a_new_one_is_started(cli):
    args = ["--offline", "--subject", "dana"]
    cli.ok("run", "travel-claim", *args, input="\n".join(CLAIM_LINES) + "\n")
    out = cli.ok("run", "travel-claim", *args, input="Sam Okafor\n").stdout
    assert "is complete, so this is a new one" in out
    rows = cli.json("instances")["instances"]
    assert sorted(r["status"] for r in rows) == ["active", "complete"]


def test_seed_values_reach_the_form_when_it_starts(cli):
    out = cli.ok(
        "run",
        "travel-claim",
        "--offline",
        "--seed",
        "mode=car",
        "--seed",
        "mileage=120",
        input="",
    ).stdout
    assert "Mode: car" in out
    (row,) = cli.json("instances")["instances"]
    view = cli.json("inspect", row["instance_id"], "--field", "mileage")
    assert view["fields"][0]["value"] == 120 and view["fields"][0]["status"] == "filled"


def test_slash_commands_work_in_plain_mode(cli):
    lines = "Dana Reeve\nAB1234\n/undo\n/history staff_id\n/status\n/inspect trip\n/nope\n/quit\nnot sent\n"
    result = cli.ok("run", "travel-claim", "--offline", input=lines)
    out = result.stdout
    assert "undid Staff ID → empty" in out
    assert "Staff ID (staff_id)" in out  # the history table
    assert "step 2/4 · Trip (trip)" in out  # /inspect trip
    assert "Unknown command /nope" in result.stderr  # in a pipe, error lines go to stderr
    (row,) = cli.json("instances")["instances"]
    view = cli.json("inspect", row["instance_id"], "--field", "staff_id")
    assert view["fields"][0]["status"] == "empty"
    history = cli.json("history", row["instance_id"], "staff_id")
    assert [r["actor"] for r in history["revisions"]] == ["agent"]  # the undo moved the cursor, kept the answer
    assert history["revisions"][0]["in_force"] is False


def test_record_writes_a_transcript_that_replays(tmp_path, cli):
    pytest.importorskip("formctl.transcripts.replay")
    path = tmp_path / "claim.toml"
    cli.ok(
        "run",
        "travel-claim",
        "--offline",
        "--record",
        str(path),
        input="\n".join(CLAIM_LINES) + "\n",
    )
    text = path.read_text()
    assert 'form = "travel-claim"' in text and "Hello." in text
    replayed = cli.ok("replay", str(path))
    assert "1 passed" in replayed.stdout or "passed" in replayed.stdout


def test_run_of_an_unknown_form_is_one_line_and_starts_nothing(cli):
    result = cli("run", "nope", input="hi\n")
    assert result.exit_code == 1 and result.stderr == 'error: No form registered as "nope".\n'


def test_resume_of_an_abandoned_instance_says_so(cli):
    instance_id = cli.start(CLAIMANT)
    cli.ok("abandon", instance_id, "--reason", "duplicate")
    result = cli("resume", instance_id, input="")
    assert result.exit_code == 1 and "was abandoned (duplicate)" in result.stderr


# --------------------------------------------------------------------------- host reads


def test_instances_filters_by_subject_form_and_status(cli):
    a = cli.start(CLAIMANT, subject="dana")
    b = cli.start(subject="sam")
    c = cli.start(subject="sam", form="client-intake")
    cli.ok("abandon", c, "--reason", "test")
    ids = lambda *args: [r["instance_id"] for r in cli.json("instances", *args)["instances"]]  # noqa: E731
    assert set(ids()) == {a, b, c}
    assert ids("--subject", "dana") == [a]
    assert set(ids("--subject", "sam")) == {b, c}
    assert ids("--form", "client-intake") == [c]
    assert ids("--status", "abandoned") == [c]
    assert len(ids("--limit", "1")) == 1
    row = cli.json("instances", "--subject", "dana")["instances"][0]
    assert row["answered"] == 3 and row["form"] == "travel-claim" and row["status"] == "active"
    bad = cli("instances", "--status", "done")
    assert bad.exit_code == 2 and "Unknown status" in bad.stderr
    assert "no instances" in cli.at(store=Path(cli.store) / "empty").ok("instances").stdout


def test_inspect_shows_the_outline_a_step_or_a_field_as_the_model_sees_it(cli):
    instance_id = cli.start(CLAIMANT)
    base = [instance_id]
    outline = cli.json("inspect", *base)
    assert [s["id"] for s in outline["steps"]] == ["claimant", "trip", "travel", "costs"]
    assert outline["steps"][0]["complete"] is True
    assert outline["instance_id"] == instance_id and outline["form"] == "travel-claim"
    assert cli.json("inspect", *base, "--outline") == outline
    step = cli.json("inspect", *base, "--step", "Trip")
    assert step["step"]["id"] == "trip" and [f["id"] for f in step["fields"]][0] == "destination"
    assert cli.json("inspect", *base, "--step", "open")["step"]["id"] == "trip"
    field = cli.json("inspect", *base, "--field", "Work email")
    assert field["fields"] == [
        {
            "id": "email",
            "label": "Work email",
            "type": "email address",
            "required": True,
            "status": "filled",
            "ask": False,
            "value": "dana@example.org",
        }
    ]
    text = cli.ok("inspect", *base).stdout
    assert "Travel reimbursement claim" in text and "dana@example.org" in text and "email address" in text
    both = cli("inspect", *base, "--step", "trip", "--field", "email")
    assert both.exit_code == 2


def test_inspect_of_a_missing_instance_is_one_line_on_stderr(cli):
    result = cli("inspect", "form_nothere_abcdef")
    assert result.exit_code == 1
    assert result.stderr == 'error: No form instance "form_nothere_abcdef".\n'
    assert result.stdout == ""


def test_history_lists_every_revision_with_who_made_it(cli):
    instance_id = cli.start({"full_name": "Dana Reve"})
    cli.ok("fill", instance_id, "full_name=Dana Reeve")
    one = cli.json("history", instance_id, "full_name")
    assert one["field"] == "full_name" and one["label"] == "Full name"
    assert [r["value"] for r in one["revisions"]] == ["Dana Reve", "Dana Reeve"]
    assert [r["in_force"] for r in one["revisions"]] == [False, True]
    assert one["revisions"][1]["actor"] == getpass.getuser() and one["revisions"][1]["source"] == "cli"
    every = cli.json("history", instance_id)
    assert [h["field"] for h in every["fields"]] == ["full_name"]
    assert "Dana Reeve" in cli.ok("history", instance_id, "full_name").stdout
    assert cli("history", instance_id, "nope").stderr == 'error: No field "nope" on this form.\n'


def test_export_gives_live_values_with_held_ones_apart(cli):
    instance_id = cli.start({**CLAIMANT, **TRIP, "mode": "car", "mileage": 120})
    data = cli.json("export", instance_id)
    assert data["values"]["mileage"] == 120 and data["values"]["mileage_cost"] == 54.0
    assert data["values"]["departure_date"] == "2026-03-02"
    assert data["held"] == {}
    cli.ok("fill", instance_id, "mode=rail")
    data = cli.json("export", instance_id)
    assert "mileage" not in data["values"]
    assert data["held"] == {"mileage": 120, "mileage_cost": 54.0}
    assert data["status"] == "active" and data["complete"] is False
    text = cli.ok("export", instance_id).stdout
    assert "held" in text and "120" in text


# --------------------------------------------------------------------------- host writes


def test_fill_parses_json_when_it_can_and_text_otherwise(cli):
    instance_id = cli.start({**CLAIMANT, **TRIP})
    result = cli.json("fill", instance_id, "mode=car", "mileage=200", "staff_id=AB1234")
    assert result["captured"] == ["mode", "mileage", "staff_id"]
    values = cli.json("export", instance_id)["values"]
    assert values["mileage"] == 200  # JSON: an integer, which the strict type accepts
    assert values["mileage_cost"] == 90.0  # its on_fill patch ran
    assert values["staff_id"] == "AB1234"  # not JSON: text


def test_fill_with_a_rejected_value_saves_the_rest_and_exits_1(cli):
    instance_id = cli.start()
    result = cli(
        "fill",
        instance_id,
        "full_name=Dana Reeve",
        "email=not-an-email",
        "nmae=x",
        "--json",
    )
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["captured"] == ["full_name"]
    assert data["rejected"][0]["field"] == "email"
    assert data["unknown_fields"][0]["field"] == "nmae"
    human = cli("fill", instance_id, "email=still-not")
    assert human.exit_code == 1 and "rejected Work email" in human.stdout
    malformed = cli("fill", instance_id, "justtext")
    assert malformed.exit_code == 1 and malformed.stderr == 'error: Expected field=value, got "justtext".\n'


def test_undo_redo_and_retract_move_through_the_answer_log(cli):
    instance_id = cli.start(CLAIMANT)
    email = lambda: cli.json("inspect", instance_id, "--field", "email")["fields"][0]  # noqa: E731
    cli.ok("fill", instance_id, "email=dana.reeve@example.org")
    undone = cli.json("undo", instance_id)
    assert undone["redo_would"] == 'email → "dana.reeve@example.org"'
    assert email()["value"] == "dana@example.org"
    cli.json("redo", instance_id, "email")
    assert email()["value"] == "dana.reeve@example.org"
    cli.json("retract", instance_id, "Work email", "--reason", "left the company")
    assert email()["status"] == "empty"
    history = cli.json("history", instance_id, "email")
    assert history["revisions"][-1]["retracted"] is True
    assert history["revisions"][-1]["note"] == "retracted: left the company"
    assert "undo would set" in cli.ok("undo", instance_id).stdout


def test_resolve_unblocks_the_waiting_checkpoint_and_fail_records_the_reason(cli):
    approved = cli.start({**CLAIMANT, **TRIP, "mode": "rail", "ticket_reference": "TR-4411", "total": 900})
    assert cli.json("inspect", approved)["status"] == "awaiting"
    waiting = cli.json("instances", "--status", "awaiting")["instances"]
    assert [r["instance_id"] for r in waiting] == [approved]
    result = cli.json("resolve", approved)
    assert result["status"] == "ready" and "blocked_on" not in result  # approved; the claimant sends it
    assert cli.json("submit", approved)["status"] == "complete"
    again = cli("resolve", approved)
    assert again.exit_code == 1 and "not waiting on a checkpoint" in again.stderr

    rejected = cli.start(
        {**CLAIMANT, **TRIP, "mode": "rail", "ticket_reference": "TR-4411", "total": 900}, subject="sam"
    )
    result = cli.json("resolve", rejected, "--fail", "needs pre-approval")
    assert result["status"] == "active"
    assert result["failures"] == [{"hook": "checkpoint:policy-cap", "message": "needs pre-approval"}]
    text = cli.ok("inspect", rejected).stdout
    assert "needs pre-approval" in text


def test_resolve_can_write_values_with_the_answer(cli):
    instance_id = cli.start({**CLAIMANT, **TRIP, "mode": "rail", "ticket_reference": "TR-4411", "total": 900})
    result = cli.json("resolve", instance_id, "meals=45.5")
    assert result["captured"] == ["meals"]
    assert {f["id"]: f.get("value") for f in result["fields"]}["meals"] == 45.5


def test_abandon_keeps_the_answers_and_later_writes_fail_in_one_line(cli):
    instance_id = cli.start(CLAIMANT)
    data = cli.json("abandon", instance_id, "--reason", "duplicate claim")
    assert data == {"instance_id": instance_id, "status": "abandoned", "closed_reason": "duplicate claim"}
    result = cli("fill", instance_id, "email=x@example.org")
    assert result.exit_code == 1
    assert result.stderr == f'error: Form instance "{instance_id}" was abandoned and no longer accepts answers.\n'
    assert cli.json("export", instance_id)["values"]["full_name"] == "Dana Reeve"
    assert cli("abandon", instance_id).exit_code == 2  # --reason is required


# --------------------------------------------------------------------------- the store


def test_store_check_and_reindex_report_a_healthy_store(cli):
    cli.start(CLAIMANT)
    report = cli.json("store", "check")
    assert report["ok"] is True and report["instances"] == 1 and report["problems"] == []
    rebuilt = cli.json("store", "reindex")
    assert rebuilt["index_rebuilt"] is True and rebuilt["instances"] == 1
    assert "1 instance(s)" in cli.ok("store", "check").stdout


def test_store_check_names_a_corrupt_file_and_exits_1(store, cli):
    good = cli.start(CLAIMANT)
    bad = cli.start(subject="sam")
    path = Path(store) / "instances" / f"{bad}.json"
    path.write_text('{"format": 1, "version": ')
    result = cli("store", "check", "--json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["ok"] is False and report["problems"][0]["path"].endswith(f"{bad}.json")
    assert path.read_text() == '{"format": 1, "version": '  # reported, never replaced
    assert cli.json("inspect", good)["instance_id"] == good
    human = cli("store", "check")
    assert human.exit_code == 1 and f"{bad}.json" in human.stdout


# --------------------------------------------------------------------------- the process: errors, colour, completion


@pytest.mark.e2e
def test_errors_are_one_line_without_a_traceback_unless_debug(cli):
    """Through the console script: --debug after the command's own options, and the traceback is
    the one Python prints for the error let through."""
    plain = cli.process("inspect", "form_nothere_abcdef")
    assert plain.returncode == 1
    assert plain.stderr == 'error: No form instance "form_nothere_abcdef".\n'
    debug = cli.process("inspect", "form_nothere_abcdef", "--debug")
    assert debug.returncode != 0 and "Traceback" in debug.stderr and "NotFoundError" in debug.stderr


def test_formctl_debug_is_read_as_each_command_runs(cli):
    """In one process (a host running the app, these tests) FORMCTL_DEBUG set for one command lets
    its error through, and set to 0 for the next, that one's error is one line again
    (tests/cli/test_debug_one_command.py: the same for --debug)."""
    from formctl.errors import NotFoundError

    from_env = cli("inspect", "form_nothere_abcdef", env={"FORMCTL_DEBUG": "1"})
    after = cli("inspect", "form_nothere_abcdef", env={"FORMCTL_DEBUG": "0"})

    assert isinstance(from_env.exception, NotFoundError)
    assert after.exit_code == 1 and after.stderr == 'error: No form instance "form_nothere_abcdef".\n'


def test_an_unexpected_error_is_still_one_line(cli):
    Path(cli.store).write_text("a file where the store folder should be")
    result = cli("instances")
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ")
    assert "Traceback" not in result.stderr


def test_output_has_no_colour_when_not_a_terminal_or_with_no_color(cli):
    instance_id = cli.start(CLAIMANT)
    piped = cli("inspect", instance_id)
    assert piped.exit_code == 0 and "dana@example.org" in piped.stdout and "\x1b[" not in piped.stdout
    forced = cli("inspect", instance_id, env={"FORCE_COLOR": "1"})
    assert "\x1b[" in forced.stdout  # colour is possible...
    no_color = cli("inspect", instance_id, env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert not re.search(r"\x1b\[[0-9;]*3[0-9](;|m)", no_color.stdout)  # ...and NO_COLOR turns it off


def _completing(words: str) -> dict[str, str]:
    """The environment bash's completion hook gives ``formctl`` for the line ``words``."""
    return {"_FORMCTL_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(len(words.split()) - 1)}


def test_tab_completion_offers_commands_form_ids_and_statuses(cli):
    assert cli.ok(env=_completing("formctl ins")).stdout.split() == ["instances", "inspect"]
    assert cli.ok(env=_completing("formctl run tr")).stdout.split() == ["travel-claim"]
    statuses = cli.ok(env=_completing("formctl instances --status a")).stdout.split()
    assert statuses == ["active", "awaiting", "abandoned"]


@pytest.mark.e2e
def test_tab_completion_through_the_console_script_offers_the_stores_instance_ids(cli):
    """The shell runs the console script with the completion variables and its own FORMCTL_STORE."""
    instance_id = cli.start(CLAIMANT)
    ids = cli.process(env=_completing("formctl inspect form_"))
    assert ids.returncode == 0, ids.stderr
    assert ids.stdout.split() == [instance_id]


def test_version_prints_the_package_version():
    assert ok("--version").stdout.startswith("formctl ")


# --------------------------------------------------------------------------- run with a model key


def test_run_with_a_model_key_talks_to_the_messages_api_and_streams_its_text(cli):
    from fake_anthropic import FakeAnthropic, text, tool_use

    with FakeAnthropic() as api:
        api.reply(tool_use("form_start", {"form": "travel-claim"}))
        api.reply(text("Welcome! What is your full name?"))
        api.reply(
            tool_use(
                "form_fill",
                {
                    "values": {"full_name": "Dana Reeve", "email": "nope"},
                    "quotes": {"full_name": "Dana Reeve", "email": "dana at example"},
                },
            )
        )
        api.reply(
            text("Thanks, Dana. That email didn't look right: what is it?"),
            usage={"input_tokens": 40, "cache_read_input_tokens": 2000, "cache_creation_input_tokens": 300},
        )
        api.fault(529, times=3)
        env = {"ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": api.url}
        result = cli(
            "run",
            "travel-claim",
            "--model",
            "claude-test",
            input="Dana Reeve, dana at example\nhello\n/usage\n",
            env=env,
        )
        bodies = api.bodies
    assert result.exit_code == 0, (result.stdout, result.stderr)
    out = result.stdout
    assert out.splitlines()[0] == "Travel reimbursement claim · model anthropic:claude-test · /help for commands"
    assert "Welcome! What is your full name?" in out
    assert "· saved Full name · rejected Work email: " in out
    assert "Thanks, Dana." in out
    # one line (on stderr: the output is piped), and the chat goes on
    assert "· The Anthropic API is overloaded (529)" in result.stderr and "(529)" not in out
    # four replies (the refused call cost nothing): /usage mid-chat, and the same line at the end
    tokens = "tokens: 340 in, 80 out, 2,000 cache reads, 300 cache writes"
    assert out.count(tokens) == 2 and out.rstrip().splitlines()[-1] == tokens
    assert bodies[0]["model"] == "claude-test"
    assert bodies[0]["messages"][0]["content"][0]["text"] == "Hello."
    tail = bodies[2]["messages"][-1]["content"][-1]["text"]  # tier 0 rides on the newest user turn
    assert tail.startswith('[form: travel-claim] step 1/4 "Claimant"')
    (row,) = cli.json("instances")["instances"]
    # the name is stored; the invalid email, which the person's words do not hold either, is not
    # (the model is told it was rejected, and asks again)
    assert row["answered"] == 1


def test_slash_undo_and_redo_of_a_named_field_say_what_it_holds_now(cli):
    lines = "Dana Reeve\nAB1234\n/undo full_name\n/redo Full name\n/undo nmae\n"
    result = cli.ok("run", "travel-claim", "--offline", input=lines)
    out = result.stdout
    assert "undid Full name → empty" in out
    assert "redid Full name → Dana Reeve" in out
    assert "no field nmae" in result.stderr  # in a pipe, error lines go to stderr


def test_in_a_fresh_clone_run_works_with_no_configuration(tmp_path, monkeypatch):
    shutil.copytree(FORMS, tmp_path / "forms", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.chdir(tmp_path)
    result = invoke("run", "travel-claim", input="Dana Reeve\n")  # no FORMCTL_* setting, no option
    assert result.exit_code == 0, result.stderr
    assert "guided offline model (no model key is set)" in result.stdout
    assert "saved Full name" in result.stdout
    assert list((tmp_path / ".formctl" / "instances").glob("form_*.json"))  # the default store, ./.formctl


@pytest.mark.e2e
def test_the_console_script_runs_sub_commands_and_suggests_on_a_typo(cli, tmp_path):
    cli.start(CLAIMANT)
    checked = cli.process("store", "check", "--json")
    assert checked.returncode == 0 and json.loads(checked.stdout)["instances"] == 1
    typo = cli.process("instnces")
    assert typo.returncode == 2 and "instances" in typo.stderr


def test_a_stale_instance_is_continued_with_a_way_out(tmp_path, cli):
    instance_id = cli.start(CLAIMANT)
    forms = tmp_path / "forms"
    shutil.copytree(FORMS, forms, ignore=shutil.ignore_patterns("__pycache__"))
    # Version 2 under the same module name: this process has imported travel_claim (version 1)
    # from the example forms, and the copy's own is what a registry of the copy must run.
    (forms / "travel_claim.py").write_text((forms / "travel_claim.py").read_text().replace("version=1,", "version=2,"))
    v2 = cli.at(forms=forms)
    first = v2("run", "travel-claim", "--offline", "--subject", "dana", input="")
    assert first.exit_code == 1 and first.stdout == ""  # one message, no chat on a form it cannot continue
    assert f"{instance_id} was started on version 1 of travel-claim" in first.stderr
    assert f"formctl abandon {instance_id} --reason REASON" in first.stderr
    v2.ok("abandon", instance_id, "--reason", "definition changed")
    second = v2.ok("run", "travel-claim", "--offline", "--subject", "dana", input="").stdout
    assert "Full name?" in second
    rows = v2.json("instances")["instances"]
    assert sorted(r["status"] for r in rows) == ["abandoned", "active"]  # read against the forms given


def test_the_activity_line_says_what_a_tool_call_saved_held_and_rejected():
    from formctl.cli.render import activity_line

    labels = {"full_name": "Full name", "email": "Work email", "mileage": "Miles driven"}
    envelope = {
        "status": "success",
        "data": {
            "captured": ["full_name", "email"],
            "held": ["mileage"],
            "rejected": [{"field": "email", "message": "not an email address"}],
            "unknown_fields": [{"field": "nmae", "did_you_mean": ["full_name"]}],
            "complete": False,
        },
    }
    assert activity_line("form_fill", envelope, labels) == (
        "saved Full name, Work email · held Miles driven · rejected Work email: not an email address"
        " · no field nmae (did you mean full_name?)"
    )
    waiting = {"status": "success", "data": {"captured": ["total"], "blocked_on": "policy-cap"}}
    assert (
        activity_line("form_fill", waiting, {"total": "Total claimed"}) == "saved Total claimed · waiting on policy-cap"
    )
    undo = {"status": "success", "data": {"complete": False}}
    assert activity_line("form_revise", undo, labels, {"action": "undo", "field": "email"}) == "undid Work email"
    error = {"status": "error", "message": 'Waiting on checkpoint "policy-cap".', "data": {"code": "form_blocked"}}
    assert activity_line("form_fill", error, labels) == 'fill failed: Waiting on checkpoint "policy-cap".'
    assert activity_line("form_status", {"status": "success", "data": {"complete": False}}, labels) == ""


def test_slash_usage_with_the_guided_model_says_it_costs_no_tokens_and_run_ends_without_a_tokens_line(cli):
    result = cli.ok("run", "travel-claim", input="Dana Reeve\n/usage\n")
    assert "No tokens: the guided model runs offline." in result.stdout
    assert not any(line.startswith("tokens:") for line in result.stdout.splitlines())
