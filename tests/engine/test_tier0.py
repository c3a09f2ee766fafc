"""Tier 0, the standing line (docs/engine.md, 'Tier 0': no conduct line), and which form it is about."""

from __future__ import annotations

import pytest

import example_forms
from example_forms import build_instance
from formctl import FormStaleError
from formctl.forms.evaluate import evaluate
from formctl.forms.instance import now_iso
from formctl.forms.project import tier0


def _tick() -> None:
    """Wait for the millisecond clock to move, so "most recently updated" is unambiguous."""
    start = now_iso()
    while now_iso() == start:
        pass


def _pure(form, answers=None, **attrs) -> str:
    instance = build_instance(form, answers, **attrs)
    return tier0(form, evaluate(form, instance), instance)


# --------------------------------------------------------------------------- the verified renderings


def test_the_first_step_line_names_what_is_pending_and_what_comes_later(runner):
    r = runner()
    r.start("pi-intake")
    assert r.tier0() == (
        '[form: pi-intake] step 1/2 "Claimant" · pending: Full name, Email, Phone\n'
        "later: Incident (date, type, what happened)"
    )


def test_tier0_never_carries_the_conduct_line(runner):
    r = runner()
    r.start("pi-intake")
    assert "Conversational" not in r.tier0()
    r.start("rv", {"name": "Ann", "detail": "changed"})
    assert not r.tier0().endswith("C.")


def test_a_revisit_reads_back_at_step_and_go_through_it_again(runner):
    r = runner()
    r.start("rv", {"name": "Ann", "detail": "changed"})
    assert r.tier0() == (
        '[form: rv] back at step 1/3 "Claimant" — go through it again · pending: Nick\nlater: Sign-off (sig)'
    )


def test_an_open_failure_adds_a_blocked_line_naming_its_field_by_label(runner):
    r = runner()
    r.start("f", {"x": "bad"})
    assert r.tier0() == '[form: f] step 1/1 "A" · pending: Y\nblocked: X: boom'


def test_an_awaiting_form_is_a_single_line_with_the_wait_message(runner):
    r = runner()
    r.start("blk", {"x": "hit"})
    assert r.tier0() == '[form: blk] awaiting the "cp" check — Hold on.'


def test_an_awaiting_line_without_a_wait_message_ends_at_the_checkpoint():
    from formctl import define_form

    form = (
        define_form("w", name="W")
        .step("s", title="S")
        .field("x", str, label="X")
        .checkpoint("cp", when=lambda v, s: True, blocking=True)
        .build()
    )
    assert _pure(form, status="awaiting", blocked_on="cp") == '[form: w] awaiting the "cp" check'


def test_later_lists_gated_off_steps_too(runner):
    # Verified: step 1 all optional, step 3 gated by q=="go". While step 2 is open,
    # later lists C although its gate is false.
    r = runner()
    r.start("opt")
    assert r.tier0() == '[form: opt] step 2/4 "B" · pending: Q\nlater: C · D (pd)'


def test_incomplete_steps_before_the_open_step_are_not_listed_later(runner):
    r = runner()
    r.start("opt", {"q": "no"})
    assert r.tier0() == '[form: opt] step 4/4 "D" · pending: T'


def test_the_fallback_opens_a_gated_off_step_once_the_rest_are_complete(runner):
    # Verified: once steps 2 and 4 are complete, the fallback opens gated step C.
    r = runner()
    r.start("opt", {"q": "no"})
    r.fill({"t": "done"})
    assert r.tier0() == '[form: opt] step 3/4 "C" · pending: R'


# --------------------------------------------------------------------------- the rules


def test_pending_covers_empty_invalid_and_optional_fields_but_not_filled_or_held():
    form = example_forms.pi_intake()
    line = _pure(
        form,
        {
            "fullName": "Dana Reeve",
            "email": "nope",
            "phone": "555",
            "incidentType": "medical",
            "vehicleCount": 3,
        },
        open_step_override="incident",
    )
    assert line.splitlines()[0] == '[form: pi-intake] step 2/2 "Incident" · pending: Date of incident, Sought treatment'
    form = example_forms.basic()
    assert _pure(form, {"name": "Dana", "age": "x"}).splitlines()[0] == (
        '[form: basic] step 1/2 "One" · pending: Age, Nickname'
    )


