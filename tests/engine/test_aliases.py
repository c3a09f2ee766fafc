"""Forgiving ids (docs/engine.md, 'Resolving names'): normalisation, the alias index, resolution, did_you_mean."""

from __future__ import annotations

import pytest

import example_forms
from formctl import NotFoundError
from formctl.forms.compile import dice, normalise

# --------------------------------------------------------------------------- normalise and dice


@pytest.mark.parametrize("text", ["full_name", "Full name", "fullName", "FULLNAME", "Full-Name"])
def test_spellings_of_full_name_all_normalise_to_fullname(text):
    assert normalise(text) == "fullname"


@pytest.mark.parametrize("text", ["e_mail", "E-mail"])
def test_spellings_of_email_normalise_to_email(text):
    assert normalise(text) == "email"


def test_punctuation_only_normalises_to_nothing():
    assert normalise("!!") == ""


def test_non_ascii_letters_are_deleted_and_digits_kept():
    assert normalise("Café 2") == "caf2"


def test_dice_of_equal_strings_is_one_even_when_short():
    assert dice("a", "a") == 1.0


def test_dice_of_a_one_character_string_is_zero():
    assert dice("a", "ab") == 0.0


def test_dice_counts_repeated_bigrams_as_a_multiset():
    # "aaaa" has bigrams aa×3, "aa" has aa×1: one hit over (3 + 1).
    assert dice("aaaa", "aa") == pytest.approx(2 * 1 / 4)
    assert dice("night", "nacht") == pytest.approx(2 * 1 / 8)


# --------------------------------------------------------------------------- alias index and resolution


@pytest.fixture(scope="module")
def pi():
    return example_forms.pi_intake()


def test_an_exact_id_resolves_to_itself(pi):
    assert pi.resolve_field("fullName") == "fullName"


@pytest.mark.parametrize("sent", ["full_name", "Full name", "FULLNAME", "full-name"])
def test_ids_resolve_through_their_normalised_form(pi, sent):
    assert pi.resolve_field(sent) == "fullName"


def test_a_label_resolves_to_its_field(pi):
    assert pi.resolve_field("Type of incident") == "incidentType"
    assert pi.resolve_field("sought_treatment") == "treated"


def test_a_field_own_id_is_indexed_so_a_capitalised_id_resolves(pi):
    assert pi.resolve_field("Email") == "email"


def test_an_unknown_id_resolves_to_nothing(pi):
    assert pi.resolve_field("incident_kind") is None
    assert pi.resolve_field("!!") is None


def test_steps_resolve_by_id_or_title(pi):
    assert pi.resolve_step("incident") == "incident"
    assert pi.resolve_step("CLAIMANT") == "claimant"
    assert pi.resolve_step("nowhere") is None


# --------------------------------------------------------------------------- did_you_mean: the verified table


@pytest.mark.parametrize(
    "sent, expected",
    [
        ("incident_kind", ["incidentType", "incidentDate"]),
        ("name", ["fullName"]),
        ("mail", ["email"]),
        ("emailAddress", ["email"]),
        ("phoneNumber", ["phone"]),
        ("date", ["treated", "incidentDate"]),
        ("vehicles", ["vehicleCount"]),
        ("type", ["incidentType"]),
        ("treatment", ["treated"]),
        ("e", []),
        ("__", []),
        ("zzzzqqq", []),
    ],
)
def test_did_you_mean_matches_the_verified_table(pi, sent, expected):
    assert pi.did_you_mean(sent) == expected


def test_did_you_mean_offers_at_most_two_and_ties_keep_declaration_order():
    from formctl import define_form

    form = (
        define_form("ties", name="Ties")
        .step("s", title="S")
        .field("abx", str, label="Abx")
        .field("aby", str, label="Aby")
        .field("abz", str, label="Abz")
        .build()
    )
    # "ab" scores 2/3 against each of the three: the first two declared win.
    assert form.did_you_mean("ab") == ["abx", "aby"]


# --------------------------------------------------------------------------- aliasing at the runner


