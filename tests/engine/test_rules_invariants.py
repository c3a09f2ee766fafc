"""Checks and derived values hold after every write (docs/engine.md, "Checks", "Derived values").

Random forms (gated fields, checks on steps and on the form, derived fields, some reading other
derived fields) under random walks of fills, retractions, undos and redos: after every write each
check's outcome in every view (the evaluation, the step and outline views, tier 0, the person's
status, the stored status, a submit) is the check applied to the live values, and each derived
field holds its function of the live values, or nothing live while an input it reads is not live.
"""

from __future__ import annotations

import functools
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from formctl import FormError, FormRegistry, FormRunner, MemoryAdapter, define_form
from formctl.forms.evaluate import evaluate
from formctl.forms.person_status import status_lines

_sampled = functools.cache(st.sampled_from)

INPUTS = ("a", "b", "c", "d")
DERIVED = ("p", "q")
IDS = INPUTS + DERIVED
VALUES = ("x", "y", "", 5)  # 5 is invalid for a text field: stored, never live


class _NotLive(Exception):
    pass


class _Strict(dict):
    """The oracle's values for a derived function: ``v["k"]`` of an answer not live is not live."""

    def __missing__(self, key: str) -> Any:
        raise _NotLive(key)


def _derive(kind: str, one: str, two: str):
    if kind == "join":
        return lambda v: f"{v[one]}-{v[two]}"
    if kind == "copy":
        return lambda v: v[one]
    if kind == "flip":  # reads its input with .get: a missing input is None, not "held"
        return lambda v: "y" if v.get(one) == "x" else "x"
    return lambda v: None if v[one] == "y" else v[one]  # "drop": no value for "y"


def _test(kind: str, one: str, two: str):
    if kind == "differ":
        return lambda v: v[one] != v[two]
    if kind == "not_y":
        return lambda v: v.get(one) != "y"
    return lambda v: not (v[one] == "x" and v[two] == "x")  # "not_both_x"


@st.composite
def _rule_forms(draw):
    fields = [(fid, draw(st.booleans()), draw(_sampled(("none", "none", "eq"))), draw(_sampled(IDS))) for fid in INPUTS]
    derived = [
        (
            fid,
            draw(_sampled(("join", "copy", "flip", "drop"))),
            draw(_sampled(INPUTS + DERIVED[:i])),  # q may read p: a derived value feeding another
            draw(_sampled(INPUTS)),
            draw(_sampled(("none", "none", "eq"))),
            draw(_sampled(INPUTS)),
        )
        for i, fid in enumerate(DERIVED)
    ]
    checks = [
        (
            f"k{j}",
            draw(st.integers(0, 2)),  # step 0, step 1, or 2: the form's own
            draw(_sampled(("differ", "not_y", "not_both_x"))),
            draw(_sampled(IDS)),
            draw(_sampled(IDS)),
            draw(st.booleans()),  # with a when gate
        )
        for j in range(draw(st.integers(1, 3)))
    ]
    return fields, derived, checks, draw(st.booleans())


def _build(case):
    fields, derived, checks, review = case
    builder = define_form("rules", name="Rules", review=review)
    by_step: dict[int, list[Any]] = {0: [], 1: [], 2: []}
    for check in checks:
        by_step[check[1]].append(check)

    def add_checks(where: int):
        nonlocal builder
        for cid, _, kind, one, two, gated in by_step[where]:
            builder = builder.check(
                cid,
                _test(kind, one, two),
                f"check {cid} fails",
                fields=(one, two),
                when=(lambda v, s, t=one: v[t] != "x") if gated else None,
            )

    builder = builder.step("s0", title="Step 0")
    for fid, optional, gate, target in fields[:2]:
        when = (lambda v, s, t=target: v[t] != "y") if gate == "eq" else None
        builder = builder.field(fid, str | None if optional else str, label=fid.upper(), when=when)
    add_checks(0)
    builder = builder.step("s1", title="Step 1")
    for fid, optional, gate, target in fields[2:]:
        when = (lambda v, s, t=target: v[t] != "y") if gate == "eq" else None
        builder = builder.field(fid, str | None if optional else str, label=fid.upper(), when=when)
    for fid, kind, one, two, gate, target in derived:
        when = (lambda v, s, t=target: v[t] != "y") if gate == "eq" else None
        builder = builder.field(fid, str | None, label=fid.upper(), when=when, derive=_derive(kind, one, two))
    add_checks(1)
    builder = builder.on_complete(lambda ctx: None)  # past the last step: the checks that follow are the form's
    add_checks(2)
    return builder.build()


