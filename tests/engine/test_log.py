"""The answer log (docs/engine.md, 'The answer log'): revisions, cursor, seq, blanks, set/retract/undo/redo, history."""

from __future__ import annotations

import pytest

from formctl import FormError, FormRunner
from helpers.pydantic_words import pydantic_says


def _log(r: FormRunner, field: str):
    _, instance, _ = r.evaluation()
    return instance.entries.get(field)


def _values(r: FormRunner, field: str) -> list:
    return [rev.value for rev in r.history(field).revisions]


def _in_force(r: FormRunner, field: str):
    _, _, ev = r.evaluation()
    return ev.values.get(field, ev.held.get(field))


def _seqs(r: FormRunner) -> list[int]:
    _, instance, _ = r.evaluation()
    return sorted(e.seq for log in instance.entries.values() for e in log.revisions)


def _revision_seq(r: FormRunner) -> int:
    _, instance, _ = r.evaluation()
    return instance.revision_seq


# --------------------------------------------------------------------------- set


def test_a_correction_appends_and_moves_the_cursor_to_it(runner):
    r = runner()
    r.start("trio", {"a": "x"})
    r.revise("a", "y")
    log = _log(r, "a")
    assert [e.value for e in log.revisions] == ["x", "y"]
    assert log.cursor == 1
    assert _in_force(r, "a") == "y"


def test_restating_a_value_still_appends_a_revision(runner):
    r = runner()
    r.start("trio", {"a": "x"})
    r.fill({"a": "x"})
    assert _values(r, "a") == ["x", "x"]


def test_a_write_after_an_undo_appends_after_the_undone_revision(runner):
    # Verified: x, y, undo (back to x), then z. Undo from z gives y, not x.
    r = runner()
    r.start("trio", {"a": "x"})
    r.revise("a", "y")
    r.undo("a")
    assert _in_force(r, "a") == "x"
    r.revise("a", "z")
    assert _values(r, "a") == ["x", "y", "z"]
    r.undo("a")
    assert _in_force(r, "a") == "y"


def test_revise_records_its_reason_in_the_provenance_note(runner):
    r = runner()
    r.start("trio", {"a": "x"})
    r.revise("a", "y", reason="typo")
    r.revise("a", "z")
    notes = [rev.note for rev in r.history("a").revisions]
    assert notes[1:] == ["revision: typo", "revision"]


def test_revisions_record_the_runner_actor_and_source(runner):
    r = runner(actor="host", source="cli")
    r.start("trio", {"a": "x"})
    rev = r.history("a").revisions[0]
    assert (rev.actor, rev.source) == ("host", "cli")


def test_a_runner_without_a_source_records_forms(runner):
    r = runner()
    r.start("trio", {"a": "x"})
    assert r.history("a").revisions[0].source == "forms"
    assert r.history("a").revisions[0].actor == "agent"


# --------------------------------------------------------------------------- invalid values are stored


def test_an_invalid_value_is_stored_with_its_error_and_reads_as_invalid(runner):
    r = runner()
    r.start("basic")
    result = r.fill({"age": "forty"})
    assert result.captured == []
    assert [row.field for row in result.rejected] == ["age"]
    log = _log(r, "age")
    assert [e.value for e in log.revisions] == ["forty"]
    assert log.revisions[0].error == pydantic_says(int, "forty")  # the host's record: the validator's own words
    row = next(f for f in r.status().fields if f.id == "age")
    assert row.status == "invalid"
    assert row.error == "Age should be a whole number, like 40."  # what the model and the person read
    assert "value" not in row.to_dict()


def test_the_write_time_error_joins_issues_as_path_and_message():
    import example_forms

    form = example_forms.validation()
    outcome = form.field_by_id["address"].validator.validate({"street": 1, "town": 2})
    assert outcome.error == f"street: {pydantic_says(str, 1)}; town: {pydantic_says(str, 2)}"


def test_history_flags_invalid_revisions(runner):
    r = runner()
    r.start("basic", {"age": "forty"})
    r.revise("age", 40)
    assert [(rev.value, rev.invalid) for rev in r.history("age").revisions] == [("forty", True), (40, False)]


def test_fixing_an_invalid_answer_makes_it_filled(runner):
    r = runner()
    r.start("basic", {"age": "forty"})
    result = r.revise("age", 40)
    assert result.captured == ["age"]


# --------------------------------------------------------------------------- blanks mean leave it alone


