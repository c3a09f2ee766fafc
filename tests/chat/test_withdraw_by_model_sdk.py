"""The person asks to take back a request waiting for approval, and the model does it with
``form_withdraw``: through ``formctl run`` (in process) and the real ``anthropic`` SDK against
tests/fake_anthropic.py (docs/engine.md, "Host acts", "Withdrawing a request")."""

from __future__ import annotations

import json

from clitools import CLAIMANT, TRIP, start
from fake_anthropic import FakeAnthropic, text, tool_use

OVER_THE_CAP = {
    **CLAIMANT,
    **TRIP,
    "mode": "rail",
    "ticket_reference": "TR1234",
    "total": 900,
}
ASKS = "Sorry, the total is wrong: it should be 700. Please take the approval request back so I can fix it.\n"


def _results(body: dict) -> list[dict]:
    return [
        json.loads(block["content"])
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


def test_the_model_withdraws_the_request_when_the_person_asks_and_the_total_is_corrected(cli):
    instance_id = start(cli.store, OVER_THE_CAP)
    with FakeAnthropic() as api:
        api.reply(tool_use("form_fill", {"values": {"total": 700}, "quotes": {"total": "it should be 700"}}))
        api.reply(tool_use("form_withdraw", {"reason": "the total was wrong"}))
        api.reply(tool_use("form_fill", {"values": {"total": 700}, "quotes": {"total": "it should be 700"}}))
        api.reply(text("Done: the request is withdrawn and the total is now 700."))
        env = {"ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": api.url}
        ran = cli("run", "travel-claim", "--subject", "dana", env=env, input=ASKS)
        assert api.unexpected == [] and api.rejected == []
        bodies = api.bodies

    assert ran.exit_code == 0, (ran.stderr, ran.exception)
    assert "form_withdraw" in [tool["name"] for tool in bodies[0]["tools"]]
    tier0 = bodies[0]["messages"][-1]["content"][-1]["text"]  # the model's line, at the tail of the turn
    assert tier0.startswith('[form: travel-claim] awaiting the "policy cap" check — Over the 750 cap')
    refused, withdrawn, filled = _results(bodies[-1])
    assert refused["data"]["code"] == "form_blocked"
    assert "the person asks to withdraw the request (form_withdraw)" in refused["message"]
    assert withdrawn["status"] == "success" and withdrawn["data"]["status"] == "active"
    assert filled["status"] == "success" and filled["data"]["captured"] == ["total"]

    exported = cli.json("export", instance_id)
    assert exported["values"]["total"] == 700 and exported["status"] == "ready"  # under the cap: no approval needed
    history = cli.json("history", instance_id)
    (act,) = [a for a in history["acts"] if a["act"] == "withdraw"]
    assert act["reason"] == "the total was wrong" and act["actor"] == "agent"
