"""While a form waits for an approval, the guided model's reply says how to take the request
back (the chat's /withdraw), and what it says is true: through the ``formctl`` command (in process)
with the chat piped in, /withdraw then a correction stores the corrected answer."""

from __future__ import annotations

import pytest

from clitools import OVER_CAP_LINES, Cli


def exported(cli: Cli) -> dict:
    """The one instance in the store, exported."""
    (row,) = cli.json("instances")["instances"]
    return dict(cli.json("export", row["instance_id"]))


@pytest.mark.parametrize(
    "as_host, withdraw",
    [(False, "/withdraw the total was wrong"), (True, "/withdraw the total was wrong"), (False, "withdraw")],
    ids=["person", "as-host", "said to the model"],
)
def test_the_waiting_reply_says_the_request_can_be_withdrawn_and_withdrawing_lets_an_answer_be_corrected(
    cli, as_host, withdraw
):
    hosting = ["--as-host"] if as_host else []
    lines = [*OVER_CAP_LINES, withdraw, "Total claimed: 700"]
    out = cli.chat("run", "travel-claim", "--subject", "dana", *hosting, lines=lines)

    waiting = out.split("Over the 750 cap: waiting for Finance to approve.")[1]
    assert "take the request back with /withdraw" in waiting
    if as_host:
        assert "decide it here with /resolve" in waiting and "formctl resolve" not in waiting
    else:
        assert "the approver runs `formctl resolve" in waiting
    if withdraw.startswith("/"):
        assert "request withdrawn: your answers can be corrected" in out  # the chat's command
    else:
        assert "I've withdrawn the request for approval, so your answers can be changed." in out  # form_withdraw
    record = exported(cli)
    assert record["values"]["total"] == 700
    assert [r["outcome"] for r in record["resolutions"]] == ["withdrawn"]