def test_a_step_with_nothing_pending_shows_the_head_alone():
    form = example_forms.rv()
    line = _pure(form, {"name": "Ann", "nick": "A", "detail": "x"}, open_step_override="claimant")
    assert line.splitlines()[0] == '[form: rv] back at step 1/3 "Claimant" — go through it again'


def test_with_no_open_step_the_line_says_nothing_pending():
    form = example_forms.basic()
    answers = {"name": "Dana", "age": 4, "colour": "red", "agree": True}
    assert _pure(form, answers, status="active") == "[form: basic] nothing pending"


def test_a_complete_form_has_no_line(runner):
    r = runner()
    r.start("basic", {"name": "Dana", "age": 4, "colour": "red", "agree": True})
    assert r.tier0() == ""


def test_a_form_marked_complete_has_no_line_even_with_fields_pending():
    form = example_forms.basic()
    assert _pure(form, {"name": "Dana"}, status="complete") == ""


def test_a_complete_form_being_revisited_has_a_line(runner):
    r = runner()
    r.start("rv", {"name": "Ann", "sig": "A.", "detail": "changed"})
    assert r.status().status == "complete"
    assert r.tier0() == '[form: rv] back at step 1/3 "Claimant" — go through it again · pending: Nick'


def test_an_abandoned_form_has_no_line(runner):
    r = runner()
    r.start("basic")
    r.abandon("Changed their mind.")
    assert r.tier0() == ""


def test_a_stored_abandoned_instance_renders_nothing():
    form = example_forms.basic()
    assert _pure(form, status="abandoned") == ""


def test_an_awaiting_form_without_a_checkpoint_renders_its_step():
    form = example_forms.basic()
    assert _pure(form, status="awaiting").startswith('[form: basic] step 1/2 "One"')


def test_a_stale_form_is_a_single_line_and_no_read_commits(runner, registry):
    r = runner()
    iid = r.start("basic", {"name": "Dana"}).instance_id
    version = r.open_instance(iid).version
    registry.register("basic", name="basic", load=lambda: example_forms.basic(version=2))
    stale = "[form: basic] stale — the definition changed since this was started; it can't be continued."
    assert r.tier0() == stale
    with pytest.raises(FormStaleError):
        r.status()
    assert r.tier0() == stale
    assert r.tier0(instance_id=iid) == stale
    stored = r.open_instance(iid)
    assert (stored.status, stored.version) == ("active", version)  # stale is read, never stored
    assert [i.status for i in r.instances(subject="s1")] == ["stale"]


def test_no_open_form_gives_an_empty_line(runner):
    assert runner().tier0() == ""


def test_a_form_that_fails_to_load_gives_an_empty_line(runner, registry):
    r = runner()
    r.start("basic")

    def broken():
        raise ImportError("the module moved")

    registry.register("basic", name="basic", load=broken)
    assert r.tier0() == ""


def test_tier0_can_be_asked_about_another_subject(runner):
    mine, theirs = runner("me"), runner("them")
    theirs.start("opt", {"q": "no"})
    assert mine.tier0() == ""
    assert mine.tier0("them") == '[form: opt] step 4/4 "D" · pending: T'


def test_a_failure_line_goes_once_the_hook_next_succeeds(runner):
    r = runner()
    r.start("f", {"x": "bad"})
    r.retract("x")
    r.fill({"x": "good"})
    assert r.tier0() == '[form: f] step 1/1 "A" · pending: Y'


# --------------------------------------------------------------------------- which form is open


def test_the_newest_instance_is_the_open_form(runner):
    r = runner()
    r.start("basic")
    _tick()
    r.start("trio")
    assert r.tier0().startswith("[form: trio]")


