"""A chat never waits on a model for ever (docs/chat.md, "Ctrl-C"; docs/models.md, "Deadlines"),
through the real entry point against the loopback servers, for both adapters:

* a reply stream that never ends (a 200, then an empty piece every half second, each one
  restarting the SDK's read timeout) ends at ``--model-timeout`` / ``FORMCTL_MODEL_TIMEOUT`` with
  one line, and the reply that comes after it is not applied;
* Ctrl-C while the model is slow gives the prompt back within a second, in a terminal and with
  stdin piped: the request is abandoned, its reply (which comes later) dropped and nothing in it
  applied; the chat goes on; another Ctrl-C at a piped chat's next read leaves (exit 130).
"""

from __future__ import annotations

import queue
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from clitools import formctl_child

pytestmark = pytest.mark.e2e  # every test here runs formctl in a child process

START = {"form": "travel-claim", "values": {"full_name": "Dana Reeve"}, "quotes": {"full_name": "Dana Reeve"}}


def _server(provider: str):
    if provider == "anthropic":
        from fake_anthropic import FakeAnthropic, text, tool_use

        return FakeAnthropic(), text, tool_use
    from fake_openai import FakeOpenAI, text, tool_use

    return FakeOpenAI(), text, tool_use


def _model_env(provider: str, api) -> tuple[list[str], dict[str, str]]:
    if provider == "anthropic":
        return ["--model", "anthropic:claude-test"], {
            "ANTHROPIC_API_KEY": "sk-test-1234",
            "ANTHROPIC_BASE_URL": api.url,
        }
    return ["--model", "openai:m"], {"OPENAI_API_KEY": "sk-test-1234", "OPENAI_BASE_URL": api.base_url}


def _instances(cli) -> list:
    return cli.json("instances")["instances"]


def _wait_for_requests(api, n: int) -> None:
    deadline = time.monotonic() + 30
    while len(api.requests) < n:
        assert time.monotonic() < deadline, f"the chat sent {len(api.requests)} requests, not {n}"
        time.sleep(0.02)


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_reply_that_never_ends_stops_at_the_deadline_and_nothing_from_it_is_applied(provider, cli):
    api, text, tool_use = _server(provider)
    with api:
        api.reply(text("Hello! Who are you?"))
        api.trickle(60, every=0.5, late=[tool_use("form_start", START)])
        model, env = _model_env(provider, api)
        # One provider through the variable, the other through the option.
        timeout = ["--model-timeout", "2"] if provider == "anthropic" else []
        env |= {} if timeout else {"FORMCTL_MODEL_TIMEOUT": "2"}
        started = time.monotonic()
        result = cli.process("run", "travel-claim", *model, *timeout, input="I'm Dana Reeve\n", env=env)
        took = time.monotonic() - started
    assert took < 20, took  # the SDK's 60 s read timeout restarts with every piece: only the deadline ends it
    assert "did not finish its reply within 2s (--model-timeout); nothing from it was applied" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.returncode == 1  # a turn failed and nothing was started
    assert _instances(cli) == []


def _terminal_chat(provider: str, api, cli, tmp_path: Path):
    import os

    from helpers.terminal import Terminal, spawn

    model, model_env = _model_env(provider, api)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORMCTL_", "ANTHROPIC_", "OPENAI_"))}
    env.pop("NO_COLOR", None)
    env.update(cli.env, TERM="xterm-256color", FORMCTL_SUBJECT="dana", **model_env)
    child = spawn(["-m", "formctl.cli.app", "run", "travel-claim", *model], env, timeout=30)
    child.logfile_read = open(tmp_path / "terminal.log", "w", encoding="utf-8")
    return child, Terminal(child)


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_ctrl_c_in_a_terminal_abandons_the_slow_call_within_a_second(provider, cli, tmp_path):
    import pexpect

    from helpers.terminal import close

    api, text, tool_use = _server(provider)
    with api:
        api.reply(text("Hello! Who are you?"))
        api.reply(tool_use("form_start", START), delay=4.0)  # comes after the Ctrl-C: must be dropped
        api.reply(text("Who are you, then?"))
        child, term = _terminal_chat(provider, api, cli, tmp_path)
        try:
            term.expect("Who are you?")
            term.expect("you ›")
            term.say("I'm Dana Reeve")
            _wait_for_requests(api, 2)
            asked = time.monotonic()
            child.sendintr()
            term.expect("stopping…")
            term.expect("Cancelled. Every answer already given is saved.")
            assert time.monotonic() - asked < 1.5
            term.expect("you ›")
            time.sleep(max(0.0, asked + 4.5 - time.monotonic()))  # the late reply has come and gone
            term.say("Still me")
            term.expect("Who are you, then?")
            term.expect("you ›")
            child.sendeof()
            child.expect(pexpect.EOF)
        finally:
            close(child)
    assert _instances(cli) == []  # the late form_start was never run


def _lines(stream, into: queue.Queue) -> None:
    for line in iter(stream.readline, ""):
        into.put(line)
    into.put(None)


def _read_until(lines: queue.Queue, words: str, timeout: float = 30) -> str:
    seen = []
    deadline = time.monotonic() + timeout
    while True:
        line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
        assert line is not None, f"ended before {words!r}: {''.join(seen)}"
        seen.append(line)
        if words in line:
            return "".join(seen)


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_ctrl_c_in_a_piped_chat_abandons_the_slow_call_and_a_second_one_leaves(provider, cli):
    api, text, tool_use = _server(provider)
    with api:
        api.reply(text("Hello! Who are you?"))
        api.reply(tool_use("form_start", START), delay=4.0)
        api.reply(text("Who are you, then?"))
        model, env = _model_env(provider, api)
        child = formctl_child(
            "run",
            "travel-claim",
            *model,
            env={**cli.env, **env},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        out: queue.Queue = queue.Queue()
        err: queue.Queue = queue.Queue()
        for stream, into in ((child.stdout, out), (child.stderr, err)):
            threading.Thread(target=_lines, args=(stream, into), daemon=True).start()
        try:
            _read_until(out, "Who are you?")
            child.stdin.write("I'm Dana Reeve\n")
            child.stdin.flush()
            _wait_for_requests(api, 2)
            asked = time.monotonic()
            child.send_signal(signal.SIGINT)
            _read_until(err, "Cancelled. Every answer already given is saved.")
            assert time.monotonic() - asked < 1.5
            time.sleep(max(0.0, asked + 4.5 - time.monotonic()))
            child.stdin.write("Still me\n")
            child.stdin.flush()
            _read_until(out, "Who are you, then?")
            time.sleep(0.3)  # at its next read
            child.send_signal(signal.SIGINT)
            child.wait(timeout=30)
        finally:
            if child.poll() is None:
                child.kill()
    assert child.returncode == 130
    assert _instances(cli) == []
