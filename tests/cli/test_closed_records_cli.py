"""A complete or abandoned instance is a closed record: a new version of its form does not move
it unless a host asks explicitly (``formctl migrate ID --reopen``), and that is recorded
(docs/engine.md, "Host acts")."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clitools import invoke, start
from fixture_project import FORMS

pytestmark = pytest.mark.e2e  # the commands after the form's edit run in child processes

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


def formctl(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORMCTL_", "ANTHROPIC_"))}
    return subprocess.run(
        [sys.executable, "-m", "formctl.cli.app", *args, "--store", "store", "--forms", "forms"],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


@pytest.fixture
def sent_then_bumped(tmp_path) -> tuple[Path, str]:
    """A travel claim sent (complete) on version 1, then version 2 of the form, which refuses its
    team (the full name may be at most 5 characters)."""
    shutil.copytree(FORMS, tmp_path / "forms", ignore=shutil.ignore_patterns("__pycache__"))
    store = str(tmp_path / "store")
    instance_id = start(store)
    opts = ("--store", store, "--forms", str(FORMS))
    assert invoke("fill", instance_id, *CLAIM, *opts).exit_code == 0
    assert invoke("submit", instance_id, *opts).exit_code == 0
    form = tmp_path / "forms" / "travel_claim.py"
    text = form.read_text().replace("version=1,", "version=2,", 1)
    text = text.replace(
        'Annotated[str, Field(min_length=2)], label="Full name"',
        'Annotated[str, Field(min_length=2, max_length=5)], label="Full name"',
        1,
    )
    form.write_text(text)
    return tmp_path, instance_id


def test_a_sent_claim_stays_complete_and_listed_as_such_under_a_new_version_of_its_form(sent_then_bumped):
    root, instance_id = sent_then_bumped

    listed = formctl("instances", "--status", "complete", "--json", cwd=root)
    exported = json.loads(formctl("export", instance_id, "--json", cwd=root).stdout)

    assert [r["instance_id"] for r in json.loads(listed.stdout)["instances"]] == [instance_id]
    assert json.loads(formctl("instances", "--status", "stale", "--json", cwd=root).stdout)["instances"] == []
    assert (exported["status"], exported["complete"], exported["version"]) == ("complete", True, 1)
    assert exported["closed_on_version"] == 1
    assert exported["answers_as_closed"]["full_name"] == "Dana Reeve"  # as it was sent


def test_a_sent_claim_reads_as_it_was_sent_never_judged_by_the_stricter_new_version(sent_then_bumped):
    """Version 2 allows at most 5 characters of full name; the claim was sent with "Dana Reeve"
    under version 1. Its views present the answer as sent, not as invalid (docs/engine.md,
    "Closed records")."""
    root, instance_id = sent_then_bumped

    shown = formctl("inspect", instance_id, cwd=root)
    viewed = json.loads(formctl("inspect", instance_id, "--json", cwd=root).stdout)
    one = json.loads(formctl("inspect", instance_id, "--field", "full_name", "--json", cwd=root).stdout)
    exported = json.loads(formctl("export", instance_id, "--json", cwd=root).stdout)
    why = formctl("why", instance_id, "full_name", cwd=root)

    assert shown.returncode == 0, shown.stderr
    assert "closed on version 1 of its form" in shown.stdout
    assert "invalid" not in shown.stdout and "at most 5" not in shown.stdout and "undo would" not in shown.stdout
    assert viewed["closed_on_version"] == 1 and "undo_would" not in viewed
    (row,) = one["fields"]
    assert (row["status"], row["value"]) == ("filled", "Dana Reeve") and "error" not in row
    assert all(step["complete"] for step in viewed["steps"])
    assert not any(f["ask"] for f in viewed["fields"])  # nothing is asked of a closed record
    assert exported["values"]["full_name"] == "Dana Reeve" and exported["closed_on_version"] == 1
    assert why.returncode == 0 and "Dana Reeve" in why.stdout and "invalid" not in why.stdout


def test_an_abandoned_claim_on_an_older_version_reads_as_it_closed(tmp_path):
    shutil.copytree(FORMS, tmp_path / "forms", ignore=shutil.ignore_patterns("__pycache__"))
    store = str(tmp_path / "store")
    instance_id = start(store, {"full_name": "Dana Reeve", "staff_id": "AB1234"})
    opts = ("--store", store, "--forms", str(FORMS))
    assert invoke("abandon", instance_id, "--reason", "filed on paper", *opts).exit_code == 0
    form = tmp_path / "forms" / "travel_claim.py"
    text = form.read_text().replace("version=1,", "version=2,", 1)
    form.write_text(text.replace(r'r"^[A-Z]{2}\d{4}$"', r'r"^[A-Z]{3}\d{4}$"', 1))
    assert r"^[A-Z]{3}\d{4}$" in form.read_text()  # version 2 refuses the staff id given

    viewed = json.loads(formctl("inspect", instance_id, "--field", "staff_id", "--json", cwd=tmp_path).stdout)
    exported = json.loads(formctl("export", instance_id, "--json", cwd=tmp_path).stdout)

    assert (viewed["status"], viewed["closed_on_version"]) == ("abandoned", 1)
    assert (viewed["fields"][0]["status"], viewed["fields"][0]["value"]) == ("filled", "AB1234")
    assert exported["values"] == {"full_name": "Dana Reeve", "staff_id": "AB1234"}


def test_migrate_refuses_a_complete_instance_unless_asked_to_reopen_it_and_records_that(sent_then_bumped):
    root, instance_id = sent_then_bumped

    refused = formctl("migrate", instance_id, cwd=root)

    assert refused.returncode == 1
    assert refused.stderr.startswith(
        f'error: Form instance "{instance_id}" is complete: a closed record keeps version 1'
    )
    assert "--reopen" in refused.stderr and refused.stderr.count("\n") == 1
    exported = json.loads(formctl("export", instance_id, "--json", cwd=root).stdout)
    assert exported["version"] == 1 and exported["completed_at"]

    moved = formctl("migrate", instance_id, "--reopen", "--as", "Sam Jones", "--reason", "new policy", cwd=root)
    assert moved.returncode == 0, moved.stderr
    acts = json.loads(formctl("history", instance_id, "--json", cwd=root).stdout)["acts"]
    migrate = next(a for a in acts if a["act"] == "migrate")
    assert (migrate["actor"], migrate["reason"], migrate["override"], migrate["detail"]) == (
        "Sam Jones",
        "new policy",
        "--reopen",
        "version 1 → 2",
    )
    reopened = next(a for a in acts if a["act"] == "reopen")
    assert reopened["detail"].startswith("complete → active") and reopened["override"] == "--reopen"
    assert json.loads(formctl("export", instance_id, "--json", cwd=root).stdout)["status"] == "active"


# --------------------------------------------------------------------------- a start that ends the form


def test_a_models_start_that_the_seed_ends_succeeds_says_so_and_keeps_the_conversation(tmp_path):
    from clitools import formctl as formctl_here
    from fake_anthropic import FakeAnthropic, text, tool_use

    store = str(tmp_path / "store")
    seed = {"client_type": "new", "age": 12, "full_name": "Ali Khan"}
    with FakeAnthropic() as api:
        api.reply(tool_use("form_start", {"form": "client-intake", "values": seed}))
        api.reply(text("I'm sorry: the service is for adults only."))
        env = {"ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": api.url}
        ran = formctl_here(
            "run", "client-intake", "--subject", "ali", "--store", store, "--forms", str(FORMS), env=env, input=""
        )
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
    (row,) = json.loads(formctl_here("instances", "--subject", "ali", "--store", store, "--json").stdout)["instances"]
    assert row["status"] == "abandoned"
    assert (Path(store) / "conversations" / f"{row['instance_id']}.json").exists()  # the conversation is kept
    exported = json.loads(
        formctl_here("export", row["instance_id"], "--store", store, "--forms", str(FORMS), "--json").stdout
    )
    assert "full_name" not in exported["values"]
    assert ran.returncode == 0, ran.stderr


# --------------------------------------------------------------------------- one message for a stale instance


@pytest.fixture
def stale_claim(tmp_path) -> tuple[Path, str]:
    """A claim begun in a piped chat on version 1, then version 2 of the form (a shorter name)."""
    shutil.copytree(FORMS, tmp_path / "forms", ignore=shutil.ignore_patterns("__pycache__"))
    store = str(tmp_path / "store")
    began = invoke(
        "run", "travel-claim", "--subject", "dana", "--offline", "--store", store, "--forms", str(FORMS),
        input="Dana Reeve\nAB1234\n",
    )  # fmt: skip
    assert began.exit_code == 0, began.output
    (row,) = json.loads(invoke("instances", "--store", store, "--json").stdout)["instances"]
    form = tmp_path / "forms" / "travel_claim.py"
    text = form.read_text().replace("version=1,", "version=2,", 1)
    form.write_text(
        text.replace(
            'Annotated[str, Field(min_length=2)], label="Full name"',
            'Annotated[str, Field(min_length=2, max_length=5)], label="Full name"',
            1,
        )
    )
    return tmp_path, row["instance_id"]


def piped_run(root: Path, *args: str, input: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORMCTL_", "ANTHROPIC_"))}
    return subprocess.run(
        [sys.executable, "-m", "formctl.cli.app", "run", "travel-claim", "--subject", "dana", "--offline", *args,
         "--store", "store", "--forms", "forms"],
        capture_output=True, text=True, cwd=root, env=env, input=input, timeout=120,
    )  # fmt: skip


def test_a_piped_run_of_a_stale_instance_says_it_once_and_exits_1(stale_claim):
    root, instance_id = stale_claim
    conversation = root / "store" / "conversations" / f"{instance_id}.json"
    before = conversation.read_bytes()

    out = piped_run(root, input="dana@example.org\n")

    assert out.returncode == 1
    assert out.stdout == ""  # no chat opened on a form it could not continue
    assert out.stderr.count("\n") == 1 and out.stderr.count("can't be continued") == 1
    assert f"formctl migrate {instance_id}" in out.stderr and "`formctl export ID`" not in out.stderr
    assert conversation.read_bytes() == before


def test_after_moving_it_the_chat_never_says_it_cannot_be_continued(stale_claim):
    root, instance_id = stale_claim
    assert piped_run(root, input="dana@example.org\n").returncode == 1  # first without moving it

    out = piped_run(root, "--migrate", input="dana@example.org\n")

    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"moved {instance_id} from version 1 to version 2 of travel-claim")
    assert "can't be continued" not in out.stdout + out.stderr
    assert "changed since it was started" not in out.stdout