@pytest.mark.parametrize("blank", ["", None, "   ", {"street": "", "town": None}])
def test_a_blank_value_is_ignored_and_never_creates_a_revision(runner, blank):
    r = runner()
    r.start("validation", {"code": "AB"})
    result = r.fill({"address": blank, "code": blank})
    assert result.ignored == ["address", "code"]
    assert result.captured == [] and result.rejected == []
    assert _values(r, "code") == ["AB"]
    assert _log(r, "address") is None
    out = result.to_dict()
    assert out["ignored"] == ["address", "code"]
    assert "retract" in out["ignored_note"]


def test_revising_to_a_blank_is_ignored_so_the_answer_stays(runner):
    r = runner()
    r.start("basic", {"nick": "Dee"})
    result = r.revise("nick", "")
    assert result.ignored == ["nick"]
    assert _values(r, "nick") == ["Dee"]
    assert _in_force(r, "nick") == "Dee"


def test_blank_seeds_are_ignored_at_start(runner):
    r = runner()
    result = r.start("basic", {"name": "Dana", "nick": None})
    assert result.ignored == ["nick"]
    assert result.captured == ["name"]


def test_an_object_with_one_real_leaf_is_not_blank(runner):
    r = runner()
    r.start("validation")
    result = r.fill({"address": {"street": "1 Main St", "town": ""}})
    assert result.ignored == []
    assert result.captured == ["address"]


def test_zero_and_false_are_answers_not_blanks(runner):
    r = runner()
    r.start("basic")
    result = r.fill({"age": 0, "agree": False})
    assert result.captured == ["age", "agree"]
    assert result.ignored == []


# --------------------------------------------------------------------------- seq


def test_each_staged_key_gets_the_next_seq_in_staging_order(runner):
    r = runner()
    r.start("trio", {"b": "1", "a": "2"})
    r.fill({"c": "3", "a": "4"})
    _, instance, _ = r.evaluation()
    assert [e.seq for e in instance.entries["b"].revisions] == [1]
    assert [e.seq for e in instance.entries["a"].revisions] == [2, 4]
    assert [e.seq for e in instance.entries["c"].revisions] == [3]
    assert instance.revision_seq == 4


def test_retract_takes_one_seq_and_undo_redo_take_none(runner):
    r = runner()
    r.start("trio", {"a": "x"})
    r.retract("a")
    assert _revision_seq(r) == 2
    r.undo()
    r.redo()
    r.undo("a")
    assert _revision_seq(r) == 2
    assert _seqs(r) == [1, 2]


def test_unknown_and_blank_keys_take_no_seq(runner):
    r = runner()
    r.start("trio", {"zzz": "1", "a": "", "b": "2"})
    assert _seqs(r) == [1]


class _InterleavingAdapter:
    """Delegates to a real adapter, letting another writer commit just before our first commit."""

    def __init__(self, inner, before_first_commit):
        self._inner = inner
        self._before = before_first_commit

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def commit_instance(self, *args, **kwargs):
        if self._before is not None:
            sneak, self._before = self._before, None
            sneak()
        return self._inner.commit_instance(*args, **kwargs)


def test_seqs_stay_unique_when_a_write_retries_after_a_conflict(adapter, registry):
    first = FormRunner(adapter, registry=registry, subject="s1")
    first.start("trio", {"a": "x"})
    other = FormRunner(adapter, registry=registry, subject="s1")
    racing = FormRunner(
        _InterleavingAdapter(adapter, lambda: other.fill({"b": "from the other writer"})),
        registry=registry,
        subject="s1",
    )
    result = racing.fill({"c": "mine"})
    assert result.captured == ["c"]
    assert racing.conflict_retries == 1
    assert _seqs(first) == [1, 2, 3]
    assert _revision_seq(first) == 3
    assert _values(first, "b") == ["from the other writer"]
    assert _values(first, "c") == ["mine"]


# --------------------------------------------------------------------------- retract


def test_retract_empties_the_field_and_keeps_the_answer_in_the_log(runner):
    r = runner()
    r.start("trio", {"a": "x"})
    result = r.retract("a")
    assert result.captured == [] and result.held == []
    row = r.status().fields[0]
    assert row.status == "empty"
    revisions = r.history("a").revisions
    assert [(rev.value, rev.retracted, rev.in_force) for rev in revisions] == [("x", False, False), (None, True, True)]
    assert revisions[1].note == "retracted"
    assert "value" not in revisions[1].to_dict()