def test_writing_to_an_older_instance_by_id_makes_it_open_again(runner):
    r = runner()
    older = r.start("basic").instance_id
    _tick()
    r.start("trio")
    _tick()
    r.fill({"name": "Dana"}, instance_id=older)
    assert r.tier0().startswith("[form: basic]")
    assert r.status().instance_id == older


def test_abandoned_instances_are_never_open_and_completed_ones_still_are(runner):
    r = runner()
    done = r.start("basic", {"name": "Dana", "age": 4, "colour": "red", "agree": True}).instance_id
    _tick()
    r.start("trio")
    _tick()
    r.abandon("Wrong form.")
    assert r.status().instance_id == done
    assert r.status().status == "complete"


def test_the_open_form_is_found_behind_any_number_of_abandoned_ones(runner):
    r = runner()
    keep = r.start("trio").instance_id
    for _ in range(26):
        _tick()
        r.start("basic")
        r.abandon("Started by mistake.")
    assert r.status().instance_id == keep
    assert r.tier0().startswith("[form: trio]")


def test_a_subject_with_only_abandoned_forms_has_no_open_form(runner):
    r = runner()
    r.start("basic")
    r.abandon("No.")
    assert r.open_instance() is None
    assert r.tier0() == ""


def test_the_persons_status_names_a_standing_failure_in_words():
    from formctl import define_form
    from formctl.forms.compile import compile_form
    from formctl.forms.failures import failure_text

    compiled = compile_form(
        define_form("f", name="F")
        .step("costs", title="Costs")
        .field("total", float, label="Total claimed")
        .checkpoint("policy-cap", when=lambda v, s: False)
        .build()
    )
    assert failure_text(compiled, "step:costs", "Too much.") == "Costs: Too much."
    assert failure_text(compiled, "checkpoint:policy-cap", "Over.") == 'The "policy cap" check: Over.'
    assert failure_text(compiled, "field:total", "Bad.") == "Total claimed: Bad."
    assert failure_text(compiled, "checkpoint:policy-cap", "Over.", host=True) == (
        'The "policy cap" check [policy-cap]: Over.'  # a host's view: the id they act on
    )


def test_the_persons_ready_line_has_no_instruction_for_the_model():
    from formctl import define_form
    from formctl.forms.compile import compile_form
    from formctl.forms.person_status import status_lines

    form = compile_form(
        define_form("r", name="R", review=True)
        .step("one", title="One")
        .field("name", str, label="Name")
        .field("note", str | None, label="Note")
        .build()
    )
    instance = build_instance(form, {"name": "Dana"}, status="ready")
    ev = evaluate(form, instance)
    assert "form_submit" in tier0(form, ev, instance)  # the model's line says what to do
    assert status_lines(form, ev, instance) == ["[form: r] ready to send · optional, unanswered: Note"]


def test_the_persons_step_line_follows_the_question_asked_and_leaves_out_what_they_skipped():
    """A model that says what it asked (the guided model): the person's status line is the step of
    that question, which may be behind the engine's open step, without the fields left out."""
    from formctl import define_form
    from formctl.forms.compile import compile_form
    from formctl.forms.person_status import Asking, status_lines

    form = compile_form(
        define_form("a", name="A")
        .step("one", title="One")
        .field("name", str, label="Name")
        .field("nick", str | None, label="Nickname")
        .field("note", str | None, label="Note")
        .step("two", title="Two")
        .field("city", str, label="City")
        .field("zip", str | None, label="Zip")
        .build()
    )
    instance = build_instance(form, {"name": "Dana"})
    ev = evaluate(form, instance)
    engine = status_lines(form, ev, instance)
    assert engine[0] == '[form: a] step 2/2 "Two" · pending: City, Zip'
    asked = status_lines(form, ev, instance, asking=Asking("nick", frozenset({"note"})))
    assert asked[0] == '[form: a] step 1/2 "One" · pending: Nickname'
    assert asked[1:] == engine[1:]
    here = status_lines(form, ev, instance, asking=Asking("city", frozenset({"zip"})))
    assert here[0] == '[form: a] step 2/2 "Two" · pending: City'
    assert status_lines(form, ev, instance, asking=Asking(None)) == engine
