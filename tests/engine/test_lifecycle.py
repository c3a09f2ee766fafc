"""Instance lifecycle: start, writability, the open form of a subject, abandon, and the
errors a host sees for unknown forms and instances (docs/engine.md, 'Completion and
closing' and 'Reads and writes')."""

from __future__ import annotations

import pytest

from formctl import FormError, FormRunner, InvalidArgumentError, NotFoundError, UnknownFormError

MISSING_ID = "form_zzzzzzzz_aaaaaa"


# Every reading of the clock one second after the last: "most recently updated" is never a tie.
pytestmark = pytest.mark.usefixtures("clock")


# --------------------------------------------------------------------------- start


def test_start_creates_an_active_instance_for_the_subject_pinned_to_the_def_version(runner):
    r = runner("claimant-7")

    result = r.start("basic")

    stored = r.open_instance()
    assert stored.id == result.instance_id
    assert (stored.def_id, stored.def_version, stored.subject, stored.status) == ("basic", 1, "claimant-7", "active")
    assert stored.entries == {}
    assert result.view.to_dict()["step"]["id"] == "one"


def test_a_start_seed_is_staged_like_a_fill(runner):
    result = runner().start("basic", seed={"name": "Dana", "agee": 3, "age": "forty"})

    assert result.captured == ["name"]
    assert [u.field for u in result.unknown] == ["agee"]
    assert [row.field for row in result.rejected] == ["age"]
    stored = runner().open_instance()
    assert stored.in_force_values() == {"name": "Dana", "age": "forty"}


def test_starting_a_form_that_is_open_is_refused_and_names_the_one_to_continue(runner, adapter):
    r = runner()
    first = r.start("basic", seed={"name": "Dana"}).instance_id

    with pytest.raises(FormError) as err:
        r.start("basic")

    assert err.value.code == "form_open"
    assert first in err.value.message
    assert [i.id for i in adapter.find_instances(subject="s1")] == [first]


def test_once_the_open_one_is_closed_starting_again_makes_a_second_instance_which_becomes_the_open_form(runner):
    r = runner()
    first = r.start("basic", seed={"name": "Dana"}).instance_id
    r.abandon("started over", instance_id=first)

    second = r.start("basic").instance_id

    assert second != first
    assert r.open_instance().id == second
    assert r.open_instance(first).in_force_values() == {"name": "Dana"}


def test_an_unknown_form_id_raises_not_found_and_creates_nothing(runner, adapter):
    r = runner()
    existing = r.start("basic", seed={"name": "Dana"}).instance_id

    with pytest.raises(UnknownFormError) as err:
        r.start("no-such-form")

    assert err.value.code == "not_found"
    assert str(err.value) == 'No form registered as "no-such-form".'
    assert [i.id for i in adapter.find_instances(subject="s1")] == [existing]
    assert r.open_instance().in_force_values() == {"name": "Dana"}


# --------------------------------------------------------------------------- resolution errors


@pytest.mark.parametrize(
    "call",
    [
        lambda r: r.status(instance_id=MISSING_ID),
        lambda r: r.fill({"name": "Dana"}, instance_id=MISSING_ID),
        lambda r: r.abandon("gone", instance_id=MISSING_ID),
        lambda r: r.history("name", instance_id=MISSING_ID),
        lambda r: r.resolve_checkpoint(instance_id=MISSING_ID),
    ],
    ids=["status", "fill", "abandon", "history", "resolve"],
)
def test_an_unknown_instance_id_raises_not_found(runner, call):
    r = runner()
    r.start("basic")

    with pytest.raises(NotFoundError) as err:
        call(r)

    assert err.value.code == "not_found"
    assert str(err.value) == f'No form instance "{MISSING_ID}".'


def test_a_subject_with_no_open_form_gets_not_found_and_an_empty_tier0(runner):
    r = runner("nobody")

    with pytest.raises(NotFoundError) as err:
        r.fill({"name": "Dana"})

    assert err.value.code == "not_found"
    assert str(err.value) == 'No open form instance for subject "nobody".'
    assert r.open_instance() is None
    assert r.tier0() == ""


