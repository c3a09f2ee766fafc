"""Values have a size, through the ``formctl`` command: a value over the field's limit is refused
by ``formctl fill`` and nothing is stored.
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
