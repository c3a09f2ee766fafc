"""The person's side of a form through the real CLI (issue 15): what undo says it will do is what
it does, and a form with a review is sent by ``formctl submit`` (or the person's "yes")."""

from __future__ import annotations

import json

from clitools import CLAIMANT_AND_TRIP


def _run(cli: str, lines: list[str], *, form: str = "travel-claim") -> str:
    """``formctl run FORM --offline`` with ``lines`` piped in; the instance id it started."""
    result = cli(
        "run",
        form,
        "--offline",
        "--subject",
        "dana",
        input="".join(line + "\n" for line in lines),
    )
    assert result.exit_code == 0, result.stderr
    listed = cli("instances", "--json")
    return json.loads(listed.stdout)["instances"][0]["instance_id"]


def test_undo_after_a_refused_staff_id_does_what_inspect_said_it_would(cli):
    instance_id = _run(cli, ["Dana Reeve", "ab12345", "AB1234"])

    preview = cli("inspect", instance_id)
    undone = cli("undo", instance_id, "staff_id")
    after = cli("inspect", instance_id, "--field", "staff_id", "--json")

    # One revision back is the refused value: it comes back in force as it was, and every
    # preview and the act's own line say it was not accepted (docs/engine.md, "The answer log").
    assert "undo would set Staff ID → ab12345 (not accepted)" in preview.stdout
    assert undone.exit_code == 0 and undone.stdout.startswith("undid Staff ID → ab12345 (not accepted)")
    row = json.loads(after.stdout)["fields"][0]
    assert row["status"] == "invalid"  # the refused value back in force, as it was
    assert json.loads(after.stdout)["redo_would"] == 'staff_id → "AB1234"'


def test_a_scaffolded_form_offers_its_optional_notes_reads_back_and_sends_only_on_yes(tmp_path, cli):
    demo = cli.at(forms=tmp_path / "forms")
    assert demo("new", "demo").exit_code == 0
    args = ["--offline", "--subject", "dana"]

    first = demo("run", "demo", *args, input="Dana Reeve\ndana@example.org\nquestion\n")
    listed = json.loads(cli("instances", "--json").stdout)["instances"]

    assert 'Notes? Anything else they want to add. Optional: say "skip" to leave it out.' in first.stdout
    assert [r["status"] for r in listed] == ["ready"]  # every required answer is in, but nothing is sent

    second = demo("run", "demo", *args, input="Please call after 5pm\nyes\n")
    (row,) = json.loads(cli("instances", "--json").stdout)["instances"]

    assert "Before I send it, please check your answers:" in second.stdout
    assert "- Notes: Please call after 5pm" in second.stdout
    assert "Sent. The Demo is complete" in second.stdout
    assert row["status"] == "complete"


def test_the_travel_claim_is_completed_by_following_only_the_questions(cli):
    answers = [
        *CLAIMANT_AND_TRIP,
        "car",
        "120",
        "85",
        "22.5",
        "240",
        "yes",
    ]

    out = cli(
        "run",
        "travel-claim",
        "--offline",
        "--subject",
        "dana",
        input="".join(a + "\n" for a in answers),
    ).stdout

    assert "Miles driven?" in out and "Accommodation cost?" in out and "Meals cost?" in out  # the optional ones
    read_back = out.split("Before I send it, please check your answers:")[1].split("Shall I send it?")[0]
    assert "- Miles driven: 120" in read_back and "- Mileage cost: 54" in read_back
    assert "- Accommodation cost: 85" in read_back and "- Total claimed: 240" in read_back
    assert "Sent. The Travel reimbursement claim is complete" in out
    (row,) = json.loads(cli("instances", "--json").stdout)["instances"]
    assert row["status"] == "complete"


def test_the_client_intake_is_completed_by_following_only_the_questions(cli):
    answers = ["new", "34", "Sam Lee", "sam@example.org", "0113 496 0000", "friend", "Help finding housing", "yes"]

    out = cli(
        "run",
        "client-intake",
        "--offline",
        "--subject",
        "sam",
        input="".join(a + "\n" for a in answers),
    ).stdout

    assert "Phone? Optional" in out
    assert "- Phone: 0113 496 0000" in out.split("Before I send it, please check your answers:")[1]
    assert "Sent. The Client intake is complete" in out
    (row,) = json.loads(cli("instances", "--json").stdout)["instances"]
    assert row["status"] == "complete"


def test_a_correction_at_the_read_back_is_read_back_again_before_it_is_sent(cli):
    answers = [
        *CLAIMANT_AND_TRIP,
        "rail",
        "TR-4411",
        "skip",
        "skip",
        "100",
        "no",
        "Meals cost: 12",
        "yes",
    ]

    out = cli(
        "run",
        "travel-claim",
        "--offline",
        "--subject",
        "dana",
        input="".join(a + "\n" for a in answers),
    ).stdout

    read_backs = out.split("Before I send it, please check your answers:")
    assert len(read_backs) == 3  # read back, corrected, read back again
    assert "Meals cost" not in read_backs[1].split("Left out:")[0] and "- Meals cost: 12" in read_backs[2]
    assert out.index("What would you like to change?") < out.index("- Meals cost: 12")
    assert "Sent." in read_backs[2]


