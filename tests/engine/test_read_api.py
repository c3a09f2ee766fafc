"""The runner's public read API: what every layer above the engine asks instead of the store.

``compiled``, ``instances``, ``view``, ``tier0(instance_id=...)``, and the ``moved`` row of an
undo, redo or retract result.
"""

from __future__ import annotations

import pytest

from formctl import FormError, NotFoundError, UnknownFormError


def test_compiled_is_the_registered_definition(runner):
    r = runner()

    assert r.compiled("basic").id == "basic"
    with pytest.raises(UnknownFormError):
        r.compiled("no-such-form")


def test_instances_filter_by_subject_form_and_status_most_recent_first(runner):
    mine, theirs = runner("me"), runner("them")
    first = mine.start("basic", {"name": "Dana"}).instance_id
    second = mine.start("opt").instance_id
    other = theirs.start("basic").instance_id
    mine.abandon("not needed", instance_id=first)

    assert [s.instance_id for s in mine.instances(subject="me")] == [first, second]
    assert {s.instance_id for s in mine.instances()} == {first, second, other}
    assert [s.instance_id for s in mine.instances(form_id="basic")] == [first, other]  # abandoned last
    assert [s.instance_id for s in mine.instances(status="abandoned")] == [first]
    assert [s.instance_id for s in mine.instances(subject="me", status="active", limit=1)] == [second]
    row = mine.instances(subject="me")[0].to_dict()
    assert row == {
        "instance_id": first,
        "form": "basic",
        "subject": "me",
        "status": "abandoned",
        "answered": 1,
        "updated_at": row["updated_at"],
        "closed_reason": "not needed",
    }
    assert "subject" not in mine.instances(subject="me")[0].to_dict(subject=False)


def test_view_is_the_stored_instance_evaluated_against_the_registered_form(runner):
    r = runner()
    iid = r.start("basic", {"name": "Dana"}).instance_id

    view = r.view()

    assert (view.instance_id, view.compiled.id, view.status, view.stale) == (iid, "basic", "active", False)
    assert view.evaluation.values == {"name": "Dana"}
    with pytest.raises(NotFoundError):
        r.view("form_nope_000000")


def test_tier0_of_an_instance_by_id_is_the_subjects_line_for_its_open_form(runner):
    r = runner()
    old = r.start("basic", {"name": "Dana"}).instance_id
    r.start("opt")

    assert r.tier0() != r.tier0(instance_id=old)
    assert r.tier0(instance_id=old).startswith("[form: basic]")
    assert r.tier0(instance_id="form_nope_000000") == ""


def test_undo_redo_and_retract_say_which_field_moved_and_what_it_holds(runner):
    r = runner()
    r.start("basic", {"name": "Dana"})
    r.revise("name", "Dana Reeve")

    undone = r.undo()
    assert (undone.moved.id, undone.moved.value) == ("name", "Dana")
    redone = r.redo("name")
    assert (redone.moved.id, redone.moved.value) == ("name", "Dana Reeve")
    withdrawn = r.retract("name")
    assert (withdrawn.moved.id, withdrawn.moved.has_value) == ("name", False)
    assert r.fill({"name": "X"}).moved is None
    assert "moved" not in undone.to_dict()


def test_recover_and_migrate_refuse_an_abandoned_instance_or_leave_it_alone(runner):
    r = runner()
    iid = r.start("basic").instance_id
    r.abandon("gone", instance_id=iid)

    assert r.recover(iid).rerun == []
    with pytest.raises(FormError):
        r.migrate(iid)
