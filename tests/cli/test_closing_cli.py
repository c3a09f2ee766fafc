"""Closing is final, through the ``formctl`` command: a second abandon is refused and the first
reason stays; a complete claim cannot be abandoned.
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
    assert run(store, "submit", instance_id).exit_code == 0  # read back and sent
    assert as_json(store, "export", instance_id)["status"] == "complete"

    refused = run(store, "abandon", instance_id, "--reason", "never mind")

    assert refused.exit_code == 1 and "is complete; a complete form cannot be abandoned" in refused.stderr
    exported = as_json(store, "export", instance_id)
    assert (exported["status"], exported.get("closed_reason")) == ("complete", None)
