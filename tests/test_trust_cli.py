"""Who may do what, through the ``formctl`` command: closing is final, values have a size,
resolving is a host's recorded act, a conversation sees one subject, and a decision binds to
what it decided on.
"""

from __future__ import annotations

import json
from typing import Any

from clitools import FORMS, invoke, start

CLAIMANT = {"full_name": "Dana Reeve", "staff_id": "AB1234", "email": "dana@example.org"}
TRIP = {"destination": "Leeds", "departure_date": "2026-03-02", "return_date": "2026-03-04", "purpose": "client visit"}
CLAIM = {**CLAIMANT, **TRIP, "mode": "rail", "ticket_reference": "TR-5511"}


def run(store: str, *args: str, input: str | None = None) -> Any:
    return invoke(*args, "--store", store, "--forms", str(FORMS), input=input)


def as_json(store: str, *args: str) -> Any:
    result = run(store, *args, "--json")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return json.loads(result.stdout)


# --------------------------------------------------------------------------- closing is final


def test_a_second_abandon_is_refused_and_the_first_reason_stays(store):
    instance_id = start(store, CLAIMANT)
    assert run(store, "abandon", instance_id, "--reason", "duplicate claim").exit_code == 0

    again = run(store, "abandon", instance_id, "--reason", "something else")

    assert again.exit_code == 1
    assert again.stderr == f'error: Form instance "{instance_id}" is already abandoned (duplicate claim).\n'
    exported = as_json(store, "export", instance_id)
    assert (exported["status"], exported["closed_reason"]) == ("abandoned", "duplicate claim")


def test_a_complete_claim_cannot_be_abandoned(store):
    instance_id = start(store, {**CLAIM, "total": 120})
    assert as_json(store, "export", instance_id)["status"] == "complete"

    refused = run(store, "abandon", instance_id, "--reason", "never mind")

    assert refused.exit_code == 1 and "is complete; a complete form cannot be abandoned" in refused.stderr
    exported = as_json(store, "export", instance_id)
    assert (exported["status"], exported.get("closed_reason")) == ("complete", None)


# --------------------------------------------------------------------------- values have a size


def test_a_two_million_character_name_is_refused_by_formctl_fill_and_nothing_is_stored(store):
    instance_id = start(store, {"staff_id": "AB1234"})

    # In process: a real command line cannot carry two million characters in one argument.
    result = run(store, "fill", instance_id, "full_name=" + "x" * 2_000_000, "email=dana@example.org")

    assert result.exit_code == 1
    assert "Too long: 2,000,000 characters; at most 10,000." in result.output
    assert len(result.output) < 2_000
    values = as_json(store, "export", instance_id)["values"]
    assert "full_name" not in values and values["email"] == "dana@example.org"
