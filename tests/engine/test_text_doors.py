"""Text is checked at every door: a value or argument that is not text is refused for itself alone,
nothing else is lost, and a call that fails writes nothing."""

from __future__ import annotations

import json
import os

import pytest

from clitools import ctrl_c_at_default, formctl_child, start
from fixture_project import FORMS  # noqa: E402
from formctl import FormRegistry, FormRunner, JsonFileAdapter
from formctl.agent.tools import FormTools


@pytest.fixture
def store_dir(tmp_path) -> str:
    return str(tmp_path / "store")


def json_runner(store_dir: str) -> FormRunner:
    return FormRunner(
        JsonFileAdapter(store_dir), registry=FormRegistry.from_toml(FORMS / "registry.toml"), subject="dana"
    )


def answers(store_dir: str, instance_id: str) -> dict:
    entries = json_runner(store_dir).view(instance_id).instance.entries
    return {field: log.in_force.value for field, log in entries.items() if log.in_force is not None}


@pytest.mark.parametrize("bad", ["Dana\udc80Reeve", "Dana\ud800", "Dana\x00Reeve"])
def test_a_value_that_is_not_text_is_rejected_for_its_field_alone(store_dir, bad):
    tools = FormTools(json_runner(store_dir))
    assert tools.call("form_start", {"form": "travel-claim"})["status"] == "success"
    envelope = tools.call("form_fill", {"values": {"full_name": bad, "staff_id": "AB1234"}})
    assert envelope["status"] == "success", envelope
    data = envelope["data"]
    assert data["captured"] == ["staff_id"]
    [rejected] = data["rejected"]
    assert rejected["field"] == "full_name"
    assert ("NUL" if "\x00" in bad else "not valid text") in rejected["message"]
    instance_id = json_runner(store_dir).open_instance().id
    stored = answers(store_dir, instance_id)
    assert stored.get("staff_id") == "AB1234" and "full_name" not in stored


def test_a_key_inside_a_value_is_checked_too(store_dir):
    runner = json_runner(store_dir)
    instance_id = runner.start("travel-claim").view.instance_id
    result = runner.fill({"full_name": "Dana Reeve", "staff_id": {"\udcff": 1}}, instance_id=instance_id)
    assert [r.field for r in result.rejected] == ["staff_id"]
    assert "not valid text" in result.rejected[0].message
    assert answers(store_dir, instance_id)["full_name"] == "Dana Reeve"


@pytest.mark.e2e  # the argument as the console script's argv hands it over; the others below run in process
def test_host_fill_refuses_an_argument_that_is_not_utf8_and_says_so(cli, store_dir):
    instance_id = start(store_dir)
    # "Jos\xe9" as the shell passes it: Python hands the undecodable byte over as U+DCE9
    done = cli.process("fill", instance_id, "full_name=Jos\udce9", "staff_id=AB1234")
    assert done.returncode == 1, done
    assert "not valid UTF-8" in done.stderr and "0xE9" in done.stderr and "full_name" in done.stderr
    assert "Traceback" not in done.stderr and "JSON" not in done.stderr
    assert answers(store_dir, instance_id) == {}


def test_host_fill_rejects_a_json_escaped_nul_for_that_field_and_keeps_the_rest(cli, store_dir):
    instance_id = start(store_dir)
    done = cli("fill", instance_id, 'full_name="Dana\\u0000Reeve"', "staff_id=AB1234")
    assert done.exit_code == 1, done
    assert "NUL" in done.stdout + done.stderr
    assert answers(store_dir, instance_id) == {"staff_id": "AB1234"}


def test_host_resolve_fail_refuses_a_reason_that_is_not_utf8(cli, store_dir):
    instance_id = start(store_dir)
    done = cli("resolve", instance_id, "--fail", "too dear \udce9")
    assert done.exit_code == 1, done
    assert "--fail" in done.stderr and "not valid UTF-8" in done.stderr
    assert "Traceback" not in done.stderr


# --------------------------------------------------------------------------- a failed call writes nothing


