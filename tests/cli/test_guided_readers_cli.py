"""The guided model reads people, through the real entry point (issue 37): everyday dates,
amounts, number words, choices by their aliases, references inside a sentence; and formctl's
"Is that right?" takes only a clear yes as one ("The correct one is CD5678" is a correction)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e


def only_instance(cli) -> str:
    rows = cli.json("instances")["instances"]
    assert len(rows) == 1
    return rows[0]["instance_id"]


CLAIMANT = "Dana Reeve\nAB1234\ndana@example.org\n"


def _values(cli, iid):
    return cli.json("export", iid)["values"]


def test_everyday_words_fill_a_travel_claim(cli):
    lines = (
        CLAIMANT + "Bristol\nMonday 9 March 2026\nthe next day\nsupplier audit\nI took the train\n"
        "booking ref is QX7RTA\nyep, £150\n12 pounds 40\nyes\nabout 210, exactly 212.40\nyes\n"
    )
    done = cli("run", "travel-claim", "--offline", "--locale", "en-GB", "--subject", "t1", input=lines)
    assert done.exit_code == 0, done.stderr
    assert 'I read "the next day" as Tuesday 10 March 2026.' in done.stdout  # a reading is said back
    assert 'I read "about 210, exactly 212.40" as 212.40.' in done.stdout
    values = _values(cli, only_instance(cli))
    assert values["departure_date"] == "2026-03-09" and values["return_date"] == "2026-03-10"
    assert (values["mode"], values["ticket_reference"]) == ("rail", "QX7RTA")
    assert (values["accommodation"], values["meals"], values["total"]) == (150, 12.4, 212.4)


def test_a_weekday_that_is_not_the_dates_is_asked_about(cli):
    lines = CLAIMANT + "Leeds\nMonday 10 March 2026\n"
    done = cli("run", "travel-claim", "--offline", "--subject", "t2", input=lines)
    assert "10 March 2026 is a Tuesday. Which did you mean?" in done.stdout
    assert "departure_date" not in _values(cli, only_instance(cli))


def test_a_number_that_is_not_now_is_not_the_age(cli):
    done = cli(
        "run", "client-intake", "--offline", "--subject", "t3", input="hi\nfirst time here\nI'll be 18 in June\n17\n"
    )
    assert '"I\'ll be 18 in June" is not what it is now' in done.stdout
    iid = only_instance(cli)
    assert cli.json("export", iid)["status"] == "abandoned"  # 17: the under-age rule fired
    assert _values(cli, iid)["client_type"] == "new"


@pytest.mark.parametrize(
    "answer, stored, kind",
    [
        ("The correct one is CD5678", "CD5678", "said"),
        ("yes, but it is actually AB9999", "AB9999", "said"),
        ("no, it's CD5678", "CD5678", "said"),
        ("right", "AB1234", "confirmed"),
    ],
)
def test_only_a_clear_yes_confirms_a_value_read_back(cli, answer, stored, kind):
    done = cli("run", "travel-claim", "--offline", "--seed", "staff_id=AB1234", "--subject", "t4", input=answer + "\n")
    assert done.exit_code == 0, done.stderr
    assert "Staff ID: AB1234. Is that right?" in done.stdout
    history = cli.json("history", only_instance(cli), "staff_id")
    assert [(r["value"], r["provenance"]["kind"]) for r in history["revisions"]] == [(stored, kind)]


def test_an_unclear_answer_to_is_that_right_is_asked_again(cli):
    done = cli("run", "travel-claim", "--offline", "--seed", "staff_id=AB1234", "--subject", "t5", input="maybe\nyes\n")
    assert "Please say yes, or type it. " in done.stdout
    history = cli.json("history", only_instance(cli), "staff_id")
    assert [r["provenance"]["kind"] for r in history["revisions"]] == ["confirmed"]


def test_a_locale_that_names_nothing_is_one_clear_line(cli):
    bad = cli("run", "travel-claim", "--offline", "--locale", "not a locale!", input="")
    assert bad.exit_code == 2
    assert "--locale must name a locale, like en-GB or en-US" in bad.output
    assert "Traceback" not in bad.output


@pytest.mark.parametrize(("locale", "stored"), [("en-GB", "2026-11-03"), ("en-US", "2026-03-11")])
def test_the_locale_says_which_order_a_numeric_date_is_in(cli, locale, stored):
    lines = CLAIMANT + "Leeds\n03/11/2026\n"
    cli("run", "travel-claim", "--offline", "--subject", "t6", input=lines, env={"FORMCTL_LOCALE": locale})
    assert _values(cli, only_instance(cli))["departure_date"] == stored


def test_without_a_locale_a_numeric_date_is_never_guessed(cli):
    lines = CLAIMANT + "Leeds\n03/11/2026\n"
    done = cli("run", "travel-claim", "--offline", "--subject", "t7", input=lines, env={"LANG": "C", "LC_ALL": ""})
    assert "day/month or month/day" in done.stdout


def test_none_after_a_refused_optional_cost_leaves_it_out_and_moves_on(cli):
    lines = CLAIMANT + "Bristol\n9 March 2026\n11 March 2026\naudit\ntrain\nTR-20931\nthe hotel, I think\nnone\n"
    done = cli("run", "travel-claim", "--offline", "--subject", "t8", input=lines)
    assert 'I couldn\'t use "the hotel, I think" for Accommodation cost' in done.stdout
    after = done.stdout.split("Left out Accommodation cost.", 1)[1]
    assert after.lstrip().startswith("Meals cost?")  # not the same question again


def test_a_correction_to_is_that_right_is_read_in_everyday_words(cli):
    done = cli(
        "run", "travel-claim", "--offline", "--seed", "meals=12", "--subject", "t9", input="No, it's 12 pounds 40\n"
    )
    assert "Meals cost: 12. Is that right?" in done.stdout
    history = cli.json("history", only_instance(cli), "meals")
    assert [(r["value"], r["provenance"]["kind"]) for r in history["revisions"]] == [(12.4, "said")]


def test_a_yes_with_a_correction_to_the_answer_that_ends_the_form_does_not_end_it(cli):
    chat = cli("run", "client-intake", "--subject", "ali", "--offline", input="new\n16\nyes, but I'm actually 61\n61\n")
    assert "Age: 16. Is that right? That answer ends this form" in chat.output
    assert "we have to stop here" not in chat.output
    (row,) = cli.json("instances", "--subject", "ali")["instances"]
    exported = cli.json("export", row["instance_id"])
    assert exported["status"] == "active" and exported["values"]["age"] == 61
