"""Host acts through the ``formctl`` command: who a host is, that nobody decides their own
request, and that a chat's ``/resolve`` is ``formctl resolve`` parsed by the same parser
(docs/engine.md, "Host acts")."""

from __future__ import annotations

import getpass
import json

import pytest

from clitools import OVER_CAP_LINES

ME = getpass.getuser()


def claim_over_the_cap(cli, subject: str) -> str:
    result = cli("run", "travel-claim", "--subject", subject, input="\n".join(OVER_CAP_LINES) + "\n")
    assert result.exit_code == 0, result.output
    (row,) = cli.json("instances", "--subject", subject)["instances"]
    assert row["status"] == "awaiting"
    return row["instance_id"]


# --------------------------------------------------------------------------- nobody decides their own request


def test_a_claimant_resolving_their_own_claim_from_the_command_line_is_refused_in_one_line(cli):
    instance_id = claim_over_the_cap(cli, ME)  # the claim's subject is the login name

    refused = cli("resolve", instance_id, "--reason", "looks fine to me")

    assert refused.exit_code == 1
    assert refused.stderr.count("\n") == 1 and refused.stderr.startswith(f"error: {ME} is the subject of {instance_id}")
    assert "--own-request" in refused.stderr
    exported = cli.json("export", instance_id)
    assert exported["status"] == "awaiting" and "resolutions" not in exported
    named = cli("resolve", instance_id, "--as", ME.upper(), "--fail", "no")  # the name, however spelt
    assert named.exit_code == 1 and "is the subject of" in named.stderr


def test_deciding_ones_own_request_takes_the_explicit_override_which_is_recorded(cli):
    instance_id = claim_over_the_cap(cli, ME)

    done = cli("resolve", instance_id, "--reason", "team lead away", "--own-request")

    assert done.exit_code == 0, done.output
    for command in ("inspect", "history", "export"):
        (decision,) = cli.json(command, instance_id)["resolutions"]
        assert (decision["outcome"], decision["actor"], decision["override"]) == ("approved", ME, "own request")
    assert f"approved  {ME} (own request)" in cli("history", instance_id).output


def test_another_host_resolves_without_any_override(cli):
    instance_id = claim_over_the_cap(cli, "dana")
    assert cli("resolve", instance_id, "--as", "Sam Jones").exit_code == 0
    (decision,) = cli.json("export", instance_id)["resolutions"]
    assert decision["actor"] == "Sam Jones" and "override" not in decision


# --------------------------------------------------------------------------- /resolve is formctl resolve


def test_a_chats_resolve_refuses_fail_with_reason_as_the_command_line_does(cli):
    instance_id = claim_over_the_cap(cli, "dana")
    line = '/resolve --fail "over budget" --reason "x"'

    chat = cli("run", "travel-claim", "--subject", "dana", "--as-host", input=line + "\n")
    command_line = cli("resolve", instance_id, "--fail", "over budget", "--reason", "x")

    assert command_line.exit_code == 2 and "not both" in command_line.output
    assert "error: Give --fail REASON to reject, or --reason to say why it is approved, not both." in chat.output
    exported = cli.json("export", instance_id)
    assert exported["status"] == "awaiting" and "resolutions" not in exported


def test_a_chats_resolve_takes_a_quoted_rejection_whole(cli):
    instance_id = claim_over_the_cap(cli, "dana")

    chat = cli("run", "travel-claim", "--subject", "dana", "--as-host", input='/resolve --fail "over budget"\n')

    assert "checkpoint rejected: over budget" in chat.output, chat.output
    (decision,) = cli.json("export", instance_id)["resolutions"]
    assert (decision["outcome"], decision["reason"]) == ("rejected", "over budget")


def test_a_chats_resolve_with_unquoted_words_says_to_quote_them_and_decides_nothing(cli):
    instance_id = claim_over_the_cap(cli, "dana")

    chat = cli("run", "travel-claim", "--subject", "dana", "--as-host", input="/resolve --reason trial run\n")

    assert 'error: /resolve: "run" is not an option; quote a reason of several words' in chat.output
    assert "resolutions" not in cli.json("export", instance_id)


def test_playing_the_host_the_waiting_message_names_resolve_not_formctl_resolve(cli):
    lines = "\n".join(OVER_CAP_LINES) + "\n"

    hosted = cli("run", "travel-claim", "--subject", "kim", "--as-host", input=lines)
    plain = cli("run", "travel-claim", "--subject", "lee", input=lines)

    assert "decide it here with /resolve (or /resolve --fail REASON" in hosted.output
    assert "formctl resolve" not in hosted.output
    assert "the approver runs `formctl resolve" in plain.output


