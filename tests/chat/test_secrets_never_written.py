"""Secrets are never written down (docs/chat.md, "Secrets"): a model server that echoes the key it
was sent (a debugging proxy that copies the request's key header into the reply) plants it in
every place a model's output can reach: the streamed text, a tool call's arguments (so the values
a tool would store, and the tool's result), the reply after the tool ran; the person pastes it
too. Through the real entry point: ``formctl run --record`` (plain and ``--debug``) and
``formctl eval --record-dir``; then every file formctl wrote, and everything it printed, is
searched for the key.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from formctl.redact import MASK, StreamRedactor, redact, redact_data, register

pytestmark = pytest.mark.e2e  # formctl runs in a child process

ANTHROPIC_KEY = "sk-ant-test-PLANTED-0123456789"
OPENAI_KEY = "sk-test-PLANTED-abcdef0123456789"


def _echoing_anthropic(api) -> None:
    from fake_anthropic import text, tool_use

    api.reply(text(f"Hello! (debug: x-api-key {ANTHROPIC_KEY}) Who are you?"))
    api.reply(
        text(f"Noted {ANTHROPIC_KEY}."),
        tool_use(
            "form_start",
            {
                "form": "travel-claim",
                "values": {"full_name": f"Dana {ANTHROPIC_KEY}", "destination": ANTHROPIC_KEY},
                "quotes": {"full_name": f"Dana {ANTHROPIC_KEY}", "destination": ANTHROPIC_KEY},
            },
        ),
    )
    api.reply(text(f"Saved. Your key, once more: {ANTHROPIC_KEY}. Your staff ID?"))


def _files_holding(root: Path, secret: str) -> list[str]:
    return [str(path) for path in root.rglob("*") if path.is_file() and secret.encode() in path.read_bytes()]


@pytest.mark.parametrize("debug", [[], ["--debug"]], ids=["plain", "debug"])
def test_a_key_the_model_echoes_is_in_no_output_and_no_file(cli, tmp_path, debug):
    from fake_anthropic import FakeAnthropic

    record = tmp_path / "transcripts" / "dana.toml"
    record.parent.mkdir()
    with FakeAnthropic() as api:
        _echoing_anthropic(api)
        result = cli.process(
            *debug,
            "run",
            "travel-claim",
            "--model",
            "anthropic:claude-test",
            "--record",
            str(record),
            # The second line answers formctl's own question (the name the model gave holds the key).
            input=f"I'm Dana, my key is {ANTHROPIC_KEY}\nyes\n",
            env={"ANTHROPIC_API_KEY": ANTHROPIC_KEY, "ANTHROPIC_BASE_URL": api.url, "FORMCTL_SUBJECT": "dana"},
            cwd=tmp_path,
        )
        # It was sent with every request (the header the fake echoed) ...
        assert all(
            ANTHROPIC_KEY in r.headers.get("x-api-key", r.headers.get("authorization", "")) for r in api.requests
        )
        assert len(api.requests) >= 3 and not api.unexpected, result.stdout + result.stderr
        sent_back = [r.raw for r in api.requests[1:]]  # ... and never sent back in the conversation
    shown = result.stdout + result.stderr
    assert ANTHROPIC_KEY not in shown, shown
    assert MASK in result.stdout  # the chat went on, with the key written [secret]
    assert "saved" in result.stdout  # the tool ran, on values without the key
    assert record.exists()
    assert _files_holding(tmp_path, ANTHROPIC_KEY) == []
    assert _files_holding(Path(cli.store), ANTHROPIC_KEY) == []
    assert all(ANTHROPIC_KEY.encode() not in raw for raw in sent_back)
    for command in (["instances", "--json"], ["history", cli.only_instance(), "full_name"]):
        assert ANTHROPIC_KEY not in cli.ok(*command).stdout


def test_a_key_the_model_echoes_is_in_no_eval_record(tmp_path):
    from clitools import formctl
    from fake_openai import FakeOpenAI, text, tool_use
    from fixture_project import FORMS

    scenario = Path(__file__).resolve().parents[2] / "scenarios" / "travel_claim" / "terse_rail.toml"
    records = tmp_path / "runs"
    with FakeOpenAI() as api:
        api.reply(text(f"Hello! key={OPENAI_KEY}. Who are you?"))
        api.reply(
            tool_use(
                "form_start",
                {"form": "travel-claim", "values": {"full_name": OPENAI_KEY}, "quotes": {"full_name": OPENAI_KEY}},
            )
        )
        api.reply(text(f"And your key is {OPENAI_KEY}"))
        result = formctl(
            "eval",
            str(scenario),
            "--model",
            "openai:m",
            "--record-dir",
            str(records),
            "--json",
            env={"OPENAI_API_KEY": OPENAI_KEY, "OPENAI_BASE_URL": api.base_url, "FORMCTL_FORMS": str(FORMS)},
            cwd=tmp_path,
        )
        assert len(api.requests) >= 3
    assert OPENAI_KEY not in result.stdout + result.stderr
    assert list(records.rglob("*.toml")), result.stderr
    assert _files_holding(tmp_path, OPENAI_KEY) == []


# --------------------------------------------------------------------------- the one scrubbing point


def test_a_secret_split_between_streamed_pieces_is_caught(monkeypatch):
    monkeypatch.setenv("SOME_SERVICE_API_KEY", "sk-split-0123456789")
    stream = StreamRedactor()
    shown = "".join(stream.feed(piece) for piece in ["Your key: sk-sp", "lit-01234", "56789 ok. s"]) + stream.flush()
    assert shown == f"Your key: {MASK} ok. s"


def test_data_keeps_its_shape_and_a_registered_password_counts(monkeypatch):
    register("Summer50-Qz7wing")
    data = {"values": {"x": "pw Summer50-Qz7wing"}, "list": ["Summer50-Qz7wing", 3], "n": None}
    assert redact_data(data) == {"values": {"x": f"pw {MASK}"}, "list": [MASK, 3], "n": None}
    untouched = {"a": ["b"]}
    assert redact_data(untouched) is untouched
    monkeypatch.setenv("X_TOKEN", "1")  # too short to be anyone's secret: left alone
    assert redact("1 + 1") == "1 + 1"


def test_a_database_password_the_model_echoes_is_in_no_output_and_no_file(private_pg, tmp_path):
    """The store's password (registered when the store connects) is a secret like a key: a model
    that repeats it (in text, in a value it fills) leaves it nowhere formctl writes."""
    from clitools import formctl
    from fake_anthropic import FakeAnthropic, text, tool_use
    from fixture_project import FORMS
    from helpers.pg_cluster import PASSWORD
    from pg_server import with_options

    dsn = with_options(private_pg.tcp_dsn(), private_pg.dsn.split("options=", 1)[1].replace("%3D", "="))
    record = tmp_path / "run.toml"
    with FakeAnthropic() as api:
        api.reply(text(f"Hello! The database password is {PASSWORD}. Who are you?"))
        api.reply(
            tool_use(
                "form_start",
                {"form": "travel-claim", "values": {"destination": PASSWORD}, "quotes": {"destination": PASSWORD}},
            )
        )
        api.reply(text(f"Saved {PASSWORD}."))
        result = formctl(
            "run",
            "travel-claim",
            "--model",
            "anthropic:claude-test",
            "--record",
            str(record),
            input=f"I'm Dana, going to {PASSWORD}\n",
            env={
                "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
                "ANTHROPIC_BASE_URL": api.url,
                "FORMCTL_STORE": dsn,
                "FORMCTL_FORMS": str(FORMS),
                "FORMCTL_SUBJECT": "dana",
            },
            cwd=tmp_path,
        )
    assert PASSWORD not in result.stdout + result.stderr, result.stdout + result.stderr
    assert MASK in result.stdout and "saved" in result.stdout, result.stdout + result.stderr
    assert record.exists() and _files_holding(tmp_path, PASSWORD) == []
    from formctl.store.postgres import PostgresAdapter

    adapter = PostgresAdapter(private_pg.dsn)
    try:
        (instance,) = adapter.find_instances()
        stored = adapter.get_instance(instance.id)
        conversation = adapter.conversation_store("dana").load(instance.id)
    finally:
        adapter.close()
    assert conversation and PASSWORD not in repr(stored.entries) + repr(conversation)


def test_debugs_traceback_leaves_a_key_out(cli, tmp_path):
    result = cli.process("--debug", "inspect", f"form_{OPENAI_KEY}", env={"OPENAI_API_KEY": OPENAI_KEY}, cwd=tmp_path)
    assert result.returncode == 1
    assert "Traceback (most recent call last)" in result.stderr and MASK in result.stderr
    assert OPENAI_KEY not in result.stdout + result.stderr
