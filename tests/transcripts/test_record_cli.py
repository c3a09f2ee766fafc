"""``formctl run --record``: it never overwrites a transcript, and says when a replay could not
reproduce what it records.
"""

from __future__ import annotations

# --------------------------------------------------------------------------- --record


def test_record_does_not_overwrite_an_existing_transcript(tmp_path, cli):
    path = tmp_path / "dana.toml"
    path.write_text("# a transcript someone relies on\n")

    result = cli(
        "run",
        "travel-claim",
        "--offline",
        "--record",
        str(path),
        input="Dana Reeve\n",
    )

    assert result.exit_code == 1
    assert result.stderr.startswith("error: ") and str(path) in result.stderr and "exists" in result.stderr
    assert path.read_text() == "# a transcript someone relies on\n"


def test_record_over_a_form_that_already_has_answers_says_replay_cannot_reproduce_it(tmp_path, cli):
    cli.start({"full_name": "Dana Reeve"}, subject="dana")
    path = tmp_path / "later.toml"

    result = cli(
        "run",
        "travel-claim",
        "--offline",
        "--subject",
        "dana",
        "--record",
        str(path),
        input="AB1234\n",
    )

    assert result.exit_code == 0, result.stderr
    assert "already has answers" in result.stdout and "replay" in result.stdout