def awaiting_claim(store_dir: str) -> str:
    """A travel claim over the policy cap: it waits on the policy-cap checkpoint."""
    seed = {
        "full_name": "Dana Reeve",
        "staff_id": "AB1234",
        "email": "dana@example.org",
        "start_date": "2025-03-01",
        "return_date": "2025-03-04",
        "destination": "Leeds",
        "purpose": "Conference",
        "mode": "train",
        "ticket_reference": "TR123",
        "total": 900,
    }
    instance_id = json_runner(store_dir).start("travel-claim", seed=seed).view.instance_id
    assert json_runner(store_dir).open_instance(instance_id).status == "awaiting"
    return instance_id


@pytest.mark.parametrize("bad", ["too dear \udce9", "too\ud800", "too\x00dear", 42])
@pytest.mark.parametrize("what", ["fail", "reason", "actor"])
def test_the_runner_refuses_a_resolution_whose_words_are_not_text_and_writes_nothing(store_dir, what, bad):
    from formctl.errors import InvalidArgumentError

    instance_id = awaiting_claim(store_dir)
    before = files_of(store_dir)
    with pytest.raises(InvalidArgumentError) as refused:
        json_runner(store_dir).resolve_checkpoint(instance_id, **{what: bad})
    assert ("must be text" if bad == 42 else "NUL" if "\x00" in bad else "lone surrogate") in refused.value.message
    assert files_of(store_dir) == before
    assert json_runner(store_dir).open_instance(instance_id).status == "awaiting"


@pytest.mark.parametrize("write", ["revise", "retract", "abandon"])
def test_the_runner_refuses_a_reason_that_is_not_text_and_writes_nothing(store_dir, write):
    from formctl.errors import InvalidArgumentError

    runner = json_runner(store_dir)
    instance_id = runner.start("travel-claim", seed={"full_name": "Dana Reeve"}).view.instance_id
    before = files_of(store_dir)
    call = {
        "revise": lambda: runner.revise("full_name", "Dana R", reason="typo\udce9", instance_id=instance_id),
        "retract": lambda: runner.retract("full_name", reason="gone\udce9", instance_id=instance_id),
        "abandon": lambda: runner.abandon("dup\udce9", instance_id=instance_id),
    }[write]
    with pytest.raises(InvalidArgumentError, match="reason is not text"):
        call()
    assert files_of(store_dir) == before


@pytest.mark.parametrize(
    "args",
    [
        ["retract", "{id}", "full_name\udce9"],
        ["retract", "{id}", "full_name", "--reason", "gone \udce9"],
        ["undo", "{id}", "full_name\udce9"],
        ["redo", "{id}", "full_name\udce9"],
        ["abandon", "{id}", "--reason", "dup \udce9"],
    ],
)
def test_host_writes_refuse_arguments_that_are_not_utf8_and_say_which(cli, store_dir, args):
    instance_id = start(store_dir, {"full_name": "Dana Reeve"})
    before = files_of(store_dir)
    done = cli(*[a.format(id=instance_id) for a in args])
    assert done.exit_code == 1, done
    named = "--reason" if "--reason" in args else "FIELD"
    assert named in done.stderr and "not valid UTF-8" in done.stderr and "0xE9" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert files_of(store_dir) == before


def files_of(folder: str) -> dict[str, bytes]:
    found = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as fh:
                found[os.path.relpath(path, folder)] = fh.read()
    return found


@pytest.mark.parametrize(
    "arguments",
    [
        {"form": "no-such-form"},
        {"form": "no-such-form", "values": {"full_name": "Dana\udc80Reeve"}},
        {"form": "travel-claim", "values": ["full_name", "Dana"]},
        {"form": "travel-claim", "values": "Dana\ud800"},
        {"form": None},
        {"form": "travel-claim", "seed": {"full_name": "Dana"}},
        {"form": "../travel-claim\x00"},
    ],
)
def test_a_form_start_that_fails_leaves_no_instance_and_no_open_form(store_dir, arguments):
    runner = json_runner(store_dir)
    FormTools(runner).call("form_list", {})
    before = files_of(store_dir)
    envelope = FormTools(runner).call("form_start", arguments)
    assert envelope["status"] == "error", envelope
    json.dumps(envelope)  # the envelope itself is sendable
    assert files_of(store_dir) == before
    fresh = json_runner(store_dir)
    assert fresh.open_instance() is None
    assert fresh.adapter.find_instances() == []


