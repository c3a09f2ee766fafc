"""The CLI, the real anthropic SDK and the loopback Messages API: a value for a source="person"
field that the person never wrote is not stored; formctl asks them, and their answer is what lands.

The chats run in process (the ``cli`` fixture: the same typer app the console script runs, the
chat piped in); the one about a real pipe on stdin runs the console script's ``main`` over one."""

from __future__ import annotations

import json
import os
import sys

import pytest

from fake_anthropic import FakeAnthropic, text, tool_use

RUN = ("run", "travel-claim", "--model", "claude-test", "--subject", "dana")


def model_env(api) -> dict[str, str]:
    return {"ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": api.url}


def run(api, cli, lines: list[str]):
    """The chat with the model behind ``api``, in process, the person's ``lines`` piped in."""
    return cli(*RUN, env=model_env(api), input="".join(f"{line}\n" for line in lines))


def only_instance(cli) -> str:
    rows = cli.json("instances")["instances"]
    assert len(rows) == 1
    return rows[0]["instance_id"]


def tool_results(body) -> list[dict]:
    return [json.loads(b["content"]) for b in body["messages"][-1]["content"] if b.get("type") == "tool_result"]


@pytest.mark.parametrize(
    "answer, stored, kind",
    [
        ("dana@finance.example.org", "dana@finance.example.org", "said"),
        ("yes", "dana.reeve@example.com", "confirmed"),
    ],
)
def test_an_email_the_person_never_wrote_is_not_stored_and_the_person_is_asked(cli, answer, stored, kind):
    with FakeAnthropic() as api:
        api.reply(tool_use("form_start", {"form": "travel-claim"}))
        api.reply(text("Your name and work email?"))
        # the model invents an address, and "quotes" words of the person's that do not hold it
        api.reply(
            tool_use(
                "form_fill",
                {
                    "values": {"full_name": "Dana Reeve", "email": "dana.reeve@example.com"},
                    "quotes": {"full_name": "Dana Reeve", "email": "Dana Reeve"},
                },
            )
        )
        api.reply(text("Thanks. Your staff ID?"))
        result = run(api, cli, ["Dana Reeve, I work in finance", answer])
        bodies = api.bodies
    assert result.exit_code == 0, result.stderr
    assert (
        '· You said "Dana Reeve". Work email: dana.reeve@example.com. Is that right? (yes, or type the address)'
    ) in result.stdout
    assert "Thanks. Your staff ID?" in result.stdout
    iid = only_instance(cli)
    history = cli.json("history", iid, "email")
    assert [r["value"] for r in history["revisions"]] == [stored]  # the invented one was never written
    provenance = history["revisions"][0]["provenance"]
    assert provenance == {"kind": kind, "quote": answer, "turn": 2, "message": answer}
    name = cli.json("history", iid, "full_name")
    assert name["revisions"][0]["provenance"]["kind"] == "said"
    # the model is told what happened, and is never shown the person's answer as its own value
    [fill] = tool_results(bodies[3])
    outcome = "confirmed" if kind == "confirmed" else "gave"
    assert {"field": "email", "outcome": outcome} == {
        k: v for k, v in fill["data"]["asked_person"][0].items() if k in ("field", "outcome")
    }
    assert "not_stored" not in fill["data"]
    assert "email" in fill["data"]["captured"]


def test_the_person_saying_no_stores_nothing_and_the_model_hears_it(cli):
    with FakeAnthropic() as api:
        api.reply(tool_use("form_start", {"form": "travel-claim"}))
        api.reply(text("Your work email?"))
        api.reply(tool_use("form_fill", {"values": {"email": "dana.reeve@example.com"}}))
        api.reply(text("Sorry, what is it?"))
        result = run(api, cli, ["it's the usual one", "no"])
        bodies = api.bodies
    assert result.exit_code == 0, result.stderr
    assert "Work email: dana.reeve@example.com. Is that right?" in result.stdout
    assert "You said" not in result.stdout  # no quote: nothing of theirs to show
    iid = only_instance(cli)
    assert cli.json("history", iid, "email")["revisions"] == []
    [fill] = tool_results(bodies[3])
    assert fill["data"]["asked_person"] == [{"field": "email", "outcome": "declined"}]
    assert fill["data"]["not_stored"] == [{"field": "email", "kind": "assumed"}]


