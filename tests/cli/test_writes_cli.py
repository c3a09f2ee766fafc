"""``formctl fill``, ``undo``, ``redo`` and ``retract`` as their users meet them: what is sent as text
or JSON, and each says what it wrote, or that it wrote nothing.
"""

from __future__ import annotations

# --------------------------------------------------------------------------- fill k=v


def test_fill_sends_digits_to_a_text_field_as_text(cli):
    """staff_id=123456 is a number in JSON, but the field takes text: the text is what was meant."""
    instance_id = cli.start({"full_name": "Dana Reeve"})

    result = cli("fill", instance_id, "purpose=2026", "total=812.5", "--json")

    assert result.exit_code == 0, (result.stdout, result.stderr)
    export = cli("export", instance_id, "--json")
    assert '"purpose": "2026"' in export.stdout and '"total": 812.5' in export.stdout


def test_fill_still_sends_json_where_the_field_takes_it(cli):
    instance_id = cli.start()

    result = cli("fill", instance_id, "total=true")

    assert result.exit_code == 1  # neither true nor "true" is a number: rejected, as before
    assert "Total claimed" in result.stdout


def test_fill_with_a_blank_value_says_it_wrote_nothing_and_how_to_withdraw(cli):
    instance_id = cli.start({"email": "dana@example.org"})

    result = cli("fill", instance_id, "email=")

    assert result.exit_code == 0
    first = result.stdout.splitlines()[0]
    assert "Work email" in first and "blank" in first and f"formctl retract {instance_id} email" in first


# --------------------------------------------------------------------------- undo, redo, retract say what moved


def test_undo_redo_and_retract_say_which_field_now_holds_what(cli):
    instance_id = cli.start({"full_name": "Dana Reeve"})
    cli("fill", instance_id, "staff_id=AB1234")
    cli("fill", instance_id, "staff_id=CD5678")

    undo = cli("undo", instance_id)
    redo = cli("redo", instance_id, "Staff ID")
    retract = cli("retract", instance_id, "full_name", "--reason", "wrong person")

    assert undo.stdout.splitlines()[0] == "undid Staff ID → AB1234"
    assert redo.stdout.splitlines()[0] == "redid Staff ID → CD5678"
    assert retract.stdout.splitlines()[0] == "withdrew Full name → empty"


def test_retract_of_a_field_with_no_answer_writes_nothing_and_says_so(cli):
    instance_id = cli.start({"full_name": "Dana Reeve"})

    result = cli("retract", instance_id, "email")
    history = cli("history", instance_id, "email", "--json")

    assert result.exit_code == 1
    assert result.stderr.startswith("error: ") and "Work email" in result.stderr
    assert '"revisions": []' in history.stdout
