"""Resolving is a host's recorded act, through the ``formctl`` command: the claimant cannot resolve
their own claim, a form author playing the host can, every resolution shows who, when and why,
and a decision binds to what it decided on.
"""

from __future__ import annotations

from clitools import FORMS, OVER_CAP_LINES, invoke

CLAIMANT = {"full_name": "Dana Reeve", "staff_id": "AB1234", "email": "dana@example.org"}
TRIP = {"destination": "Leeds", "departure_date": "2026-03-02", "return_date": "2026-03-04", "purpose": "client visit"}
CLAIM = {**CLAIMANT, **TRIP, "mode": "rail", "ticket_reference": "TR-5511"}


# --------------------------------------------------------------------------- resolving is a host's act


def claim_over_the_cap(cli) -> str:
    result = cli("run", "travel-claim", "--subject", "dana", input="\n".join(OVER_CAP_LINES) + "\n")
    assert result.exit_code == 0, result.output
    (row,) = cli.json("instances")["instances"]
    assert row["status"] == "awaiting"
    return row["instance_id"]


def test_the_claimant_cannot_resolve_their_own_claim_in_formctl_run(cli):
    instance_id = claim_over_the_cap(cli)

    result = cli("run", "travel-claim", "--subject", "dana", input="/resolve\n")

    assert (
        f'error: Only a host can resolve "policy-cap": from a host\'s terminal, run formctl resolve {instance_id}'
    ) in result.output
    exported = cli.json("export", instance_id)
    assert exported["status"] == "awaiting" and "resolutions" not in exported


def test_a_form_author_playing_the_host_can_resolve_and_the_status_bar_says_so(cli):
    import getpass

    instance_id = claim_over_the_cap(cli)

    result = cli("run", "travel-claim", "--subject", "dana", "--as-host", input="/resolve --reason 'trial run'\n")

    assert result.exit_code == 0, result.output
    assert "playing the host" in result.output
    assert '[as host] [form: travel-claim] awaiting "policy-cap"' in result.output
    assert "checkpoint approved · [as host] [form: travel-claim] ready to send" in result.output
    (decision,) = cli.json("inspect", instance_id)["resolutions"]
    assert (decision["outcome"], decision["actor"], decision["reason"]) == ("approved", getpass.getuser(), "trial run")


def test_resolve_in_a_chat_whose_store_and_forms_come_from_the_environment(cli, store, monkeypatch):
    # FORMCTL_STORE and FORMCTL_FORMS are the chat's own settings, not options typed after /resolve.
    instance_id = claim_over_the_cap(cli)
    monkeypatch.setenv("FORMCTL_STORE", store)
    monkeypatch.setenv("FORMCTL_FORMS", str(FORMS))

    result = invoke("run", "travel-claim", "--subject", "dana", "--as-host", input="/resolve --reason 'trial run'\n")

    assert result.exit_code == 0, result.output
    assert "takes no" not in result.output
    (decision,) = cli.json("inspect", instance_id)["resolutions"]
    assert (decision["outcome"], decision["reason"]) == ("approved", "trial run")


def test_resolve_in_a_chat_still_refuses_a_store_typed_after_it(cli):
    claim_over_the_cap(cli)

    result = cli("run", "travel-claim", "--subject", "dana", "--as-host", input=f"/resolve --store {cli.store}\n")

    assert "/resolve takes no store in a chat." in result.output


def test_every_resolution_shows_who_when_and_why_in_inspect_history_and_export(cli):
    instance_id = claim_over_the_cap(cli)
    rejected = cli("resolve", instance_id, "--fail", "needs pre-approval", "--as", "Sam Jones")
    assert rejected.exit_code == 0, rejected.output
    approved = cli(
        "resolve",
        instance_id,
        "--checkpoint",
        "policy-cap",
        "--as",
        "Kim Lee",
        "--reason",
        "pre-approved by email",
    )
    assert approved.exit_code == 0, approved.output

    expected = [
        ("policy-cap", 1, "rejected", "Sam Jones", "needs pre-approval"),
        ("policy-cap", 1, "approved", "Kim Lee", "pre-approved by email"),
    ]
    for command in ("inspect", "history", "export"):
        decisions = cli.json(command, instance_id)["resolutions"]
        assert [
            (d["checkpoint"], d["occurrence"], d["outcome"], d["actor"], d["reason"]) for d in decisions
        ] == expected
        assert decisions[0]["at"] < decisions[1]["at"]
        text = cli(command, instance_id).output
        assert "checkpoint decisions" in text
        assert "Sam Jones" in text and "needs pre-approval" in text and "Kim Lee" in text, command
    assert cli.json("export", instance_id)["status"] == "ready"  # approved; the claimant sends it


def test_a_resolution_without_as_is_recorded_as_the_login_name(cli):
    import getpass

    instance_id = claim_over_the_cap(cli)
    assert cli("resolve", instance_id).exit_code == 0
    (decision,) = cli.json("export", instance_id)["resolutions"]
    assert (decision["outcome"], decision["actor"]) == ("approved", getpass.getuser())
    assert "reason" not in decision
    both = cli("resolve", instance_id, "--fail", "x", "--reason", "y")
    assert both.exit_code == 2 and "not both" in both.output


def test_a_recorded_transcript_carries_who_resolved_and_replays(cli, tmp_path):
    path = tmp_path / "cap.toml"
    lines = OVER_CAP_LINES + ["/resolve --reason 'fine for a trial'"]
    result = cli(
        "run",
        "travel-claim",
        "--subject",
        "dana",
        "--as-host",
        "--record",
        str(path),
        input="\n".join(lines) + "\n",
    )
    assert result.exit_code == 0, result.output

    text = path.read_text()
    assert 'action = "resolve"' in text and 'reason = "fine for a trial"' in text and "actor = " in text
    replayed = cli("replay", str(path))
    assert replayed.exit_code == 0, replayed.output


# --------------------------------------------------------------------------- a decision binds to what it decided on


def test_a_host_raising_an_approved_total_reopens_the_policy_cap(cli):
    instance_id = claim_over_the_cap(cli)
    assert cli("resolve", instance_id, "--as", "Finance", "--reason", "1204.50 is fine").exit_code == 0
    assert cli.json("export", instance_id)["status"] == "ready"

    filled = cli("fill", instance_id, "total=5000")

    assert filled.exit_code == 0, filled.output
    view = cli.json("inspect", instance_id)
    assert (view["status"], view["blocked_on"]) == ("awaiting", "policy-cap")
    assert cli("fill", instance_id, "meals=12").exit_code == 1  # the wait holds writes until decided
    assert cli("resolve", instance_id, "--as", "Finance", "--fail", "5000 needs the director").exit_code == 0
    decisions = cli.json("export", instance_id)["resolutions"]
    assert [(d["occurrence"], d["outcome"]) for d in decisions] == [(1, "approved"), (2, "rejected")]


def test_the_claimant_changing_an_approved_total_in_the_chat_waits_for_finance_again(cli):
    instance_id = claim_over_the_cap(cli)
    assert cli("resolve", instance_id, "--as", "Finance").exit_code == 0

    result = cli("resume", instance_id, input="Total claimed: 5000\n")

    assert result.exit_code == 0, result.output
    exported = cli.json("export", instance_id)
    assert (exported["status"], exported["values"]["total"]) == ("awaiting", 5000)