def test_a_form_author_playing_the_host_may_decide_their_own_trial_claim_and_that_is_recorded(cli):
    instance_id = claim_over_the_cap(cli, ME)

    chat = cli("run", "travel-claim", "--as-host", "--subject", ME, input="/resolve --reason 'trying the form'\n")

    assert "checkpoint approved" in chat.output, chat.output
    (decision,) = cli.json("export", instance_id)["resolutions"]
    assert decision["actor"] == ME and decision["override"] == "own request, playing the host (--as-host)"


# --------------------------------------------------------------------------- every change has an author

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


def complete_claim(cli) -> str:
    instance_id = cli.start()
    assert cli("fill", instance_id, *CLAIM, "--as", "Kim Lee").exit_code == 0
    assert cli("submit", instance_id, "--as", "Kim Lee").exit_code == 0
    assert cli.json("export", instance_id)["status"] == "complete"
    return instance_id


def test_undo_on_a_complete_claim_says_it_would_take_it_back_and_needs_reopen(cli):
    instance_id = complete_claim(cli)

    refused = cli("undo", instance_id, "total")

    assert refused.exit_code == 1
    assert refused.stderr == (
        f'error: Form instance "{instance_id}" is complete; this would take it back to active. '
        "Add --reopen to do it anyway (it is recorded).\n"
    )
    assert cli.json("export", instance_id)["status"] == "complete"

    done = cli("undo", instance_id, "total", "--reopen", "--as", "Sam Jones", "--reason", "wrong total")
    assert done.exit_code == 0, done.output
    assert cli.json("export", instance_id)["status"] == "active"
    acts = cli.json("history", instance_id)["acts"]
    undo, reopen = acts[-2:]
    assert (undo["act"], undo["actor"], undo["reason"], undo["detail"]) == (
        "undo",
        "Sam Jones",
        "wrong total",
        "total: 81.25 → empty",
    )
    assert (reopen["act"], reopen["actor"], reopen["override"]) == ("reopen", "Sam Jones", "--reopen")
    assert reopen["detail"].startswith("complete → active") and reopen["at"] == undo["at"]


def test_history_lists_every_host_act_with_its_actor_and_time(cli):
    instance_id = cli.start()
    steps = [
        ("fill", instance_id, *CLAIM[:9], "total=1204.5", "--as", "Kim", "--reason", "from the receipt"),
        ("resolve", instance_id, "--as", "Finance", "--reason", "within budget"),
        ("fill", instance_id, "purpose=conference", "--as", "Kim"),  # a revision
        ("undo", instance_id, "purpose", "--as", "Lee"),
        ("redo", instance_id, "purpose", "--as", "Lee", "--reason", "it was right"),
        ("retract", instance_id, "ticket_reference", "--as", "Lee", "--reason", "lost ticket"),
        ("fill", instance_id, "ticket_reference=TR-9999", "--as", "Lee"),
        ("submit", instance_id, "--as", "Kim"),
        ("fill", instance_id, "total=700", "--as", "Kim", "--reopen", "--reason", "refund"),
        ("abandon", instance_id, "--as", "Kim", "--reason", "duplicate claim"),
        ("reopen", instance_id, "--as", "Sam", "--reason", "not a duplicate after all"),
    ]
    for args in steps:
        out = cli(*args)
        assert out.exit_code in (0, 1) and "error" not in out.stderr, (args, out.output)

    acts = cli.json("history", instance_id)["acts"]

    assert [a["act"] for a in acts] == [
        "fill",
        "resolve",
        "revise",
        "undo",
        "redo",
        "retract",
        "revise",
        "submit",
        "revise",
        "reopen",
        "abandon",
        "reopen",
    ]
    assert all(a["actor"] and a["at"] for a in acts)
    assert [a["at"] for a in acts] == sorted(a["at"] for a in acts)
    by_act = {(a["act"], a["actor"]): a for a in acts}
    assert by_act[("fill", "Kim")]["reason"] == "from the receipt"
    assert by_act[("resolve", "Finance")]["reason"] == "within budget"
    assert by_act[("redo", "Lee")]["reason"] == "it was right"
    assert by_act[("retract", "Lee")]["reason"] == "lost ticket"
    assert by_act[("abandon", "Kim")]["reason"] == "duplicate claim"
    assert by_act[("reopen", "Sam")]["detail"] == "abandoned → ready"
    why = cli.json("why", instance_id, "purpose")["acts"]
    assert [a["act"] for a in why] == ["fill", "revise", "undo", "redo"]
    exported = cli.json("export", instance_id, "--provenance")
    assert exported["acts"] == acts
    text = cli("history", instance_id).output
    assert "acts" in text and "Finance" in text and "not a duplicate after all" in text


