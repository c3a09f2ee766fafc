"""``formctl inspect`` names a waiting check and a standing failure in plain words, with a
check's id in brackets because a host types it to act (docs/engine.md, "Tier 0")."""

from __future__ import annotations

from clitools import CLAIMANT, TRIP

OVER_THE_CAP = {
    **CLAIMANT,
    **TRIP,
    "mode": "rail",
    "ticket_reference": "TR-5511",
    "accommodation": 800,
    "total": 780,
}


def test_inspect_says_which_check_a_claim_waits_on_in_words_with_the_id_a_host_acts_on(cli):
    instance_id = cli.start(OVER_THE_CAP)

    shown = cli.ok("inspect", instance_id).output

    assert 'waiting on the "policy cap" check [policy-cap]: Over the 750 cap' in shown


def test_inspect_names_standing_failures_by_label_and_title_never_by_hook_id(cli):
    instance_id = cli.start(OVER_THE_CAP)
    cli.ok("resolve", instance_id, "--fail", "Over the cap without pre-approval", "--as", "Finance")

    shown = cli.ok("inspect", instance_id).output

    assert 'blocked: The "policy cap" check [policy-cap]: Over the cap without pre-approval' in shown
    # The costs' check holds the claim in its own words, its id in brackets as the outline names it.
    assert (
        "held: Accommodation and meals come to £800, more than the total claimed (£780). [costs-within-total]" in shown
    )
    assert "checkpoint:policy-cap" not in shown and "step:costs" not in shown