def test_retract_with_a_reason_notes_it(runner):
    r = runner()
    r.start("trio", {"a": "x"})
    r.retract("a", reason="wrong person")
    assert r.history("a").revisions[-1].note == "retracted: wrong person"


def test_retracting_a_field_never_answered_is_still_recorded(runner):
    r = runner()
    r.start("trio")
    r.retract("b")
    assert [rev.retracted for rev in r.history("b").revisions] == [True]


def test_retracting_a_held_answer_is_recorded_and_it_is_no_longer_held(runner):
    r = runner()
    r.start("chain", {"a": "no", "b": "yes"})
    assert r.evaluation()[2].held == {"b": "yes"}
    r.retract("b")
    assert r.evaluation()[2].held == {}
    assert [rev.retracted for rev in r.history("b").revisions] == [False, True]


def test_retract_of_an_unknown_field_writes_nothing_and_suggests(runner):
    r = runner()
    r.start("pi-intake", {"phone": "555"})
    result = r.retract("phone_number")
    assert [(u.field, list(u.did_you_mean)) for u in result.unknown] == [("phone_number", ["phone"])]
    assert _revision_seq(r) == 1


# --------------------------------------------------------------------------- undo / redo with a field


def test_undoing_the_only_answer_empties_the_field_and_redo_restores_it(runner):
    r = runner()
    r.start("trio", {"a": "x"})
    r.undo("a")
    assert _log(r, "a").cursor == -1
    assert r.status().fields[0].status == "empty"
    r.redo("a")
    assert _in_force(r, "a") == "x"


def test_undoing_a_retraction_restores_the_previous_answer(runner):
    r = runner()
    r.start("trio", {"a": "x"})
    r.retract("a")
    r.undo("a")
    assert _in_force(r, "a") == "x"
    r.redo("a")
    assert _in_force(r, "a") is None
    assert r.status().fields[0].status == "empty"


def test_undo_and_redo_never_append_and_are_noted_in_provenance(runner):
    r = runner()
    r.start("trio", {"a": "x"})
    r.revise("a", "y")
    r.undo("a")
    assert _values(r, "a") == ["x", "y"]
    assert [rev.in_force for rev in r.history("a").revisions] == [True, False]


def test_undo_and_redo_return_empty_captured_and_held(runner):
    r = runner()
    r.start("trio", {"a": "x"})
    r.revise("a", "y")
    for result in (r.undo("a"), r.redo("a")):
        assert result.captured == [] and result.held == []


def test_a_field_that_cannot_move_raises_naming_the_resolved_field(runner):
    r = runner()
    r.start("basic", {"name": "Dana"})
    with pytest.raises(FormError) as caught:
        r.redo("Name")
    assert caught.value.code == "nothing_to_move"
    assert caught.value.message == 'Nothing to redo on "name".'
    with pytest.raises(FormError) as caught:
        r.undo("Age")
    assert caught.value.message == 'Nothing to undo on "age".'


def test_undo_past_the_first_revision_raises(runner):
    r = runner()
    r.start("trio", {"a": "x"})
    r.undo("a")
    with pytest.raises(FormError) as caught:
        r.undo("a")
    assert caught.value.message == 'Nothing to undo on "a".'


# --------------------------------------------------------------------------- bare undo / redo


def _verified_sequence(r: FormRunner) -> None:
    """A: x(1) y(2) z(3); B: b1(4); C: c1(5); B: b2(6)."""
    r.start("trio", {"a": "x"})
    r.revise("a", "y")
    r.revise("a", "z")
    r.revise("b", "b1")
    r.revise("c", "c1")
    r.revise("b", "b2")


def test_bare_undo_takes_back_whichever_field_shows_the_newest_seq(runner):
    # Verified: B=b1 (seq 4), C=c1 (5), B=b2 (6). The undos go B→b1, then C→empty, then B→empty.
    r = runner()
    _verified_sequence(r)
    r.undo()
    assert (_in_force(r, "b"), _in_force(r, "c")) == ("b1", "c1")
    r.undo()
    assert (_in_force(r, "b"), _in_force(r, "c")) == ("b1", None)
    r.undo()
    assert (_in_force(r, "b"), _in_force(r, "c")) == (None, None)
    assert _in_force(r, "a") == "z"