def test_an_email_quoted_from_the_persons_words_is_stored_as_said_with_its_quote_and_turn(cli):
    with FakeAnthropic() as api:
        api.reply(tool_use("form_start", {"form": "travel-claim"}))
        api.reply(text("Your name?"))
        api.reply(tool_use("form_fill", {"values": {"full_name": "Dana Reeve"}, "quotes": {"full_name": "Dana Reeve"}}))
        api.reply(text("And your work email?"))
        api.reply(
            tool_use(
                "form_fill",
                {"values": {"email": "dana.reeve@example.com"}, "quotes": {"email": "it's Dana.Reeve@example.com"}},
            )
        )
        api.reply(text("Thanks. Your staff ID?"))
        result = run(api, cli, ["Dana Reeve", "Sure, it's Dana.Reeve@example.com at work."])
    assert result.exit_code == 0, result.stderr
    assert "Is that right?" not in result.stdout  # nothing to ask: their own words hold it
    iid = only_instance(cli)
    history = cli.json("history", iid, "email")
    [revision] = history["revisions"]
    assert revision["value"] == "dana.reeve@example.com"
    assert revision["provenance"] == {
        "kind": "said",
        "quote": "it's Dana.Reeve@example.com",
        "turn": 2,
        "message": "Sure, it's Dana.Reeve@example.com at work.",
    }
    why = cli("why", iid, "email")
    assert "said by the person, turn 2" in why.output
    assert "Sure, «it's Dana.Reeve@example.com» at work." in why.output


def test_a_recorded_confirmation_replays_and_the_replay_compares_provenance(cli, tmp_path):
    path = tmp_path / "asked.toml"
    with FakeAnthropic() as api:
        api.reply(tool_use("form_start", {"form": "travel-claim"}))
        api.reply(text("Your name and work email?"))
        api.reply(
            tool_use(
                "form_fill",
                {
                    "values": {"full_name": "Dana Reeve", "email": "dana.reeve@example.com"},
                    "quotes": {"full_name": "Dana Reeve"},
                },
            )
        )
        api.reply(text("Thanks. Your staff ID?"))
        result = cli(
            "run",
            "travel-claim",
            "--model",
            "claude-test",
            "--record",
            str(path),
            env=model_env(api),
            input="Dana Reeve\ndana@finance.example.org\n",
        )
    assert result.exit_code == 0, result.stderr
    recorded = path.read_text()
    assert 'answers = ["dana@finance.example.org"]' in recorded
    assert 'email = "said"' in recorded and 'full_name = "said"' in recorded  # [expect.provenance]
    replayed = cli("replay", str(path))
    assert replayed.exit_code == 0, replayed.stdout + replayed.stderr
    # the same conversation, but the person now only says yes: the value and its provenance differ
    path.write_text(recorded.replace('answers = ["dana@finance.example.org"]', 'answers = ["yes"]'))
    changed = cli("replay", str(path))
    assert changed.exit_code == 1
    assert "confirmed" in changed.stdout


def test_why_on_the_client_intake_after_an_offline_chat(cli):
    lines = "new\n34\nSam Lee\nsam@example.com\n"
    result = cli("run", "client-intake", "--offline", "--subject", "sam", input=lines)
    assert result.exit_code == 0, result.stderr
    iid = only_instance(cli)
    why = cli("why", iid, "email")
    assert why.exit_code == 0, why.output
    assert "Email (email): sam@example.com" in why.output
    assert "said by the person, turn 4" in why.output and "«sam@example.com»" in why.output
    age = cli.json("why", iid, "age")
    assert (age["value"], age["provenance"]) == (34, {"kind": "said", "quote": "34", "turn": 2, "message": "34"})
    assert "no answer in force" in cli("why", iid, "phone").output