def test_a_host_act_without_as_is_recorded_under_the_login_name(cli):
    instance_id = cli.start()
    assert cli("fill", instance_id, "full_name=Dana Reeve").exit_code == 0
    assert cli("undo", instance_id).exit_code == 0
    acts = cli.json("history", instance_id)["acts"]
    assert [(a["act"], a["actor"]) for a in acts] == [("fill", ME), ("undo", ME)]


# --------------------------------------------------------------------------- closing and reopening


def test_a_typo_that_ends_an_intake_is_put_right_by_a_host_reopening_it(cli):
    instance_id = cli.start(form="client-intake")
    ended = cli("fill", instance_id, "client_type=new", "age=16")
    assert "closed: Under 18" in ended.output
    assert cli.json("export", instance_id)["status"] == "abandoned"
    assert cli("fill", instance_id, "age=61").exit_code == 1  # closed: refused

    reopened = cli("reopen", instance_id, "--reason", "age was 61, typed 16", "--as", "Sam Jones")
    assert reopened.exit_code == 0, reopened.output
    assert reopened.stdout == f"reopened {instance_id}: abandoned → active\n"
    assert cli("fill", instance_id, "age=61").exit_code == 0
    exported = cli.json("export", instance_id)
    assert exported["status"] == "active" and exported["values"]["age"] == 61 and "closed_reason" not in exported
    act = next(a for a in cli.json("history", instance_id)["acts"] if a["act"] == "reopen")
    assert (act["actor"], act["reason"], act["detail"]) == ("Sam Jones", "age was 61, typed 16", "abandoned → active")


def test_reopen_needs_a_reason(cli):
    instance_id = cli.start(form="client-intake")
    cli("fill", instance_id, "client_type=new", "age=16")
    assert cli("reopen", instance_id).exit_code == 2
    assert cli("reopen", instance_id, "--reason", " ").exit_code == 2
    assert cli.json("export", instance_id)["status"] == "abandoned"


# --------------------------------------------------------------------------- withdrawing a request for approval


def test_the_person_withdraws_a_waiting_claim_corrects_it_and_it_is_not_asked_again_under_the_cap(cli):
    instance_id = claim_over_the_cap(cli, "dana")

    chat = cli("run", "travel-claim", "--subject", "dana", input="/withdraw the total was wrong\n")

    assert "request withdrawn: your answers can be corrected" in chat.output, chat.output
    exported = cli.json("export", instance_id)
    assert exported["status"] == "active"
    (decision,) = exported["resolutions"]
    assert (decision["outcome"], decision["actor"], decision["reason"]) == (
        "withdrawn",
        "person",
        "the total was wrong",
    )
    assert cli("fill", instance_id, "total=120.5", "--as", "dana").exit_code == 0
    assert cli.json("export", instance_id)["status"] == "ready"  # under the cap: nothing to approve
    (act,) = [a for a in cli.json("history", instance_id)["acts"] if a["act"] == "withdraw"]
    assert (act["actor"], act["reason"], act["detail"]) == (
        "person",
        "the total was wrong",
        "policy-cap: awaiting → active",
    )


def test_after_a_withdrawal_the_approval_is_asked_again_for_new_values_and_never_skipped(cli):
    instance_id = claim_over_the_cap(cli, "dana")
    done = cli("withdraw", instance_id, "--reason", "claimant asked", "--as", "Sam Jones")
    assert done.exit_code == 0, done.output
    assert done.stdout == f"withdrawn: {instance_id} no longer waits for approval; it is active\n"

    assert cli("fill", instance_id, "purpose=conference").exit_code == 0
    assert cli.json("export", instance_id)["status"] == "active"  # not sent past the cap unapproved
    assert cli("fill", instance_id, "total=1500").exit_code == 0  # still over: asked again
    exported = cli.json("export", instance_id)
    assert exported["status"] == "awaiting"
    assert cli("withdraw", instance_id, "--reason", "x", "--as", "Sam").exit_code == 0
    again = cli("withdraw", instance_id, "--reason", "twice")
    assert again.exit_code == 1 and "is not waiting for an approval" in again.stderr