def test_fill_through_an_alias_writes_the_field_and_reports_the_rename(runner):
    r = runner()
    result = r.start("pi-intake", {"Full name": "Dana Reeve", "Email": "dana@example.com", "phone": "555"})
    assert result.captured == ["fullName", "email", "phone"]
    assert result.renamed == [("Full name", "fullName"), ("Email", "email")]
    assert result.to_dict()["renamed"] == ["Full name → fullName", "Email → email"]


def test_an_exact_id_is_not_reported_as_renamed(runner):
    r = runner()
    result = r.start("pi-intake", {"fullName": "Dana Reeve"})
    assert result.renamed == []
    assert "renamed" not in result.to_dict()


def test_an_unknown_key_stores_nothing_and_offers_did_you_mean(runner):
    r = runner()
    r.start("pi-intake")
    result = r.fill({"incident_kind": "vehicle", "zzzzqqq": 1, "phone": "555"})
    assert result.captured == ["phone"]
    out = result.to_dict()
    assert out["unknown_fields"] == [
        {"field": "incident_kind", "did_you_mean": ["incidentType", "incidentDate"]},
        {"field": "zzzzqqq"},
    ]
    assert "don't guess again" in out["unknown_note"]
    _, instance, _ = r.evaluation()
    assert set(instance.entries) == {"phone"}


def test_several_keys_for_one_field_store_only_the_last_value(runner):
    r = runner()
    r.start("pi-intake")
    result = r.fill({"full_name": "x", "fullName": "Dana Reeve", "Full name": "Dana R."})
    assert result.captured == ["fullName"]
    # The first key's value was too short: its rejection is still reported.
    assert [row.field for row in result.rejected] == ["fullName"]
    assert result.renamed == [("full_name", "fullName"), ("Full name", "fullName")]
    history = r.history("fullName")
    assert [rev.value for rev in history.revisions] == ["Dana R."]


@pytest.mark.parametrize("verb", ["revise", "retract", "undo", "redo", "history"])
def test_every_field_verb_resolves_aliases(runner, verb):
    r = runner()
    r.start("pi-intake", {"fullName": "Dana Reeve"})
    r.revise("fullName", "Dana Q. Reeve")
    r.undo("fullName")
    if verb == "revise":
        r.revise("full name", "Dana Reeves")
        assert r.status().fields[0].value == "Dana Reeves"
    elif verb == "retract":
        r.retract("FULL_NAME")
        assert r.status().fields[0].status == "empty"
    elif verb == "undo":
        r.undo("Full-Name")
        assert r.status().fields[0].status == "empty"
    elif verb == "redo":
        r.redo("full_name")
        assert r.status().fields[0].value == "Dana Q. Reeve"
    else:
        assert r.history("Full name").field == "fullName"


def test_an_unknown_field_in_revise_retract_undo_redo_is_reported_not_raised(runner):
    r = runner()
    r.start("pi-intake", {"fullName": "Dana Reeve"})
    for result in (r.revise("nmae", "x"), r.retract("nmae"), r.undo("nmae"), r.redo("nmae")):
        assert [u.field for u in result.unknown] == ["nmae"]
        assert result.captured == []
    assert [rev.value for rev in r.history("fullName").revisions] == ["Dana Reeve"]


def test_history_of_an_unknown_field_raises_not_found(runner):
    r = runner()
    r.start("pi-intake")
    with pytest.raises(NotFoundError) as caught:
        r.history("zz")
    assert caught.value.code == "not_found"
    assert caught.value.message == 'No field "zz" on this form.'


def test_inspect_field_scope_resolves_ids_and_labels(runner):
    r = runner()
    r.start("pi-intake", {"incidentType": "vehicle"})
    for sent in ("incidentType", "Type of incident", "incident_type"):
        view = r.inspect("field", sent)
        assert [row.id for row in view.fields] == ["incidentType"]
        assert view.step.id == "incident"


def test_inspect_step_scope_resolves_ids_and_titles(runner):
    r = runner()
    r.start("pi-intake")
    for sent in ("incident", "Incident", "INCIDENT"):
        view = r.inspect("step", sent)
        assert view.step.id == "incident"
        assert [row.id for row in view.fields][0] == "incidentType"
