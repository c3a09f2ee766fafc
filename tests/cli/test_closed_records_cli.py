"""A complete or abandoned instance is a closed record: a new version of its form does not move
it unless a host asks explicitly (``formctl migrate ID --reopen``), and that is recorded
(docs/engine.md, "Host acts")."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from clitools import Cli
from fixture_project import FORMS

CLAIM = [
    "full_name=Dana Reeve",
    "staff_id=AB1234",
    "email=dana@example.org",
    "destination=Leeds",
    "departure_date=2026-03-02",
    "return_date=2026-03-04",
    "purpose=client visit",
    "mode=rail",
    "ticket_reference=TR-5511",
    "total=81.25",
]


def bumped(cli: Cli, tmp_path: Path) -> Cli:
    """``cli`` with a copy of the example forms (to edit into a new version) in ``tmp_path``."""
    shutil.copytree(FORMS, tmp_path / "forms", ignore=shutil.ignore_patterns("__pycache__"))
    return cli.at(forms=tmp_path / "forms")


@pytest.fixture
def sent_then_bumped(cli, tmp_path) -> tuple[Cli, str]:
    """A travel claim sent (complete) on version 1, then version 2 of the form, which refuses its
    team (the full name may be at most 5 characters): the ``Cli`` on version 2, and the claim."""
    instance_id = cli.start()
    cli.ok("fill", instance_id, *CLAIM)
    cli.ok("submit", instance_id)
    edited = bumped(cli, tmp_path)
    form = edited.forms / "travel_claim.py"
    text = form.read_text().replace("version=1,", "version=2,", 1)
    text = text.replace(
        'Annotated[str, Field(min_length=2)], label="Full name"',
        'Annotated[str, Field(min_length=2, max_length=5)], label="Full name"',
        1,
    )
    form.write_text(text)
    return edited, instance_id


def test_a_sent_claim_stays_complete_and_listed_as_such_under_a_new_version_of_its_form(sent_then_bumped):
    v2, instance_id = sent_then_bumped

    listed = v2("instances", "--status", "complete", "--json")
    exported = v2.json("export", instance_id)

    assert [r["instance_id"] for r in json.loads(listed.stdout)["instances"]] == [instance_id]
    assert v2.json("instances", "--status", "stale")["instances"] == []
    assert (exported["status"], exported["complete"], exported["version"]) == ("complete", True, 1)
    assert exported["closed_on_version"] == 1
    assert exported["answers_as_closed"]["full_name"] == "Dana Reeve"  # as it was sent


def test_a_sent_claim_reads_as_it_was_sent_never_judged_by_the_stricter_new_version(sent_then_bumped):
    """Version 2 allows at most 5 characters of full name; the claim was sent with "Dana Reeve"
    under version 1. Its views present the answer as sent, not as invalid (docs/engine.md,
    "Closed records")."""
    v2, instance_id = sent_then_bumped

    shown = v2("inspect", instance_id)
    viewed = v2.json("inspect", instance_id)
    one = v2.json("inspect", instance_id, "--field", "full_name")
    exported = v2.json("export", instance_id)
    why = v2("why", instance_id, "full_name")

    assert shown.exit_code == 0, shown.stderr
    assert "closed on version 1 of its form" in shown.stdout
    assert "invalid" not in shown.stdout and "at most 5" not in shown.stdout and "undo would" not in shown.stdout
    assert viewed["closed_on_version"] == 1 and "undo_would" not in viewed
    (row,) = one["fields"]
    assert (row["status"], row["value"]) == ("filled", "Dana Reeve") and "error" not in row
    assert all(step["complete"] for step in viewed["steps"])
    assert not any(f["ask"] for f in viewed["fields"])  # nothing is asked of a closed record
    assert exported["values"]["full_name"] == "Dana Reeve" and exported["closed_on_version"] == 1
    assert why.exit_code == 0 and "Dana Reeve" in why.stdout and "invalid" not in why.stdout


def test_an_abandoned_claim_on_an_older_version_reads_as_it_closed(cli, tmp_path):
    instance_id = cli.start({"full_name": "Dana Reeve", "staff_id": "AB1234"})
    cli.ok("abandon", instance_id, "--reason", "filed on paper")
    v2 = bumped(cli, tmp_path)
    form = v2.forms / "travel_claim.py"
    text = form.read_text().replace("version=1,", "version=2,", 1)
    form.write_text(text.replace(r'r"^[A-Z]{2}\d{4}$"', r'r"^[A-Z]{3}\d{4}$"', 1))
    assert r"^[A-Z]{3}\d{4}$" in form.read_text()  # version 2 refuses the staff id given

    viewed = v2.json("inspect", instance_id, "--field", "staff_id")
    exported = v2.json("export", instance_id)

    assert (viewed["status"], viewed["closed_on_version"]) == ("abandoned", 1)
    assert (viewed["fields"][0]["status"], viewed["fields"][0]["value"]) == ("filled", "AB1234")
    assert exported["values"] == {"full_name": "Dana Reeve", "staff_id": "AB1234"}


def test_migrate_refuses_a_complete_instance_unless_asked_to_reopen_it_and_records_that(sent_then_bumped):
    v2, instance_id = sent_then_bumped

    refused = v2("migrate", instance_id)

    assert refused.exit_code == 1
    assert refused.stderr.startswith(
        f'error: Form instance "{instance_id}" is complete: a closed record keeps version 1'
    )
    assert "--reopen" in refused.stderr and refused.stderr.count("\n") == 1
    exported = v2.json("export", instance_id)
    assert exported["version"] == 1 and exported["completed_at"]

    moved = v2("migrate", instance_id, "--reopen", "--as", "Sam Jones", "--reason", "new policy")
    assert moved.exit_code == 0, moved.stderr
    acts = v2.json("history", instance_id)["acts"]
    migrate = next(a for a in acts if a["act"] == "migrate")
    assert (migrate["actor"], migrate["reason"], migrate["override"], migrate["detail"]) == (
        "Sam Jones",
        "new policy",
        "--reopen",
        "version 1 → 2",
    )
    reopened = next(a for a in acts if a["act"] == "reopen")
    assert reopened["detail"].startswith("complete → active") and reopened["override"] == "--reopen"
    assert v2.json("export", instance_id)["status"] == "active"


# --------------------------------------------------------------------------- a start that ends the form


def test_a_models_start_that_the_seed_ends_succeeds_says_so_and_keeps_the_conversation(cli):
    from fake_anthropic import FakeAnthropic, text, tool_use

    seed = {"client_type": "new", "age": 12, "full_name": "Ali Khan"}
    with FakeAnthropic() as api:
        api.reply(tool_use("form_start", {"form": "client-intake", "values": seed}))
        api.reply(text("I'm sorry: the service is for adults only."))
        env = {"ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": api.url}
        ran = cli("run", "client-intake", "--subject", "ali", env=env, input="")
        assert api.unexpected == []
        bodies = api.bodies

    result = next(
        json.loads(block["content"])
        for message in bodies[-1]["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    )
    assert result["status"] == "success", result
    assert result["data"]["status"] == "abandoned" and result["data"]["not_written"] == ["full_name"]
    (row,) = cli.json("instances", "--subject", "ali")["instances"]
    assert row["status"] == "abandoned"
    assert (Path(cli.store) / "conversations" / f"{row['instance_id']}.jsonl").exists()  # the conversation is kept
    exported = cli.json("export", row["instance_id"])
    assert "full_name" not in exported["values"]
    assert ran.exit_code == 0, ran.stderr


# --------------------------------------------------------------------------- one message for a stale instance


RUN = ("run", "travel-claim", "--subject", "dana", "--offline")


@pytest.fixture
def stale_claim(cli, tmp_path) -> tuple[Cli, str]:
    """A claim begun in a piped chat on version 1, then version 2 of the form (a shorter name):
    the ``Cli`` on version 2, and the claim."""
    began = cli(*RUN, input="Dana Reeve\nAB1234\n")
    assert began.exit_code == 0, began.output
    (row,) = cli.json("instances")["instances"]
    v2 = bumped(cli, tmp_path)
    form = v2.forms / "travel_claim.py"
    text = form.read_text().replace("version=1,", "version=2,", 1)
    form.write_text(
        text.replace(
            'Annotated[str, Field(min_length=2)], label="Full name"',
            'Annotated[str, Field(min_length=2, max_length=5)], label="Full name"',
            1,
        )
    )
    return v2, row["instance_id"]


@pytest.mark.e2e
def test_a_piped_run_of_a_stale_instance_says_it_once_and_exits_1(stale_claim):
    """Through the console script, in a new process, as a person meets it after the form's
    author shipped version 2: the form is imported afresh, and the exit status is the process's."""
    v2, instance_id = stale_claim
    conversation = Path(v2.store) / "conversations" / f"{instance_id}.jsonl"
    before = conversation.read_bytes()

    out = v2.process(*RUN, input="dana@example.org\n")

    assert out.returncode == 1
    assert out.stdout == ""  # no chat opened on a form it could not continue
    assert out.stderr.count("\n") == 1 and out.stderr.count("can't be continued") == 1
    assert f"formctl migrate {instance_id}" in out.stderr and "`formctl export ID`" not in out.stderr
    assert conversation.read_bytes() == before


def test_after_moving_it_the_chat_never_says_it_cannot_be_continued(stale_claim):
    v2, instance_id = stale_claim
    assert v2(*RUN, input="dana@example.org\n").exit_code == 1  # first without moving it

    out = v2(*RUN, "--migrate", input="dana@example.org\n")

    assert out.exit_code == 0, out.stderr
    assert out.stdout.startswith(f"moved {instance_id} from version 1 to version 2 of travel-claim")
    assert "can't be continued" not in out.stdout + out.stderr
    assert "changed since it was started" not in out.stdout