def test_lines_after_the_persons_answer_to_formctl_still_reach_the_model(cli, monkeypatch, capfd):
    # formctl's own question reads its answer from the same stdin as the chat: the lines after
    # it must not be swallowed (piped input arrives all at once). So stdin is a real pipe, opened
    # as Python opens a process's stdin (a text layer over a buffered reader, both of which read
    # ahead), and the app runs as the console script runs it (formctl.cli.app.main): typer's
    # CliRunner would hand the chat an in-memory stream instead. In this process: a child only
    # repeated what the pipe is here, and paid 1.5 CPU-s importing the anthropic SDK again.
    from formctl.cli.app import main

    read_end, write_end = os.pipe()
    os.write(write_end, b"it's the usual one\nyes\nAB1234\n")
    os.close(write_end)
    with FakeAnthropic() as api, open(read_end, encoding="utf-8") as stdin:
        api.reply(tool_use("form_start", {"form": "travel-claim"}))
        api.reply(text("Your work email?"))
        api.reply(tool_use("form_fill", {"values": {"email": "dana.reeve@example.com"}}))
        api.reply(text("Thanks. Your staff ID?"))
        api.reply(text("Got it."))
        for name, value in {**cli.env, **model_env(api)}.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setattr(sys, "stdin", stdin)
        capfd.readouterr()
        with pytest.raises(SystemExit) as done:
            main(list(RUN))
        out, err = capfd.readouterr()
        bodies = api.bodies
    assert done.value.code == 0, err
    person = [
        block.get("text")
        for b in bodies
        for block in b["messages"][-1]["content"]
        if b["messages"][-1]["role"] == "user" and block.get("type") == "text"
    ]
    assert "AB1234" in person, person
    assert "Got it." in out


def test_an_answer_to_formctls_own_question_is_checked_like_any_line(cli):
    """A line holding a NUL, typed at "Full name: Zoe Ang. Is that right?", is not stored, and
    neither the chat nor the tool result says it was."""
    with FakeAnthropic() as api:
        api.reply(tool_use("form_start", {"form": "travel-claim", "values": {"full_name": "Zoe Ang"}}))
        api.reply(text("Your staff ID?"))
        result = run(api, cli, ["a\x00b"])
        bodies = api.bodies
    assert result.exit_code == 0, result.stderr
    assert "Full name: Zoe Ang. Is that right?" in result.stdout
    assert "saved Full name" not in result.stdout
    iid = only_instance(cli)
    exported = cli.json("export", iid)
    assert exported["values"].get("full_name") is None
    [start] = tool_results(bodies[1])
    assert "full_name" not in start["data"].get("captured", [])
    assert all(row["outcome"] not in ("gave", "confirmed") for row in start["data"]["asked_person"])


def test_a_seed_is_a_hosts_value_not_the_persons_words(cli):
    """``--seed`` values are on the chat's opening lines, not typed by the person: a seeded field
    only the person may give is asked about (EOF: not stored), never stored as said."""
    done = cli(
        "run",
        "travel-claim",
        "--offline",
        "--seed",
        "email=dana@example.org",
        "--seed",
        "total=9999",
        "--subject",
        "dana",
        input="yes\n",
    )
    assert done.exit_code == 0, done.stderr
    assert "Work email: dana@example.org. Is that right?" in done.stdout
    iid = only_instance(cli)
    email = cli.json("history", iid, "email")
    assert [r["provenance"]["kind"] for r in email["revisions"]] == ["confirmed"]
    assert email["revisions"][0]["provenance"]["quote"] == "yes"
    total = cli.json("history", iid, "total")
    assert total["revisions"] == []  # asked, and the input ended: nothing stored as theirs
    why = cli("why", iid, "total")
    assert "said by the person" not in why.output