# --------------------------------------------------------------------------- writability


@pytest.mark.parametrize(
    "write",
    [
        lambda r, iid: r.fill({"age": 3}, instance_id=iid),
        lambda r, iid: r.revise("name", "Eve", instance_id=iid),
        lambda r, iid: r.retract("name", instance_id=iid),
        lambda r, iid: r.undo(instance_id=iid),
        lambda r, iid: r.redo("name", instance_id=iid),
    ],
    ids=["fill", "revise", "retract", "undo", "redo"],
)
def test_writes_to_an_abandoned_instance_are_refused_and_nothing_is_lost(runner, write):
    r = runner()
    iid = r.start("basic", seed={"name": "Dana"}).instance_id
    abandoned = r.abandon("duplicate")

    with pytest.raises(FormError) as err:
        write(r, iid)

    assert err.value.code == "form_closed"
    assert str(err.value) == f'Form instance "{iid}" was abandoned and no longer accepts answers.'
    stored = r.open_instance(iid)
    assert stored.version == abandoned.version
    assert stored.in_force_values() == {"name": "Dana"}


def test_an_abandoned_instance_is_still_readable_by_id(runner):
    r = runner()
    iid = r.start("basic", seed={"name": "Dana"}).instance_id
    r.abandon("claimant withdrew")

    view = r.status(instance_id=iid).to_dict()

    assert (view["status"], view["complete"], view["closed_reason"]) == ("abandoned", False, "claimant withdrew")
    assert all(f["ask"] is False for f in view["fields"])
    assert r.history("name", instance_id=iid).to_dict()["revisions"][0]["value"] == "Dana"


def test_a_complete_instance_stays_the_open_form_and_takes_corrections(runner):
    r = runner()
    r.start("basic", seed={"name": "Dana", "age": 40, "colour": "red", "agree": True})
    assert r.status().status == "complete"

    result = r.revise("age", 41, reason="birthday")

    assert result.captured == ["age"]
    assert result.view.status == "complete"
    assert r.open_instance().in_force_values()["age"] == 41


# --------------------------------------------------------------------------- abandon


def test_abandon_closes_the_instance_keeps_every_answer_and_records_the_reason(runner):
    r = runner()
    iid = r.start("basic", seed={"name": "Dana", "age": 40}).instance_id

    stored = r.abandon("claimant withdrew")

    assert (stored.id, stored.status, stored.closed_reason) == (iid, "abandoned", "claimant withdrew")
    assert stored.in_force_values() == {"name": "Dana", "age": 40}
    assert r.open_instance() is None
    assert r.tier0() == ""


def test_abandoning_again_is_refused_and_the_first_reason_stays(runner):
    r = runner()
    iid = r.start("basic").instance_id
    r.abandon("first reason")
    version = r.open_instance(iid).version

    with pytest.raises(FormError) as raised:
        r.abandon("second reason", instance_id=iid)

    assert raised.value.code == "form_closed" and "first reason" in raised.value.message
    stored = r.open_instance(iid)
    assert (stored.status, stored.closed_reason, stored.version) == ("abandoned", "first reason", version)


def test_a_complete_instance_cannot_be_abandoned(runner):
    r = runner()
    iid = r.start("basic", seed={"name": "Dana", "age": 40, "colour": "red", "agree": True}).instance_id
    assert r.open_instance(iid).status == "complete"

    with pytest.raises(FormError) as raised:
        r.abandon("changed my mind", instance_id=iid)

    assert raised.value.code == "form_closed"
    stored = r.open_instance(iid)
    assert (stored.status, stored.closed_reason) == ("complete", None)


@pytest.mark.parametrize("reason", ["", "   "])
def test_abandon_needs_a_reason(runner, reason):
    r = runner()
    r.start("basic")

    with pytest.raises(InvalidArgumentError):
        r.abandon(reason)

    assert r.open_instance().status == "active"