def test_a_form_start_whose_seed_holds_text_that_is_not_text_starts_with_the_rest(store_dir):
    runner = json_runner(store_dir)
    envelope = FormTools(runner).call(
        "form_start", {"form": "travel-claim", "values": {"full_name": "Dana\udc80Reeve", "staff_id": "AB1234"}}
    )
    assert envelope["status"] == "success", envelope
    assert [r["field"] for r in envelope["data"]["rejected"]] == ["full_name"]
    [instance] = json_runner(store_dir).adapter.find_instances()
    assert json_runner(store_dir).open_instance().id == instance.id
    assert answers(store_dir, instance.id) == {"staff_id": "AB1234"}


# --------------------------------------------------------------------------- Ctrl-C during start-up

STARTING = """
import os, signal, sys, time
sys.argv[0] = os.path.join(os.path.dirname(sys.executable), "formctl")  # as the console script runs
import formctl.cli.app
os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while the command is still being set up
time.sleep(5)
print("still running")
"""

HANDED_BACK = """
import os, signal, sys
sys.argv[0] = os.path.join(os.path.dirname(sys.executable), "formctl")
from formctl.cli import app
try:
    app.main(["--help"])
except SystemExit:
    pass
print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)
"""


@pytest.mark.e2e
def test_ctrl_c_during_start_up_exits_130_with_no_traceback():
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", STARTING], capture_output=True, text=True, timeout=60, preexec_fn=ctrl_c_at_default
    )
    assert done.returncode == 130, done
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr
    assert "still running" not in done.stdout


@pytest.mark.e2e
def test_once_the_command_runs_ctrl_c_is_its_own_again():
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", HANDED_BACK], capture_output=True, text=True, timeout=60, preexec_fn=ctrl_c_at_default
    )
    assert done.stdout.strip().endswith("True"), done


# --------------------------------------------------------------------------- lines that are not UTF-8


@pytest.mark.e2e  # the bytes on a real process's stdin, and what reaches its stderr
def test_a_piped_line_that_is_not_utf8_is_refused_and_the_chat_goes_on(cli, store_dir):
    import subprocess

    child = formctl_child(
        "run",
        "travel-claim",
        "--offline",
        env=cli.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    stdout, stderr = child.communicate(b"Jos\xe9 Garc\xeda\nJos\xc3\xa9 Garc\xc3\xada\nJG1234\n", timeout=120)
    out, err = stdout.decode("utf-8"), stderr.decode("utf-8")
    assert child.returncode == 0, (out, err)
    # in a pipe every error line goes to stderr, where scripts look
    assert err.count("That line has characters that could not be read; please type it again.") == 1
    assert "could not be read" not in out
    assert "\ufffd" not in out
    [instance] = json_runner(store_dir).adapter.find_instances()
    assert answers(store_dir, instance.id) == {"full_name": "José García", "staff_id": "JG1234"}


# --------------------------------------------------------------------------- what goes back to the model


@pytest.mark.parametrize(
    "name, arguments",
    [
        ("form_fill", {"values": {"phone\udce9": "x", "staff_id": "AB1234"}}),
        ("form_fill", {"values": {"\ud800": 1}}),
        ("form_status", {"instance_id": "form_\udce9"}),
        ("form_revise", {"action": "undo", "field": "nope\udfff"}),
    ],
)
def test_a_name_that_is_not_text_is_sent_back_escaped_so_the_result_is_valid_utf8(store_dir, name, arguments):
    from formctl.agent.loop import tool_result_block

    tools = FormTools(json_runner(store_dir))
    assert tools.call("form_start", {"form": "travel-claim"})["status"] == "success"
    content = tool_result_block("call_1", tools.call(name, arguments))["content"]
    sent = content.encode("utf-8").decode("utf-8")  # raises if a lone surrogate got through
    bad = next(
        ch
        for key in [*arguments.get("values", {}), *arguments.values()]
        if isinstance(key, str)
        for ch in key
        if "\ud800" <= ch <= "\udfff"
    )
    assert f"\\\\u{ord(bad):04x}" in sent, sent  # named as its escape: the model sees what was sent
