"""``formctl run --model openai:…``, ``--record`` and ``replay --live`` against a loopback Chat
Completions server, through the real ``openai`` SDK; and the README's example session, run as
written."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from fake_anthropic import FakeAnthropic
from fake_openai import CLAIM_LINES, FakeOpenAI, script_travel_claim, text, tool_use
from fixture_project import ROOT
from formctl import JsonFileAdapter

README = Path(__file__).resolve().parents[2] / "README.md"
FAKE = Path(__file__).resolve().parents[1] / "fake_openai.py"


def test_run_with_an_openai_model_completes_a_claim_and_records_provider_and_model(cli, tmp_path):
    transcript = tmp_path / "claim.toml"
    with FakeOpenAI() as api:
        script_travel_claim(api)
        result = cli(
            "run",
            "travel-claim",
            "--model",
            "openai:some-model",
            "--subject",
            "dana",
            "--record",
            str(transcript),
            input="\n".join(CLAIM_LINES) + "\n/usage\n",
            env={"OPENAI_BASE_URL": api.base_url},
        )
        bodies = api.bodies
        assert api.pending == 0 and not api.unexpected and not api.rejected
    assert result.exit_code == 0, (result.stdout, result.stderr)
    out = result.stdout
    assert out.splitlines()[0] == "Travel reimbursement claim · model openai:some-model · /help for commands"
    assert "All done: your claim is sent." in out
    assert {b["model"] for b in bodies} == {"some-model"}
    assert "tokens: 1,352 in, 230 out, 2,048 cache reads, 0 cache writes" in out  # /usage
    (row,) = JsonFileAdapter(cli.store).find_instances()
    instance = JsonFileAdapter(cli.store).get_instance(row.id)
    assert instance.status == "complete"
    assert instance.in_force_values()["ticket_reference"] == "TR-99812"
    recorded = tomllib.loads(transcript.read_text())
    assert recorded["model"] == "openai:some-model"  # provider and model, as --model takes them
    assert recorded["usage"]["cache_read_input_tokens"] == 2048

    # the recording replays exactly, offline, with no server at all
    replayed = cli("replay", str(transcript), input="", env={})
    assert replayed.exit_code == 0, replayed.stdout + replayed.stderr


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_replay_live_plays_a_hand_written_scenario_to_either_provider(cli, tmp_path, provider):
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(
        'format = 1\nform = "travel-claim"\n\n'
        + "".join(f'[[turns]]\ntext = "{line}"\n' for line in CLAIM_LINES)
        + '[expect]\nstatus = "complete"\n\n[expect.values]\nticket_reference = "TR-99812"\ntotal = 285.5\n'
    )
    fake = FakeOpenAI if provider == "openai" else FakeAnthropic
    with fake() as api:
        script_travel_claim(api)  # both fakes take the same replies
        if provider == "openai":
            env = {"OPENAI_BASE_URL": api.base_url}
        else:
            env = {"ANTHROPIC_API_KEY": "sk-ant-test-0123456789", "ANTHROPIC_BASE_URL": api.url}
        result = cli(
            "replay",
            str(scenario),
            "--live",
            "--model",
            f"{provider}:some-model",
            input="",
            env=env,
        )
        assert not api.rejected and not api.unexpected and api.pending == 0
    assert result.exit_code == 0, result.stdout + result.stderr
    assert api.bodies and {b["model"] for b in api.bodies} == {"some-model"}


def test_replay_live_with_a_provider_whose_key_is_not_set_is_one_line(cli, tmp_path):
    scenario = tmp_path / "scenario.toml"
    scenario.write_text('format = 1\nform = "travel-claim"\n\n[[turns]]\ntext = "hi"\n\n[expect]\nstatus = "active"\n')
    result = cli("replay", str(scenario), "--live", "--model", "openai:gpt-x", input="", env={})
    assert result.exit_code == 2 and "needs OPENAI_API_KEY" in result.stderr


def test_run_with_an_unknown_provider_is_one_line_and_exit_1(cli):
    result = cli("run", "travel-claim", "--model", "gemini:pro", input="", env={})
    assert result.exit_code == 1 and 'Unknown model provider "gemini"' in result.stderr


def test_the_model_line_names_the_model_and_the_session_goes_on(cli):
    with FakeOpenAI() as api:
        api.reply(text("Hello! Where did you travel?"))
        api.reply(tool_use("form_list", {}))
        api.reply(text("There are two forms."))
        result = cli(
            "run",
            "travel-claim",
            "--model",
            "openai:llama3.1",
            input="what forms are there?\n",
            env={"OPENAI_BASE_URL": api.base_url},
        )
        assert api.requests[0].headers["authorization"] == "Bearer no-key"  # a local server needs no key
    assert result.exit_code == 0, result.stderr
    assert "model openai:llama3.1" in result.stdout.splitlines()[0]
    assert "There are two forms." in result.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _readme_session() -> str:
    text_ = README.read_text(encoding="utf-8")
    start = text_.index("\n## Other models")
    section = text_[start : text_.index("\n## ", start + 1)]
    (block,) = [b for b in re.findall(r"```sh\n(.*?)```", section, flags=re.S) if "fake_openai.py" in b]
    return block


@pytest.mark.e2e
def test_the_readme_session_runs_as_written(tmp_path):
    block = _readme_session()
    typed = block.split("<<'EOF'\n", 1)[1].split("\nEOF", 1)[0].splitlines()
    assert typed == CLAIM_LINES  # the lines the README types are the ones the server plays a model for
    port = str(_free_port())
    # The README gives the server a second to start (`& sleep 1`); here the script goes on as soon
    # as the server takes connections, which is what the second is for.
    assert "& sleep 1" in block
    ready = f"until (: </dev/tcp/127.0.0.1/{port}) 2>/dev/null; do sleep 0.02; done"
    script = (
        block.replace("python3 tests/fake_openai.py", f"{sys.executable} {FAKE}")
        .replace("11435", port)
        .replace("& sleep 1", f"& {ready}")
        .replace("formctl run", f"{sys.executable} -m formctl.cli.app run")
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORMCTL_", "ANTHROPIC_", "OPENAI_"))}
    env["FORMCTL_STORE"] = str(tmp_path / "store")
    done = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "model openai:some-model" in done.stdout
    assert "All done: your claim is sent." in done.stdout
    (instance,) = JsonFileAdapter(tmp_path / "store").find_instances()
    assert instance.status == "complete"


def test_a_refused_key_stops_the_chat_with_one_line_on_stderr_and_exit_1(cli):
    key = "sk-proj-refused-0123456789"
    with FakeOpenAI() as api:
        api.fault(401, message=f"Incorrect API key provided: {key}")
        result = cli(
            "run",
            "travel-claim",
            "--model",
            "openai:gpt-test",
            input="hello\nare you there?\n",
            env={"OPENAI_API_KEY": key, "OPENAI_BASE_URL": api.base_url},
        )
        assert len(api.bodies) == 1  # the chat stopped: the second line was never sent
    assert result.exit_code == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert errors == [errors[0]] and "refused the key (401): check OPENAI_API_KEY" in errors[0]
    assert key not in result.stderr + result.stdout