def test_bare_redo_prefers_the_oldest_pending_revision(runner):
    # Verified: with A's z (seq 3) and B's b2 (seq 6) both redo-able, redo picks A.
    r = runner()
    _verified_sequence(r)
    r.undo("a")
    r.undo()  # B → b1
    assert (_in_force(r, "a"), _in_force(r, "b")) == ("y", "b1")
    r.redo()
    assert (_in_force(r, "a"), _in_force(r, "b")) == ("z", "b1")
    r.redo()
    assert _in_force(r, "b") == "b2"


def test_bare_undo_counts_a_retraction_as_the_last_touch(runner):
    r = runner()
    r.start("trio", {"a": "x", "b": "y"})
    r.retract("a")
    r.undo()
    assert (_in_force(r, "a"), _in_force(r, "b")) == ("x", "y")


def test_bare_undo_with_no_answers_raises(runner):
    r = runner()
    r.start("trio")
    with pytest.raises(FormError) as caught:
        r.undo()
    assert caught.value.code == "nothing_to_move"
    assert caught.value.message == "There is nothing to undo — no answer has been given yet."


def test_bare_redo_with_nothing_undone_raises(runner):
    r = runner()
    r.start("trio", {"a": "x"})
    with pytest.raises(FormError) as caught:
        r.redo()
    assert caught.value.message == "There is nothing to redo."


def test_a_failed_undo_commits_nothing(runner):
    r = runner()
    r.start("trio")
    _, before, _ = r.evaluation()
    with pytest.raises(FormError):
        r.undo()
    _, after, _ = r.evaluation()
    assert after.version == before.version


# --------------------------------------------------------------------------- what undo/redo would do


def test_undo_would_names_the_last_touched_field_and_its_previous_value(runner):
    r = runner()
    r.start("pi-intake", {"fullName": "Dana Reeve"})
    r.revise("fullName", "Dana Q. Reeve")
    view = r.status()
    assert (view.undo.field, view.undo.label, view.undo.value) == ("fullName", "Full name", "Dana Reeve")
    assert view.to_dict()["undo_would"] == 'fullName → "Dana Reeve"'


def test_undo_would_empty_when_there_is_no_earlier_revision(runner):
    r = runner()
    r.start("trio", {"n": 3})
    assert r.status().to_dict()["undo_would"] == "n → empty"


def test_numbers_are_bare_in_undo_and_redo_would(runner):
    r = runner()
    r.start("trio", {"n": 3})
    r.revise("n", 4)
    assert r.status().to_dict()["undo_would"] == "n → 3"
    r.undo()
    out = r.status().to_dict()
    assert out["redo_would"] == "n → 4"
    assert out["undo_would"] == "n → empty"


def test_undo_would_shows_the_raw_value_even_if_invalid(runner):
    r = runner()
    r.start("basic", {"age": "forty"})
    r.revise("age", 40)
    assert r.status().to_dict()["undo_would"] == 'age → "forty" (not accepted)'


def test_undo_moves_exactly_one_revision_onto_a_refused_value_and_does_what_it_previewed(runner):
    # The design's rule (docs/engine.md, "The answer log"): the cursor moves by one, and a
    # value refused when written is a revision like any other; it comes back in force, invalid.
    r = runner()
    r.start("basic", {"age": "forty"})  # refused: not a number
    r.revise("age", 40)

    moved = r.undo("age").moved

    assert (moved.status, moved.value) == ("invalid", "forty")
    assert r.status().to_dict()["redo_would"] == "age → 40"
    assert r.redo().moved.value == 40


def test_undo_then_redo_puts_back_a_refused_value_in_force(runner):
    r = runner()
    r.start("basic", {"age": 40})
    r.revise("age", "forty")  # refused, but in force (invalid) until undone
    assert r.status().to_dict()["undo_would"] == "age → 40"

    r.undo("age")

    assert r.status().to_dict()["redo_would"] == 'age → "forty" (not accepted)'
    moved = r.redo("age").moved
    assert (moved.status, moved.value) == ("invalid", "forty")


def test_undoing_the_only_answer_empties_the_field_even_a_refused_one_and_redo_restores_it(runner):
    r = runner()
    r.start("basic")
    r.fill({"age": "forty"})

    assert r.undo("age").moved.status == "empty"
    assert r.status().to_dict()["redo_would"] == 'age → "forty" (not accepted)'
    moved = r.redo().moved
    assert (moved.status, moved.value) == ("invalid", "forty")


