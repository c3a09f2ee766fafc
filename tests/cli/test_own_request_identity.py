"""Nobody decides their own request, whatever way they write their name (README, "Who may do
what"): the subject and the host's ``--as`` are compared as identities, not as text."""

from __future__ import annotations

import pytest

from formctl.cli.host import identity, same_identity
from tool_fuzz import AWAITING

CLAIM = AWAITING  # a claim over the cap: waits for Finance


@pytest.mark.parametrize("name", ["dana2@example.com", "Dana2@Example.com", " DANA2 ", "ｄａｎａ２"])
def test_the_subject_under_another_spelling_is_refused_unless_own_request_says_so(cli, name):
    iid = cli.start(CLAIM, subject="dana2")
    refused = cli("resolve", iid, "--as", name)
    assert refused.exit_code == 1 and "is the subject of" in refused.stderr
    assert cli.json("inspect", iid)["status"] == "awaiting"  # nothing decided
    done = cli.json("resolve", iid, "--as", name, "--own-request")
    assert done["status"] == "ready"


def test_another_person_decides_and_the_rule_is_as_documented(cli):
    iid = cli.start(CLAIM, subject="dana2")
    assert cli.json("resolve", iid, "--as", "sam@example.com")["status"] == "ready"
    assert identity("Dana2@Example.com") == identity(" dana2 ") == "dana2"
    assert not same_identity("dana2", "dana3@example.com")
    assert identity("Sam  Jones") == "sam jones" and identity("a @ b") == "a @ b"  # not an address
