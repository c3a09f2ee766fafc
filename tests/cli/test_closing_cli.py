"""Closing is final, through the ``formctl`` command: a second abandon is refused and the first
reason stays; a complete claim cannot be abandoned.
"""

from __future__ import annotations

CLAIMANT = {"full_name": "Dana Reeve", "staff_id": "AB1234", "email": "dana@example.org"}
TRIP = {"destination": "Leeds", "departure_date": "2026-03-02", "return_date": "2026-03-04", "purpose": "client visit"}
CLAIM = {**CLAIMANT, **TRIP, "mode": "rail", "ticket_reference": "TR-5511"}


# --------------------------------------------------------------------------- closing is final


def test_a_second_abandon_is_refused_and_the_first_reason_stays(cli):
    instance_id = cli.start(CLAIMANT)
    assert cli("abandon", instance_id, "--reason", "duplicate claim").exit_code == 0

    again = cli("abandon", instance_id, "--reason", "something else")

    assert again.exit_code == 1
    assert again.stderr == f'error: Form instance "{instance_id}" is already abandoned (duplicate claim).\n'
    exported = cli.json("export", instance_id)
    assert (exported["status"], exported["closed_reason"]) == ("abandoned", "duplicate claim")


def test_a_complete_claim_cannot_be_abandoned(cli):
    instance_id = cli.start({**CLAIM, "total": 120})
    assert cli("submit", instance_id).exit_code == 0  # read back and sent
    assert cli.json("export", instance_id)["status"] == "complete"

    refused = cli("abandon", instance_id, "--reason", "never mind")

    assert refused.exit_code == 1 and "is complete; a complete form cannot be abandoned" in refused.stderr
    exported = cli.json("export", instance_id)
    assert (exported["status"], exported.get("closed_reason")) == ("complete", None)