def test_a_seed_given_when_a_chat_is_continued_is_the_hosts_value_too(cli):
    """``formctl run FORM --seed`` that continues an open instance carries the seeds under the
    chat's opening line as a new chat does: stored as the host's seed, not as the person's words,
    and the greeting above them is not taken as the answer to the question shown last."""
    begun = cli("run", "travel-claim", "--offline", "--subject", "r3", input="Dana Reeve\nAB1234\n")
    assert begun.exit_code == 0, begun.stderr
    iid = only_instance(cli)
    went_on = cli(
        "run",
        "travel-claim",
        "--offline",
        "--seed",
        "destination=Leeds",
        "--subject",
        "r3",
        input="dana@example.org\n",
    )
    assert went_on.exit_code == 0, went_on.stderr
    assert only_instance(cli) == iid  # continued, not a second instance
    destination = cli.json("history", iid, "destination")
    assert [r["provenance"]["kind"] for r in destination["revisions"]] == ["seed"]
    email = cli.json("history", iid, "email")
    assert [r["value"] for r in email["revisions"]] == ["dana@example.org"]  # "Hello." was not an answer
    assert "said by the person" not in cli("why", iid, "destination").output


def test_why_says_a_seed_was_given_when_a_chat_continued_the_form_not_when_it_started(cli):
    """The moment a seed was given is recorded (provenance ``moment``): with the form's start, or
    with a chat that continued it. Before, ``why`` said "given when the form started" of both."""
    begun = cli(
        "run",
        "travel-claim",
        "--offline",
        "--seed",
        "purpose=client visit",
        "--subject",
        "r3",
        input="Dana Reeve\nAB1234\n",
    )
    assert begun.exit_code == 0, begun.stderr
    iid = only_instance(cli)
    went_on = cli("run", "travel-claim", "--offline", "--seed", "destination=Leeds", "--subject", "r3", input="")
    assert went_on.exit_code == 0, went_on.stderr

    at_start = cli("why", iid, "purpose").output
    later = cli("why", iid, "destination").output
    destination = cli.json("history", iid, "destination")
    purpose = cli.json("history", iid, "purpose")

    assert "given when the form started" in at_start
    assert "given by the host when a chat continued the form" in later and "when the form started" not in later
    assert [r["provenance"] for r in purpose["revisions"]] == [{"kind": "seed", "moment": "start"}]
    assert [r["provenance"] for r in destination["revisions"]] == [{"kind": "seed", "moment": "continued"}]


def test_a_seed_stored_before_its_moment_was_recorded_claims_no_moment(cli):
    from formctl import JsonFileAdapter
    from formctl.forms.instance import Entry, FieldLog, Provenance

    old = Provenance("chat", "agent", "2026-11-30T10:00:00Z", kind="seed")  # as stored before: no moment
    instance = JsonFileAdapter(cli.store).create_instance(
        "travel-claim", 1, "r3", old, entries={"destination": FieldLog((Entry(1, "Leeds", old),), 0)}
    )

    why = cli("why", instance.id, "destination")

    assert why.exit_code == 0, why.output
    assert "given by the host as a seed" in why.output and "when the form started" not in why.output


def test_a_refused_answer_to_formctls_question_is_said_in_plain_words(cli):
    with FakeAnthropic() as api:
        api.reply(tool_use("form_start", {"form": "travel-claim"}))
        api.reply(text("Your costs?"))
        api.reply(tool_use("form_fill", {"values": {"total": 300}}))
        api.reply(text("Thanks."))
        # "three hundred" would be read now (issue 37): "lots" is no number in any words
        result = run(api, cli, ["it was three hundred", "lots", "300"])
    assert result.exit_code == 0, result.stderr
    assert "Total claimed should be a number, like 12.50. Total claimed: 300. Is that right?" in result.stdout
    assert "Input should be" not in result.stdout
    iid = only_instance(cli)
    assert cli.json("export", iid)["values"]["total"] == 300
