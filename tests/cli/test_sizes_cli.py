"""Values have a size, through the ``formctl`` command: a value over the field's limit is refused
by ``formctl fill`` and nothing is stored.
"""

from __future__ import annotations

CLAIMANT = {"full_name": "Dana Reeve", "staff_id": "AB1234", "email": "dana@example.org"}


# --------------------------------------------------------------------------- values have a size


def test_a_two_million_character_name_is_refused_by_formctl_fill_and_nothing_is_stored(cli):
    instance_id = cli.start({"staff_id": "AB1234"})

    # In process: a real command line cannot carry two million characters in one argument.
    result = cli("fill", instance_id, "full_name=" + "x" * 2_000_000, "email=dana@example.org")

    assert result.exit_code == 1
    assert "Too long: 2,000,000 characters; at most 10,000." in result.output
    assert len(result.output) < 2_000
    values = cli.json("export", instance_id)["values"]
    assert "full_name" not in values and values["email"] == "dana@example.org"
