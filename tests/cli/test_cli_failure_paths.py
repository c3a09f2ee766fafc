"""QA of the ``formctl`` command as its users meet it: failure paths a form author, support
staff at a terminal and CI run into. Each test pins what the user sees.

Every test uses a store in ``tmp_path`` and the repository's example forms (copied when a
test changes them), never the repository's own ``.formctl``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clitools import FORMS, ROOT, invoke, start
from formctl import FormRegistry, FormRunner, JsonFileAdapter
from formctl.cli import app as cli


def _truncate(store: str, instance_id: str) -> Path:
    path = Path(store) / "instances" / f"{instance_id}.json"
    path.write_bytes(path.read_bytes()[:60])
    return path


def test_run_does_not_start_afresh_past_the_subjects_corrupt_open_instance(store):
    instance_id = start(store, {"full_name": "Dana Reeve", "staff_id": "AB1234"})
    path = _truncate(store, instance_id)

    result = invoke(
        "run", "travel-claim", "--offline", "--subject", "dana", "--store", store, "--forms", str(FORMS), input="Dana\n"
    )

    assert result.exit_code == 1
    assert str(path) in result.stderr and "Traceback" not in result.stderr
    assert len(list((Path(store) / "instances").glob("*.json"))) == 1  # no second instance was started


def test_a_corrupt_file_is_named_without_a_doubled_word(store):
    instance_id = start(store)
    _truncate(store, instance_id)

    result = invoke("inspect", instance_id, "--store", store, "--forms", str(FORMS))

    assert result.exit_code == 1
    assert "not valid JSON" in result.stderr
    assert " at at " not in result.stderr


@pytest.mark.parametrize("option", ["--field", "--step"])
def test_inspect_of_an_unknown_field_or_step_is_an_error(store, option):
    instance_id = start(store)

    result = invoke("inspect", instance_id, option, "emal", "--store", store, "--forms", str(FORMS))

    assert result.exit_code == 1
    assert result.stderr.startswith("error: ") and "emal" in result.stderr
    assert result.stdout == ""


def test_inspect_of_an_unknown_field_suggests_the_close_one(store):
    instance_id = start(store)

    result = invoke("inspect", instance_id, "--field", "emal", "--store", store, "--forms", str(FORMS))

    assert "email" in result.stderr


def test_run_refuses_a_seed_for_a_field_the_form_does_not_have(store):
    result = invoke(
        "run", "travel-claim", "--offline", "--store", store, "--forms", str(FORMS), "--seed", "nosuch=1", input=""
    )

    assert result.exit_code == 1
    assert "nosuch" in result.stderr and "--seed" in result.stderr
    assert not (Path(store) / "instances").exists() or not list((Path(store) / "instances").glob("*.json"))


# --------------------------------------------------------------------------- formctl new


@pytest.mark.parametrize("form_id", ["json", "email", "typing"])
def test_a_scaffold_named_like_a_python_module_still_checks(tmp_path, form_id):
    forms = tmp_path / "forms"
    shutil.copytree(FORMS, forms, ignore=shutil.ignore_patterns("__pycache__"))

    created = invoke("new", form_id, "--forms", str(forms))
    assert created.exit_code == 0, created.stderr

    checked = invoke("check", form_id, "--forms", str(forms))
    assert checked.exit_code == 0, checked.stderr


def test_new_with_a_forms_folder_says_the_next_commands_with_that_folder(tmp_path):
    forms = tmp_path / "myforms"

    result = invoke("new", "expense-report", "--forms", str(forms))

    assert result.exit_code == 0, result.stderr
    assert f"formctl check expense-report --forms {forms}" in result.stdout
    assert f"formctl run expense-report --forms {forms}" in result.stdout


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


def test_run_on_a_read_only_store_stops_before_the_chat_in_one_line(store, monkeypatch):
    instance_id = start(store, subject="ann")  # a store with an instance (and its folders) in it
    _read_only_store(monkeypatch)

    result = invoke(
        "run",
        "travel-claim",
        "--offline",
        "--subject",
        "bob",
        "--store",
        store,
        "--forms",
        str(FORMS),
        input="Bob Stone\nBS1234\n",
    )

    assert result.exit_code == 1
    assert result.stderr.startswith("error: ") and "read-only" in result.stderr
    assert result.stderr.count("\n") == 1
    assert "Bob Stone" not in result.stdout  # the person was not asked to type into a chat that cannot save
    assert [p.stem for p in (Path(store) / "instances").glob("*.json")] == [instance_id]


def test_run_with_a_store_folder_that_cannot_be_created_stops_in_one_line(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")

    result = invoke(
        "run",
        "travel-claim",
        "--offline",
        "--store",
        str(blocker / "store"),
        "--forms",
        str(FORMS),
        input="Dana Reeve\n",
    )

    assert result.exit_code == 1
    assert result.stderr.startswith("error: ") and str(blocker) in result.stderr
    assert "Nothing was started" not in result.stdout


# --------------------------------------------------------------------------- --record


def test_record_does_not_overwrite_an_existing_transcript(tmp_path, store):
    path = tmp_path / "dana.toml"
    path.write_text("# a transcript someone relies on\n")

    result = invoke(
        "run",
        "travel-claim",
        "--offline",
        "--record",
        str(path),
        "--store",
        store,
        "--forms",
        str(FORMS),
        input="Dana Reeve\n",
    )

    assert result.exit_code == 1
    assert result.stderr.startswith("error: ") and str(path) in result.stderr and "exists" in result.stderr
    assert path.read_text() == "# a transcript someone relies on\n"


def test_record_over_a_form_that_already_has_answers_says_replay_cannot_reproduce_it(tmp_path, store):
    start(store, {"full_name": "Dana Reeve"}, subject="dana")
    path = tmp_path / "later.toml"

    result = invoke(
        "run",
        "travel-claim",
        "--offline",
        "--subject",
        "dana",
        "--record",
        str(path),
        "--store",
        store,
        "--forms",
        str(FORMS),
        input="AB1234\n",
    )

    assert result.exit_code == 0, result.stderr
    assert "already has answers" in result.stdout and "replay" in result.stdout


# --------------------------------------------------------------------------- a form module that fails to import


def _broken_forms(tmp_path: Path) -> Path:
    forms = tmp_path / "forms"
    shutil.copytree(FORMS, forms, ignore=shutil.ignore_patterns("__pycache__"))
    (forms / "qa_boom.py").write_text('raise RuntimeError("kaboom at import")\n')
    with open(forms / "registry.toml", "a") as fh:
        fh.write('\n[forms.qa-boom]\nname = "Boom"\nmodule = "qa_boom:form"\n')
    return forms


def test_run_of_a_form_whose_module_raises_names_the_module(tmp_path, store):
    forms = _broken_forms(tmp_path)

    result = invoke("run", "qa-boom", "--offline", "--store", store, "--forms", str(forms), input="hi\n")

    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert '"qa_boom"' in result.stderr and "kaboom at import" in result.stderr
    assert "RuntimeError" in result.stderr


def test_check_of_a_form_whose_module_raises_names_the_module(tmp_path):
    forms = _broken_forms(tmp_path)

    result = invoke("check", "qa-boom", "--forms", str(forms))

    assert result.exit_code == 1
    assert '"qa_boom"' in result.stderr and "kaboom at import" in result.stderr


# --------------------------------------------------------------------------- what the reads show


def test_export_heads_held_values_on_one_line(store):
    instance_id = start(store, {"mode": "rail", "mileage": 40})

    result = invoke("export", instance_id, "--store", store, "--forms", str(FORMS))

    assert result.exit_code == 0, result.stderr
    assert "held (not applicable now, kept)\n" in result.stdout
    assert "mileage" in result.stdout.split("held (not applicable now, kept)")[1]


def test_the_store_group_help_has_an_example():
    result = invoke("store", "--help")

    assert result.exit_code == 0
    assert "Example" in result.stdout and "formctl store check" in result.stdout


# --------------------------------------------------------------------------- a damaged conversation file


@pytest.mark.parametrize("damage", [b'{"format": 1, "messages": [{"role": "us', b"\xff\xfe\x00", b"[]"])
def test_resume_past_a_damaged_conversation_keeps_the_answers_and_the_file(store, damage):
    first = invoke(
        "run",
        "travel-claim",
        "--offline",
        "--subject",
        "dana",
        "--store",
        store,
        "--forms",
        str(FORMS),
        input="Dana Reeve\n",
    )
    assert first.exit_code == 0, first.stderr
    (conversation,) = (Path(store) / "conversations").glob("*.json")
    instance_id = conversation.stem
    conversation.write_bytes(damage)

    result = invoke("resume", instance_id, "--offline", "--store", store, "--forms", str(FORMS), input="AB1234\n")

    assert result.exit_code == 0, result.stderr
    assert str(conversation) in result.stdout and "every answer is kept" in result.stdout
    assert "saved Staff ID" in result.stdout
    (aside,) = (Path(store) / "conversations").glob(f"{instance_id}.json.damaged*")
    assert aside.read_bytes() == damage  # set aside as it was, never overwritten
    export = invoke("export", instance_id, "--json", "--store", store, "--forms", str(FORMS))
    assert '"full_name": "Dana Reeve"' in export.stdout and '"staff_id": "AB1234"' in export.stdout


# --------------------------------------------------------------------------- Ctrl-C in the plain chat


@pytest.mark.e2e
def test_ctrl_c_in_the_plain_chat_still_says_how_to_carry_on(store):
    import os
    import signal
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORMCTL_", "ANTHROPIC_"))}
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "formctl.cli.app",
            "run",
            "travel-claim",
            "--offline",
            "--store",
            store,
            "--forms",
            str(FORMS),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    try:
        # /status runs after the turn has ended, so its last line means the chat is between
        # turns (a Ctrl-C inside a turn cancels only that turn, as in the terminal).
        child.stdin.write("Dana Reeve\n/status\n")
        child.stdin.flush()
        seen = []
        for line in child.stdout:
            seen.append(line)
            if line.startswith("undo would set"):
                break
        child.send_signal(signal.SIGINT)
        rest, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    out = "".join(seen) + rest
    assert child.returncode == 130
    assert "Traceback" not in err
    assert "saved Full name" in out
    assert "formctl resume form_" in out


def test_a_ctrl_c_python_sees_only_after_the_input_ended_still_says_how_to_carry_on(store, monkeypatch, capsys):
    """Python runs its Ctrl-C handler at its next safe point: a Ctrl-C pressed as stdin closes
    can be seen after the read returned the end of input, inside the goodbye. It still says
    how to carry on, once, and the chat ends as interrupted."""
    import io
    import sys

    from formctl.cli.chat import ChatOptions, ChatSession, PlainChat

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"Dana Reeve\n"), encoding="utf-8"))
    session = ChatSession(ChatOptions(form="travel-claim", subject="dana", offline=True, store=store, forms=str(FORMS)))
    goodbye, pressed = session.goodbye, []

    def late_ctrl_c() -> str:
        if not pressed:
            pressed.append(True)
            raise KeyboardInterrupt
        return goodbye()

    monkeypatch.setattr(session, "goodbye", late_ctrl_c)
    try:
        with pytest.raises(KeyboardInterrupt):
            PlainChat(session).converse()
    finally:
        session.close()
    out = capsys.readouterr().out
    assert "saved Full name" in out
    assert out.count("formctl resume form_") == 1


# --------------------------------------------------------------------------- fill k=v


def test_fill_sends_digits_to_a_text_field_as_text(store):
    """staff_id=123456 is a number in JSON, but the field takes text: the text is what was meant."""
    instance_id = start(store, {"full_name": "Dana Reeve"})

    result = invoke(
        "fill", instance_id, "purpose=2026", "total=812.5", "--json", "--store", store, "--forms", str(FORMS)
    )

    assert result.exit_code == 0, (result.stdout, result.stderr)
    export = invoke("export", instance_id, "--json", "--store", store, "--forms", str(FORMS))
    assert '"purpose": "2026"' in export.stdout and '"total": 812.5' in export.stdout


def test_fill_still_sends_json_where_the_field_takes_it(store):
    instance_id = start(store)

    result = invoke("fill", instance_id, "total=true", "--store", store, "--forms", str(FORMS))

    assert result.exit_code == 1  # neither true nor "true" is a number: rejected, as before
    assert "Total claimed" in result.stdout


# --------------------------------------------------------------------------- brackets in values and titles


def test_values_and_reasons_with_square_brackets_print_as_typed(store):
    instance_id = start(store, {"full_name": "Dana [x] Reeve", "destination": "[/]Paris", "purpose": "[bold]talk"})
    opts = ("--store", store, "--forms", str(FORMS))

    export = invoke("export", instance_id, *opts)
    history = invoke("history", instance_id, "destination", *opts)
    invoke("abandon", instance_id, "--reason", "dup of [form_x]", *opts)
    listing = invoke("instances", "--store", store)

    assert export.exit_code == 0, export.stderr
    assert "Dana [x] Reeve" in export.stdout and "[/]Paris" in export.stdout and "[bold]talk" in export.stdout
    assert history.exit_code == 0 and "[/]Paris" in history.stdout
    assert listing.exit_code == 0 and "dup of [form_x]" in listing.stdout


def test_check_marks_gated_steps():
    result = invoke("check", "travel-claim", "--forms", str(FORMS))

    assert result.exit_code == 0
    assert "Travel (travel) — how they travelled, mileage or ticket  [gated]" in result.stdout


# --------------------------------------------------------------------------- a form whose version moved on


def test_reading_an_instance_of_an_older_form_version_shows_its_answers_marked_stale(tmp_path, store):
    forms = tmp_path / "forms"
    shutil.copytree(FORMS, forms, ignore=shutil.ignore_patterns("__pycache__"))
    runner = FormRunner(
        JsonFileAdapter(store), registry=FormRegistry.from_toml(forms / "registry.toml"), subject="dana"
    )
    instance_id = runner.start("travel-claim", seed={"full_name": "Dana Reeve"}).view.instance_id
    module = forms / "travel_claim.py"
    module.write_text(module.read_text().replace("version=1,", "version=2,", 1))
    # A fresh module name, so this process imports the changed file rather than its cached module.
    module.rename(forms / "travel_claim_v2.py")
    registry = forms / "registry.toml"
    registry.write_text(registry.read_text().replace('"travel_claim:', '"travel_claim_v2:'))

    result = invoke("inspect", instance_id, "--store", store, "--forms", str(forms))

    # Support staff read the answers without closing the form first: marked stale, with one
    # line on stderr saying how to move it to the registered version.
    assert result.exit_code == 0 and "Dana Reeve" in result.stdout and "stale" in result.stdout
    assert result.stderr.count("\n") == 1
    assert f"formctl migrate {instance_id}" in result.stderr

    exported = invoke("export", instance_id, "--store", store, "--forms", str(forms), "--json")  # a read: it works
    assert exported.exit_code == 0
    assert (json.loads(exported.stdout)["status"], json.loads(exported.stdout)["values"]["full_name"]) == (
        "stale",
        "Dana Reeve",
    )
    invoke("abandon", instance_id, "--reason", "form changed", "--store", store, "--forms", str(forms))
    after = invoke("export", instance_id, "--store", store, "--forms", str(forms))
    assert after.exit_code == 0 and "Dana Reeve" in after.stdout and after.stderr == ""


# --------------------------------------------------------------------------- listing past a damaged file


def test_instances_warns_about_a_damaged_file_it_cannot_list(store):
    kept = start(store, subject="ann")
    damaged = start(store, subject="bob")
    path = _truncate(store, damaged)

    result = invoke("instances", "--store", store)
    as_json = invoke("instances", "--json", "--store", store)

    assert result.exit_code == 0
    assert kept in result.stdout and damaged not in result.stdout
    assert str(path) in result.stderr and "formctl store check" in result.stderr
    assert as_json.exit_code == 0 and str(path) in as_json.stderr
    assert '"instances"' in as_json.stdout  # stdout stays valid JSON


# --------------------------------------------------------------------------- check catches what run would trip on


def _forms_with(tmp_path: Path, name: str, body: str) -> Path:
    forms = tmp_path / "forms"
    shutil.copytree(FORMS, forms, ignore=shutil.ignore_patterns("__pycache__"))
    (forms / f"{name}.py").write_text(body)
    with open(forms / "registry.toml", "a") as fh:
        fh.write(f'\n[forms.{name.replace("_", "-")}]\nname = "{name}"\nmodule = "{name}:form"\n')
    return forms


def test_check_fails_a_field_type_pydantic_cannot_validate(tmp_path):
    forms = _forms_with(
        tmp_path,
        "qa_thing",
        (
            "from formctl import define_form\n"
            "class Thing:\n    pass\n"
            'form = define_form("qa-thing", version=1, name="T").step("a", title="A").field("x", Thing, label="X").build()\n'
        ),
    )

    result = invoke("check", "qa-thing", "--forms", str(forms))

    assert result.exit_code == 1
    assert result.stderr.startswith("error: qa-thing: ") and "Thing" in result.stderr and '"x"' in result.stderr
    assert result.stderr.count("\n") == 1


def test_check_fails_a_gate_that_throws_on_a_new_form(tmp_path, store):
    forms = _forms_with(
        tmp_path,
        "qa_gate",
        (
            "from formctl import define_form\n"
            'form = (define_form("qa-gate", version=1, name="G")\n'
            '    .step("a", title="A").field("x", str, label="X")\n'
            '    .step("b", title="B", when=lambda v, s: v["nosuch"] == 1).field("y", str, label="Y")\n'
            "    .build())\n"
        ),
    )

    result = invoke("check", "qa-gate", "--forms", str(forms))

    assert result.exit_code == 1
    assert "nosuch" in result.stderr
    as_json = invoke("check", "qa-gate", "--json", "--forms", str(forms))
    assert as_json.exit_code == 1 and '"ok": false' in as_json.stdout


def test_check_still_passes_the_example_forms():
    for form in ("travel-claim", "client-intake"):
        result = invoke("check", form, "--forms", str(FORMS))
        assert result.exit_code == 0, result.stderr


@pytest.mark.parametrize("spec", ["travel_claim:", ":travel_claim", "travel_claim"])
def test_a_registry_module_spec_without_both_halves_is_named_as_such(tmp_path, spec):
    forms = tmp_path / "forms"
    shutil.copytree(FORMS, forms, ignore=shutil.ignore_patterns("__pycache__"))
    (forms / "registry.toml").write_text(f'[forms.travel-claim]\nname = "T"\nmodule = "{spec}"\n')

    result = invoke("check", "travel-claim", "--forms", str(forms))

    assert result.exit_code == 1
    assert 'needs module = "module:attribute"' in result.stderr


# --------------------------------------------------------------------------- bytes that are not UTF-8 on stdin


@pytest.mark.e2e
def test_a_scripted_line_that_is_not_utf8_does_not_stop_the_chat(store):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORMCTL_", "ANTHROPIC_"))}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "formctl.cli.app",
            "run",
            "travel-claim",
            "--offline",
            "--store",
            store,
            "--forms",
            str(FORMS),
        ],
        input=b"Dana Reeve\n\xff\xfe\nAB1234\n",
        capture_output=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )

    out, err = result.stdout.decode(), result.stderr.decode()
    assert result.returncode == 0, err
    assert "Traceback" not in err and "UnicodeEncodeError" not in err
    assert "saved Staff ID" in out and "formctl resume form_" in out


# --------------------------------------------------------------------------- exit status when nothing could start


def test_a_scripted_run_where_every_turn_failed_and_nothing_started_exits_1(store):
    from fake_anthropic import FakeAnthropic

    with FakeAnthropic() as api:
        api.fault(401, times=5, message="invalid x-api-key")
        env = {"ANTHROPIC_API_KEY": "sk-test-not-a-real-key", "ANTHROPIC_BASE_URL": api.url}
        result = CliRunner().invoke(
            cli.app,
            ["run", "travel-claim", "--model", "claude-test", "--store", store, "--forms", str(FORMS)],
            input="Dana Reeve\n",
            env=env,
        )

    assert result.exit_code == 1, result.stdout
    assert "refused the key (401)" in result.stderr and "Nothing was started." in result.stdout
    assert "sk-test-not-a-real-key" not in result.stdout + result.stderr


def test_a_scripted_run_that_only_reads_and_leaves_exits_0(store):
    result = invoke("run", "travel-claim", "--offline", "--store", store, "--forms", str(FORMS), input="/help\n")

    assert result.exit_code == 0, result.stderr


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


def test_fill_with_a_blank_value_says_it_wrote_nothing_and_how_to_withdraw(store):
    instance_id = start(store, {"email": "dana@example.org"})

    result = invoke("fill", instance_id, "email=", "--store", store, "--forms", str(FORMS))

    assert result.exit_code == 0
    first = result.stdout.splitlines()[0]
    assert "Work email" in first and "blank" in first and f"formctl retract {instance_id} email" in first


# --------------------------------------------------------------------------- --help


@pytest.mark.parametrize("command", [["fill"], ["inspect"], ["history"], ["replay"], ["run"]])
def test_help_names_arguments_without_python_type_noise(command):
    result = invoke(*command, "--help")

    assert result.exit_code == 0
    assert "<str>" not in result.stdout and "<list[str]>" not in result.stdout
    assert "Example" in result.stdout


def test_an_os_error_names_the_path_in_plain_words(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    report = blocker / "reports" / "report.xml"

    result = invoke("replay", str(ROOT / "transcripts" / "straight_through.toml"), "--junit", str(report))

    assert result.exit_code == 1
    assert result.stderr == f"error: {blocker / 'reports'}: Not a directory.\n"


# --------------------------------------------------------------------------- a lost journal


def test_store_check_reports_answers_lost_with_a_journal_and_reindex_keeps_the_evidence(store):
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

    checked = invoke("store", "check", "--store", store)
    reindexed = invoke("store", "reindex", "--store", store)
    again = invoke("store", "check", "--store", store)

    for result in (checked, reindexed, again):
        assert result.exit_code == 1, result.stdout
        assert f"{instance_id}.json" in result.stdout and "missing" in result.stdout
    assert "run formctl store reindex" not in checked.stdout


# --------------------------------------------------------------------------- undo, redo, retract say what moved


def test_undo_redo_and_retract_say_which_field_now_holds_what(store):
    instance_id = start(store, {"full_name": "Dana Reeve"})
    opts = ("--store", store, "--forms", str(FORMS))
    invoke("fill", instance_id, "staff_id=AB1234", *opts)
    invoke("fill", instance_id, "staff_id=CD5678", *opts)

    undo = invoke("undo", instance_id, *opts)
    redo = invoke("redo", instance_id, "Staff ID", *opts)
    retract = invoke("retract", instance_id, "full_name", "--reason", "wrong person", *opts)

    assert undo.stdout.splitlines()[0] == "undid Staff ID → AB1234"
    assert redo.stdout.splitlines()[0] == "redid Staff ID → CD5678"
    assert retract.stdout.splitlines()[0] == "withdrew Full name → empty"


def test_retract_of_a_field_with_no_answer_writes_nothing_and_says_so(store):
    instance_id = start(store, {"full_name": "Dana Reeve"})
    opts = ("--store", store, "--forms", str(FORMS))

    result = invoke("retract", instance_id, "email", *opts)
    history = invoke("history", instance_id, "email", "--json", *opts)

    assert result.exit_code == 1
    assert result.stderr.startswith("error: ") and "Work email" in result.stderr
    assert '"revisions": []' in history.stdout


def test_history_marks_a_rejected_answer_in_words_not_only_in_red(store):
    instance_id = start(store, {"staff_id": "AB1234"})
    opts = ("--store", store, "--forms", str(FORMS))
    invoke("fill", instance_id, "staff_id=AB12", *opts)

    result = invoke("history", instance_id, "staff_id", *opts)  # not a terminal: no colour at all

    (rejected,) = [line for line in result.stdout.splitlines() if " AB12 " in line or line.rstrip().endswith("AB12")]
    assert "rejected" in rejected
    (accepted,) = [line for line in result.stdout.splitlines() if "AB1234" in line]
    assert "rejected" not in accepted


def test_inspect_with_an_empty_field_name_speaks_the_commands_language(store):
    instance_id = start(store)

    result = invoke("inspect", instance_id, "--field", "", "--store", store, "--forms", str(FORMS))

    assert result.exit_code == 2
    assert "--field" in result.stderr and "scope=" not in result.stderr
