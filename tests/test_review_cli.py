"""The person's side of a form through the real CLI (issue 15): what undo says it will do is what
it does, and a form with a review is sent by ``formctl submit`` (or the person's "yes")."""

from __future__ import annotations

import json

from clitools import FORMS, invoke


def _run(store: str, lines: list[str], *, form: str = "travel-claim") -> str:
    """``formctl run FORM --offline`` with ``lines`` piped in; the instance id it started."""
    result = invoke("run", form, "--offline", "--subject", "dana", "--store", store, "--forms", str(FORMS),
                    input="".join(line + "\n" for line in lines))
    assert result.exit_code == 0, result.stderr
    listed = invoke("instances", "--store", store, "--forms", str(FORMS), "--json")
    return json.loads(listed.stdout)["instances"][0]["instance_id"]


def test_undo_after_a_refused_staff_id_does_what_inspect_said_it_would(store):
    instance_id = _run(store, ["Dana Reeve", "ab12345", "AB1234"])

    preview = invoke("inspect", instance_id, "--store", store, "--forms", str(FORMS))
    undone = invoke("undo", instance_id, "staff_id", "--store", store, "--forms", str(FORMS))
    after = invoke("inspect", instance_id, "--field", "staff_id", "--store", store, "--forms", str(FORMS), "--json")

    assert "undo would set Staff ID → empty" in preview.stdout
    assert undone.exit_code == 0 and undone.stdout.startswith("undid Staff ID → empty")
    row = json.loads(after.stdout)["fields"][0]
    assert row["status"] == "empty"  # not the refused "ab12345" back in force
    assert json.loads(after.stdout)["redo_would"] == 'staff_id → "AB1234"'
