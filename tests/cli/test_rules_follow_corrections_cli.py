"""The two reproductions of issue 35 through the real CLI: a correction that breaks the travel
claim's "costs within the total" holds the claim at once (and ``formctl submit`` refuses it), and
the mileage cost follows the miles (docs/engine.md, "Checks", "Derived values"), whether the
correction comes through the chat, the host's ``fill``, or ``undo`` and ``redo``."""

from __future__ import annotations

import json

import pytest

from clitools import CLAIMANT, CLAIMANT_AND_TRIP, TRIP
from fixture_project import REGISTRY
from formctl import FormRegistry, FormRunner, JsonFileAdapter
from formctl.agent.tools import FormTools

HELD = "Accommodation and meals come to £900, more than the total claimed (£210)."
CLAIM = {**CLAIMANT, **TRIP, "mode": "car", "mileage": 120, "accommodation": 120, "total": 210}


def chat(cli, lines: list[str]) -> str:
    """``formctl run travel-claim --offline`` with ``lines`` piped in; what it printed."""
    result = cli("run", "travel-claim", "--offline", "--subject", "dana", input="".join(f"{x}\n" for x in lines))
    assert result.exit_code == 0, result.stderr
    return str(result.stdout)


def claim(cli, iid: str) -> dict:
    shown = cli.json("inspect", iid)
    return {"status": shown["status"], "values": dict(cli.json("export", iid)["values"]), "shown": shown}


def test_through_the_chat_the_claim_is_held_as_soon_as_900_is_given_and_the_mileage_cost_follows(cli):
    ready = [*CLAIMANT_AND_TRIP, "car", "120", "120", "skip", "210"]
    out = chat(cli, [*ready, "Accommodation cost: 900", "Miles driven: 200", "yes"])
    (row,) = cli.json("instances")["instances"]
    iid = row["instance_id"]

    after_900 = out.split("Got it — Accommodation cost: 900.")[1]
    assert after_900.startswith(f"\n{HELD}\nWhich answer should change?")
    assert f"· [form: travel-claim] held: {HELD}" in after_900
    assert "Shall I send it?" not in after_900 and "Sent." not in after_900  # "yes" sends nothing held
    got = claim(cli, iid)
    assert got["status"] == "active" and got["values"]["mileage_cost"] == 90.0
    refused = cli("submit", iid)
    assert refused.exit_code == 1
    assert refused.stderr.strip() == f"error: Not ready to send: {HELD}"
    assert cli.json("inspect", iid)["status"] == "active"


def test_a_hosts_fill_holds_the_ready_claim_and_submit_refuses_it(cli):
    iid = cli.start(CLAIM)
    assert claim(cli, iid)["status"] == "ready"

    filled = cli("fill", iid, "accommodation=900")
    assert filled.exit_code == 0, filled.stderr
    got = claim(cli, iid)
    assert got["status"] == "active"
    assert got["shown"]["checks_failed"] == [
        {"check": "costs-within-total", "message": HELD, "fields": ["accommodation", "meals", "total"]}
    ]
    assert f"held: {HELD} [costs-within-total]" in cli.ok("inspect", iid).stdout
    refused = cli("submit", iid)
    assert refused.exit_code == 1 and refused.stderr.strip() == f"error: Not ready to send: {HELD}"

    cli.ok("fill", iid, "total=1000")  # over the cap now: it waits for Finance, but no check holds it
    assert "checks_failed" not in cli.json("inspect", iid)


def test_a_hosts_fill_of_the_miles_moves_the_mileage_cost_and_undo_and_redo_move_it_back_and_forth(cli):
    iid = cli.start(CLAIM)
    assert claim(cli, iid)["values"]["mileage_cost"] == 54.0

    cli.ok("fill", iid, "mileage=200")
    assert claim(cli, iid)["values"]["mileage_cost"] == 90.0
    undone = cli.ok("undo", iid)  # a bare undo moves the miles, never the cost the engine wrote
    assert undone.stdout.startswith("undid Miles driven → 120")
    assert claim(cli, iid)["values"]["mileage_cost"] == 54.0
    cli.ok("redo", iid)
    assert claim(cli, iid)["values"]["mileage_cost"] == 90.0

    revisions = cli.json("history", iid, "mileage_cost")["revisions"]
    assert [r["value"] for r in revisions] == [54.0, 90.0, 54.0, 90.0]
    assert all(r["provenance"]["kind"] == "derived" for r in revisions)
    assert "derived, from mileage@" in cli.ok("history", iid, "mileage_cost").stdout


def test_undo_of_a_correction_that_broke_the_check_clears_the_hold(cli):
    iid = cli.start(CLAIM)
    cli.ok("fill", iid, "accommodation=900")
    assert claim(cli, iid)["status"] == "active"

    cli.ok("undo", iid)
    assert claim(cli, iid)["status"] == "ready"
    cli.ok("redo", iid)
    assert claim(cli, iid)["status"] == "active"


@pytest.mark.parametrize(
    ("args", "verb"),
    [
        (("fill", "{iid}", "mileage_cost=3"), "fill"),
        (("retract", "{iid}", "mileage_cost"), "retract"),
        (("undo", "{iid}", "mileage_cost"), "undo"),
    ],
)
def test_a_host_write_to_the_mileage_cost_is_refused_in_one_line(cli, args, verb):
    iid = cli.start(CLAIM)
    refused = cli(*(a.format(iid=iid) for a in args))
    assert refused.exit_code == 1, verb
    assert refused.stderr == "error: Mileage cost is worked out from other answers; it can't be set, it follows them.\n"
    assert claim(cli, iid)["values"]["mileage_cost"] == 54.0
    assert cli.ok("inspect", iid).exit_code == 0  # the next command works


def test_the_model_tools_refuse_a_derived_field_and_a_held_submit_with_their_codes(cli):
    iid = cli.start({**CLAIM, "accommodation": 900})
    runner = FormRunner(JsonFileAdapter(cli.store), registry=FormRegistry.from_toml(REGISTRY), subject="dana")
    tools = FormTools(runner)
    submitted = tools.call("form_submit", {"instance_id": iid})
    filled = tools.call("form_fill", {"instance_id": iid, "values": {"mileage_cost": 3}})

    assert submitted["status"] == "error" and submitted["data"] == {"code": "check_failed"}
    assert submitted["message"] == f"Not ready to send: {HELD}"
    assert filled["status"] == "error" and filled["data"] == {"code": "derived_field"}
    assert json.dumps(filled).count("\n") == 0
