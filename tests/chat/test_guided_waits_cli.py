"""While a form waits for an approval, the guided model's reply says how to take the request
back (the chat's /withdraw), and what it says is true: through the real ``formctl`` command with
the chat piped in, /withdraw then a correction stores the corrected answer."""

from __future__ import annotations

import json

import pytest

from clitools import FORMS, OVER_CAP_LINES, formctl

pytestmark = pytest.mark.e2e


def chat(store: str, *args: str, lines: list[str]) -> str:
    done = formctl(
        "run", "travel-claim", *args, "--offline", "--store", store, "--forms", str(FORMS),
        input="".join(f"{x}\n" for x in lines),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def exported(store: str) -> dict:
    listed = json.loads(formctl("instances", "--store", store, "--forms", str(FORMS), "--json").stdout)
    (row,) = listed["instances"]
    done = formctl("export", row["instance_id"], "--store", store, "--forms", str(FORMS), "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize(
    "as_host, withdraw",
    [(False, "/withdraw the total was wrong"), (True, "/withdraw the total was wrong"), (False, "withdraw")],
    ids=["person", "as-host", "said to the model"],
)
def test_the_waiting_reply_says_the_request_can_be_withdrawn_and_withdrawing_lets_an_answer_be_corrected(
    store, as_host, withdraw
):
    hosting = ["--as-host"] if as_host else []
    lines = [*OVER_CAP_LINES, withdraw, "Total claimed: 700"]
    out = chat(store, "--subject", "dana", *hosting, lines=lines)

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
    record = exported(store)
    assert record["values"]["total"] == 700
    assert [r["outcome"] for r in record["resolutions"]] == ["withdrawn"]