def test_a_correction_of_a_refused_value_undoes_back_to_the_refused_value(runner):
    r = runner()
    r.start("basic")
    r.fill({"age": "forty"})
    r.fill({"age": 40})

    moved = r.undo("age").moved

    assert (moved.status, moved.value) == ("invalid", "forty")


def test_undo_would_empty_when_the_previous_revision_is_a_retraction(runner):
    r = runner()
    r.start("trio", {"a": "x"})
    r.retract("a")
    r.revise("a", "y")
    assert r.status().to_dict()["undo_would"] == "a → empty"


def test_redo_would_empty_when_the_pending_revision_is_a_retraction(runner):
    r = runner()
    r.start("trio", {"a": "x"})
    r.retract("a")
    r.undo("a")
    assert r.status().to_dict()["redo_would"] == "a → empty"


def test_no_undo_or_redo_keys_before_any_answer(runner):
    r = runner()
    r.start("trio")
    out = r.status().to_dict()
    assert "undo_would" not in out and "redo_would" not in out
    assert r.status().undo is None and r.status().redo is None


def test_undo_would_stays_after_the_field_is_undone_to_empty(runner):
    # cursor -1: nothing at cursor, so the field is no longer "last touched".
    r = runner()
    r.start("trio", {"a": "x"})
    r.undo("a")
    out = r.status().to_dict()
    assert "undo_would" not in out
    assert out["redo_would"] == 'a → "x"'


# --------------------------------------------------------------------------- history


def test_history_lists_every_revision_oldest_first_with_the_one_in_force(runner):
    r = runner()
    r.start("basic", {"name": "Dana"})
    r.revise("name", "Dana Reeve")
    r.revise("name", "D")
    r.undo("name")
    history = r.history("name")
    assert history.field == "name" and history.label == "Name"
    assert [(rev.value, rev.in_force, rev.invalid) for rev in history.revisions] == [
        ("Dana", False, False),
        ("Dana Reeve", True, False),
        ("D", False, True),
    ]
    d = history.to_dict()
    assert d["field"] == "name" and len(d["revisions"]) == 3
    assert d["revisions"][0]["value"] == "Dana"
    assert all(rev["at"] for rev in d["revisions"])


def test_history_of_a_never_answered_field_is_empty(runner):
    r = runner()
    r.start("basic")
    assert r.history("colour").revisions == ()


def test_history_invalid_is_the_write_time_error_not_a_reparse():
    import example_forms
    from formctl.forms.history import field_history
    from formctl.forms.instance import Entry, FieldLog, Instance, Provenance

    prov = Provenance("tests", "agent", "2026-01-01T00:00:00.000Z")
    instance = Instance(
        id="form_x",
        def_id="basic",
        def_version=1,
        subject="s",
        entries={
            "age": FieldLog((Entry(1, "forty", prov), Entry(2, 4, prov, error="was wrong then")), 1),
        },
        revision_seq=2,
    )
    assert [rev.invalid for rev in field_history(instance, "age", "Age").revisions] == [False, True]
    assert example_forms.basic().field_by_id["age"].validator.validate(4).ok


# --------------------------------------------------------------------------- writability and staging never raising


@pytest.mark.parametrize("verb", ["fill", "revise", "retract", "undo", "redo"])
def test_an_abandoned_instance_refuses_every_write(runner, verb):
    r = runner()
    iid = r.start("trio", {"a": "x"}).instance_id
    r.revise("a", "y")
    r.undo("a")
    r.abandon("Done with it.")
    call = {
        "fill": lambda: r.fill({"b": "z"}, instance_id=iid),
        "revise": lambda: r.revise("b", "z", instance_id=iid),
        "retract": lambda: r.retract("a", instance_id=iid),
        "undo": lambda: r.undo("a", instance_id=iid),
        "redo": lambda: r.redo("a", instance_id=iid),
    }[verb]
    with pytest.raises(FormError) as caught:
        call()
    assert caught.value.code == "form_closed"
    assert caught.value.message == f'Form instance "{iid}" was abandoned and no longer accepts answers.'
    assert _values_by_id(r, iid) == {"a": ["x", "y"]}


def _values_by_id(r: FormRunner, iid: str) -> dict:
    instance = r.open_instance(iid)
    return {fid: [e.value for e in log.revisions] for fid, log in instance.entries.items()}