def test_a_return_before_the_departure_is_refused_in_plain_words_until_corrected(cli):
    # The trip's check holds as soon as both dates are in, before the purpose is asked.
    answers = ["Dana Reeve", "AB1234", "dana@example.org", "Leeds", "2026-03-04", "2026-03-02"]

    out = cli(
        "run",
        "travel-claim",
        "--offline",
        "--subject",
        "dana",
        input="".join(a + "\n" for a in answers),
    ).stdout
    (row,) = json.loads(cli("instances", "--json").stdout)["instances"]
    fixed = cli(
        "run",
        "travel-claim",
        "--offline",
        "--subject",
        "dana",
        input="Return date: 2026-03-06\nclient visit\n",
    ).stdout
    inspected = json.loads(cli("inspect", row["instance_id"], "--json").stdout)

    assert "The return date (2026-03-02) is before the departure date (2026-03-04)." in out
    assert 'Which answer should change? Tell me as "Label: value"' in out
    assert "dates-in-order" not in out  # the check's own words, not its id
    after = fixed.split("Return date: 2026-03-06")[-1]
    assert after.index("Purpose of trip?") < after.index("Mode")  # corrected: the step goes on, then the next
    assert "failures" not in inspected and "checks_failed" not in inspected


def test_a_bare_line_at_which_answer_should_change_is_said_back_not_passed_over(cli):
    answers = [
        "Dana Reeve",
        "AB1234",
        "dana@example.org",
        "Leeds",
        "2026-03-04",
        "2026-03-02",
        "no, it is fine",
        "Return date: 2026-03-06",
        "client visit",
    ]

    out = cli(
        "run",
        "travel-claim",
        "--offline",
        "--subject",
        "dana",
        input="".join(a + "\n" for a in answers),
    ).stdout

    held = out.split("The return date (2026-03-02) is before the departure date (2026-03-04).", 1)[1]
    assert 'I wasn\'t sure which question this answers: "no, it is fine". You can say "Label: value".' in held
    assert "Mode" in held.split("Return date: 2026-03-06")[-1]


def test_accommodation_and_meals_over_the_total_keep_the_claim_from_being_sent(cli):
    instance_id = cli.start(
        {
            "full_name": "Dana Reeve",
            "staff_id": "AB1234",
            "email": "dana@example.org",
            "destination": "Leeds",
            "departure_date": "2026-03-02",
            "return_date": "2026-03-04",
            "purpose": "client visit",
            "mode": "rail",
            "ticket_reference": "TR-4411",
            "accommodation": 900,
            "total": 700,
        },
    )

    refused = cli("submit", instance_id)
    inspected = cli("inspect", instance_id)
    fixed = cli("fill", instance_id, "accommodation=500", "--json")
    sent = cli("submit", instance_id)

    assert refused.exit_code == 1 and refused.stderr.startswith("error: Not ready to send")
    assert "Accommodation and meals come to £900, more than the total claimed (£700)." in inspected.stdout
    assert json.loads(fixed.stdout)["status"] == "ready"
    assert sent.exit_code == 0 and sent.stdout.startswith(f"sent {instance_id}: Travel reimbursement claim is complete")


def test_submit_of_a_form_sent_already_is_one_line_on_stderr_and_its_help_has_an_example(cli):
    instance_id = cli.start(
        {
            "full_name": "Dana Reeve",
            "staff_id": "AB1234",
            "email": "dana@example.org",
            "destination": "Leeds",
            "departure_date": "2026-03-02",
            "return_date": "2026-03-04",
            "purpose": "client visit",
            "mode": "rail",
            "ticket_reference": "TR-4411",
            "total": 100,
        },
    )
    listed = json.loads(cli("instances", "--status", "ready", "--json").stdout)["instances"]

    first = cli("submit", instance_id, "--json")
    again = cli("submit", instance_id)
    helped = cli("submit", "--help")

    assert [r["instance_id"] for r in listed] == [instance_id]
    assert json.loads(first.stdout)["status"] == "complete" and json.loads(first.stdout)["complete"] is True
    assert again.exit_code == 1 and len(again.stderr.strip().splitlines()) == 1 and "already sent" in again.stderr
    assert "formctl submit form_" in helped.stdout


def test_after_a_resume_the_first_yes_reads_back_and_the_second_sends(cli):
    answers = [
        *CLAIMANT_AND_TRIP,
        "rail",
        "TR-4411",
        "skip",
        "skip",
        "100",
    ]
    instance_id = _run(cli, answers)  # ends at the read-back, not sent

    resumed = cli("resume", instance_id, "--offline", input="yes\nyes\n")

    after_resume = resumed.stdout.split("Shall I send it?", 1)[1]  # the screen shows the last read-back first
    assert "Before I send it, please check your answers:" in after_resume  # read back again, not a question
    assert "Accommodation cost?" not in after_resume  # the optional questions were offered once already
    assert "Sent. The Travel reimbursement claim is complete" in after_resume
    exported = json.loads(cli("export", instance_id, "--json").stdout)
    assert exported["status"] == "complete"