def test_a_chat_asks_the_person_to_confirm_the_answer_that_ends_the_form_and_no_puts_it_right(cli):
    chat = cli("run", "client-intake", "--subject", "ali", "--offline", input="new\n16\nno\n61\n")

    assert chat.exit_code == 0, chat.output
    assert (
        "Age: 16. Is that right? That answer ends this form (Under 18: not eligible for this service. "
        "A guardian must apply instead). Say yes, or no to correct it."
    ) in chat.output
    assert "we have to stop here" not in chat.output
    (row,) = cli.json("instances", "--subject", "ali")["instances"]
    exported = cli.json("export", row["instance_id"])
    assert exported["status"] == "active" and exported["values"]["age"] == 61
    acts = cli.json("history", row["instance_id"])["acts"]
    reopened = next(a for a in acts if a["act"] == "reopen")
    assert reopened["reason"] == 'the person said "no" to the answer that ended it'


def test_yes_to_the_answer_that_ends_the_form_ends_it(cli):
    chat = cli("run", "client-intake", "--subject", "ali", "--offline", input="new\n16\nyes\n")

    assert "Age: 16. Is that right? That answer ends this form" in chat.output
    assert "we have to stop here: Under 18" in chat.output
    (row,) = cli.json("instances", "--subject", "ali")["instances"]
    assert row["status"] == "abandoned"


def _ending_result(record) -> dict:
    """The tool result of the write that ended the form and was taken back, from a ``--record`` transcript."""
    import tomllib

    transcript = tomllib.loads(record.read_text(encoding="utf-8"))
    calls = [c for t in transcript["turns"] for i in t.get("iterations", []) for c in i.get("calls", [])]
    results = [json.loads(c["result_json"]) for c in calls if "result_json" in c]
    return next(r for r in results if "undone" in r.get("data", {}))


def test_a_declined_ending_says_what_it_undid_and_why_in_one_commit(cli, tmp_path):
    record = tmp_path / "ali.toml"
    chat = cli("run", "client-intake", "--subject", "ali", "--offline", "--record", str(record), input="new\n16\nno\n")
    assert chat.exit_code == 0, chat.output

    data = _ending_result(record)["data"]
    assert data["undone"] == [{"field": "age", "value": 16}]
    assert data["undone_reason"] == 'the person said "no" to the answer that ended it'
    assert data["asked_person"][-1]["outcome"] == "declined"
    assert data["status"] == "active" and "captured" not in data
    (row,) = cli.json("instances", "--subject", "ali")["instances"]
    acts = cli.json("history", row["instance_id"])["acts"]
    reopened = next(a for a in acts if a["act"] == "reopen")
    undone = next(a for a in acts if a["act"] == "undo")
    assert reopened["at"] == undone["at"] and undone["detail"] == "age: 16 → empty"  # one commit, one time


def test_a_reply_the_store_cannot_keep_still_takes_the_ending_back_with_a_plain_reason(cli):
    chat = cli("run", "client-intake", "--subject", "ali", "--offline", input="new\n16\nno\x00 it was 61\n")
    assert chat.exit_code == 0, chat.output
    (row,) = cli.json("instances", "--subject", "ali")["instances"]
    exported = cli.json("export", row["instance_id"])
    assert exported["status"] == "active" and "age" not in exported["values"]
    reopened = next(a for a in cli.json("history", row["instance_id"])["acts"] if a["act"] == "reopen")
    assert reopened["reason"] == "the person said the answer that ended it was wrong"


def test_reopen_and_undo_are_one_commit_or_neither_happens(cli):
    from clitools import start
    from fixture_project import FORMS
    from formctl import FormRegistry, FormRunner, JsonFileAdapter
    from formctl.errors import NothingToMoveError

    instance_id = start(cli.store, {"full_name": "Dana Reeve"})
    runner = FormRunner(
        JsonFileAdapter(cli.store), registry=FormRegistry.from_toml(FORMS / "registry.toml"), subject="dana"
    )
    runner.abandon("moved away", instance_id=instance_id)
    before = runner.open_instance(instance_id)
    # The second field has nothing to undo: neither the reopen nor the first undo is written.
    with pytest.raises(NothingToMoveError):
        runner.revert_ending(["full_name", "email"], instance_id=instance_id, reason="wrong")
    after = runner.open_instance(instance_id)
    assert (after.version, after.status, after.in_force_values()) == (
        before.version,
        "abandoned",
        before.in_force_values(),
    )
    result = runner.revert_ending(["full_name"], instance_id=instance_id, reason="wrong")
    reverted = runner.open_instance(instance_id)
    assert reverted.version == before.version + 1 and reverted.status == "active"
    assert "full_name" not in reverted.in_force_values() and result.view.status == "active"