# --------------------------------------------------------------------------- the open form of a subject


def test_the_open_form_is_the_most_recently_updated_instance_that_is_not_abandoned(runner):
    r = runner()
    older = r.start("basic").instance_id
    newer = r.start("trio").instance_id

    r.fill({"name": "Dana"}, instance_id=older)  # writing to the older one makes it open again
    assert r.open_instance().id == older
    assert r.status().def_id == "basic"

    r.abandon("not needed")  # abandons the open one: the other becomes open
    assert r.open_instance().id == newer


def test_the_open_form_is_found_however_many_newer_instances_were_abandoned(runner):
    r = runner()
    oldest = r.start("trio", seed={"a": "kept"}).instance_id
    for _ in range(26):  # more than the reference's 25-row window
        r.start("basic")
        r.abandon("not this one")

    assert r.open_instance().id == oldest
    assert r.fill({"b": "still reachable"}).instance_id == oldest


def test_each_subject_has_its_own_open_form(runner):
    mine = runner("s1")
    theirs = runner("s2")
    iid = mine.start("basic").instance_id

    assert theirs.open_instance() is None
    assert mine.open_instance().id == iid


def test_a_subject_may_be_a_function_called_on_each_use(adapter, registry):
    current = {"subject": "alice"}
    r = FormRunner(adapter, registry=registry, subject=lambda: current["subject"])
    alice = r.start("basic").instance_id

    current["subject"] = "bob"
    assert r.open_instance() is None
    bob = r.start("basic").instance_id

    current["subject"] = "alice"
    assert r.open_instance().id == alice
    assert r.open_instance(bob).subject == "bob"


# --------------------------------------------------------------------------- transitions (formctl.forms.lifecycle)


def test_move_to_reads_a_clock_only_when_it_completes_the_form():
    from formctl.forms.instance import UNSET, Commit, Status
    from formctl.forms.lifecycle import move_to

    asked: list[str] = []

    def clock() -> str:
        asked.append("now")
        return "2026-01-02T03:04:05.000000Z"

    ready = Commit()
    move_to(ready, Status.READY, clock)
    assert (ready.status, ready.completed_at, asked) == (Status.READY, UNSET, [])

    done = Commit()
    move_to(done, Status.COMPLETE, clock)
    assert (done.status, done.completed_at, asked) == (Status.COMPLETE, "2026-01-02T03:04:05.000000Z", ["now"])

    again = Commit()
    move_to(again, Status.COMPLETE, "2026-02-01T00:00:00.000000Z", completed_at="2026-01-01T00:00:00.000000Z")
    assert (again.status, again.completed_at) == (Status.COMPLETE, UNSET)  # the earlier stamp is kept


def test_await_host_writes_only_what_changes_on_an_instance_already_waiting(runner):
    from formctl.forms.instance import UNSET, Commit, Status
    from formctl.forms.lifecycle import await_host

    instance = runner().open_instance(runner().start("basic").instance_id)
    fresh = Commit()
    await_host(fresh, "cp", instance)
    assert (fresh.status, fresh.blocked_on) == (Status.AWAITING, "cp")

    instance.status, instance.blocked_on = Status.AWAITING, "cp"
    same = Commit()
    await_host(same, "cp", instance)
    assert (same.status, same.blocked_on) == (UNSET, UNSET)


def test_a_host_reopen_settles_an_abandoned_form_from_its_answers_and_records_where_it_went(runner):
    r = runner()
    iid = r.start("basic", seed={"name": "Dana"}).instance_id
    r.abandon("by mistake", instance_id=iid)

    view = r.reopen(iid, reason="it was not a mistake after all")

    stored = r.open_instance(iid)
    assert stored.status == "active" and stored.closed_reason is None
    assert view.to_dict()["status"] == "active"
    acts = [d for d in stored.dispatches.values() if d.hook_id == "act:reopen"]
    assert [a.detail for a in acts] == ["abandoned → active"]
