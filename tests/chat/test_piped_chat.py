"""``formctl run`` with the chat piped in, as a script or CI drives it: a bad ``--seed``, Ctrl-C,
bytes that are not UTF-8, and the exit status when nothing could start.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from clitools import FORMS, formctl_child


def test_run_refuses_a_seed_for_a_field_the_form_does_not_have(store, cli):
    result = cli("run", "travel-claim", "--offline", "--seed", "nosuch=1", input="")

    assert result.exit_code == 1
    assert "nosuch" in result.stderr and "--seed" in result.stderr
    assert not (Path(store) / "instances").exists() or not list((Path(store) / "instances").glob("*.json"))


# --------------------------------------------------------------------------- Ctrl-C in the plain chat


@pytest.mark.e2e  # a real SIGINT, to a real process
def test_ctrl_c_in_the_plain_chat_still_says_how_to_carry_on(cli):
    import signal
    import subprocess

    child = formctl_child(
        "run",
        "travel-claim",
        "--offline",
        env=cli.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
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
    session = ChatSession.open(
        ChatOptions(form="travel-claim", subject="dana", offline=True, store=store, forms=str(FORMS))
    )
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


# --------------------------------------------------------------------------- bytes that are not UTF-8 on stdin


def test_a_scripted_line_that_is_not_utf8_does_not_stop_the_chat(cli):
    """(In process; the same through the real entry point, what reaches stderr included, is
    tests/engine/test_text_doors.py's piped line.)"""
    result = cli("run", "travel-claim", "--offline", input=b"Dana Reeve\n\xff\xfe\nAB1234\n")

    out, err = result.stdout, result.stderr
    assert result.exit_code == 0, (err, result.exception)
    assert "Traceback" not in err and "UnicodeEncodeError" not in err
    assert "saved Staff ID" in out and "formctl resume form_" in out


# --------------------------------------------------------------------------- exit status when nothing could start


def test_a_scripted_run_where_every_turn_failed_and_nothing_started_exits_1(cli):
    from fake_anthropic import FakeAnthropic

    with FakeAnthropic() as api:
        api.fault(401, times=5, message="invalid x-api-key")
        env = {"ANTHROPIC_API_KEY": "sk-test-not-a-real-key", "ANTHROPIC_BASE_URL": api.url}
        result = cli("run", "travel-claim", "--model", "claude-test", input="Dana Reeve\n", env=env)

    assert result.exit_code == 1, result.stdout
    assert "refused the key (401)" in result.stderr and "Nothing was started." in result.stdout
    assert "sk-test-not-a-real-key" not in result.stdout + result.stderr


def test_a_scripted_run_that_only_reads_and_leaves_exits_0(cli):
    result = cli("run", "travel-claim", "--offline", input="/help\n")

    assert result.exit_code == 0, result.stderr