@functools.cache
def _walks():
    return st.lists(
        st.one_of(
            st.tuples(st.just("fill"), st.dictionaries(_sampled(IDS), _sampled(VALUES), min_size=1, max_size=3)),
            st.tuples(st.just("retract"), _sampled(IDS)),
            st.tuples(st.just("undo"), _sampled((*IDS, None, None))),
            st.tuples(st.just("redo"), _sampled((*IDS, None, None))),
        ),
        max_size=14,
    )


def _act(runner: FormRunner, op: tuple[str, Any]) -> None:
    kind, arg = op
    try:
        {"fill": runner.fill, "retract": runner.retract, "undo": runner.undo, "redo": runner.redo}[kind](arg)
    except FormError as error:
        # nothing to undo or redo; a write naming only a derived field, refused; a definition whose
        # derived value feeds its own input's gate and so never settles, refused as a definition
        # defect (docs/engine.md, "Derived values"): the write is refused whole, so the
        # invariants below still hold of the state as it was
        never_settles = error.code == "form_definition_error" and "did not settle" in error.message
        assert error.code in ("nothing_to_move", "derived_field") or never_settles, (op, error)
        if error.code == "derived_field":
            assert kind in ("retract", "undo", "redo") and arg in DERIVED or kind == "fill"


def _expected_derived(compiled, ev, field_id: str) -> tuple[bool, Any]:
    """(live, value) of a derived field by its own definition, from the live values of the others."""
    field = compiled.field_by_id[field_id]
    values = {k: v for k, v in ev.values.items() if k != field_id}
    # The field's own gate is the engine's rule of liveness (the shrink-only fixpoint of
    # docs/engine.md, "Liveness and applicability"), not this property's: a gate that reads a
    # field the same pass excluded stays false. So its applicability is the evaluation's.
    if not ev.applicable[field.order]:
        return False, None
    try:
        return True, field.derive(_Strict(values))
    except _NotLive:
        return False, None


def _expected_failing(compiled, ev) -> list[str]:
    """The checks that apply (their required answers live, their when true) and fail, by definition."""
    failing = []
    for check in compiled.checks:
        required = [f for f in check.fields if compiled.field_by_id[f].required]
        if not all(f in ev.live for f in required):
            continue
        if check.when is not None and not check.when(ev.gate_values(), None):
            continue
        if not check.test(ev.gate_values()):
            failing.append(check.id)
    return failing


def _assert_rules_hold(runner: FormRunner, op: Any) -> None:
    compiled, instance, ev = runner.evaluation()
    fresh = evaluate(compiled, instance)
    assert [c.id for c in ev.failed_checks] == [c.id for c in fresh.failed_checks], op  # the cache is fresh
    assert ev.values == fresh.values and ev.derived_due == {} == fresh.derived_due, op

    failing = _expected_failing(compiled, ev)
    assert [c.id for c in ev.failed_checks] == failing, op
    status_view, outline = runner.status().to_dict(), runner.inspect("outline").to_dict()
    for view in (status_view, outline):
        assert [c["check"] for c in view.get("checks_failed", [])] == failing, op
    tier0 = runner.tier0()
    person = "\n".join(status_lines(compiled, ev, instance))
    for check in compiled.checks:
        said = f"held: check {check.id} fails"
        assert (said in tier0) == (check.id in failing), (op, tier0)
        assert (said in person) == (check.id in failing), (op, person)
        if check.step_index is not None and check.id in failing:
            assert not ev.step_complete[check.step_index], op
    if failing:
        assert instance.status not in ("ready", "complete") and not outline["complete"], op
        if compiled.review:
            try:
                runner.submit()
            except FormError as error:
                assert error.code == "check_failed", op
            else:
                raise AssertionError(f"a submit was taken while {failing} fail ({op})")

    rows = {row["id"]: row for row in outline["fields"]}
    for field_id in DERIVED:
        live, value = _expected_derived(compiled, ev, field_id)
        if live and value is not None:
            assert ev.values.get(field_id) == value and rows[field_id]["value"] == value, (op, field_id)
            assert ev.field_status(field_id) == "filled", (op, field_id)
        else:
            assert field_id not in ev.values and rows[field_id]["status"] != "filled", (op, field_id, value)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_rule_forms(), _walks())
def test_after_every_write_checks_and_derived_values_follow_the_live_values(case, walk):
    compiled = _build(case)
    registry = FormRegistry().register(compiled.id, name=compiled.name, description="", load=lambda: compiled)
    runner = FormRunner(MemoryAdapter(), registry=registry, subject="qa")
    runner.start("rules")
    _assert_rules_hold(runner, "start")
    for op in walk:  # a complete form takes corrections too: one that breaks a check reopens it
        _act(runner, op)
        _assert_rules_hold(runner, op)
