"""Properties of the log and the liveness fixpoint, checked over generated histories (hypothesis)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import example_forms
from conftest import make_registry
from example_forms import RETRACT, build_instance
from formctl import FormError, FormRunner, MemoryAdapter, define_form
from formctl.forms.evaluate import evaluate

FIELDS = ["a", "b", "c", "n"]
# What each field may be sent: text for the text fields; for the number "n", numbers and words
# it refuses ("forty" is stored with its error and reads invalid: docs/engine.md, "The answer
# log"). Blanks are ignored, never written.
VALUES = {"a": ["x", "y", "z", "", "  "], "b": ["x", "y", "", " "], "c": ["x", "z"], "n": [3, 7, "forty", "x", ""]}
PROPERTY_SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --------------------------------------------------------------------------- a model of the log


class LogModel:
    """The answer-log rules (docs/engine.md, 'The answer log'), written plainly: what each
    field's log and cursor should be."""

    def __init__(self) -> None:
        self.logs: dict[str, list[tuple[int, Any]]] = {}
        self.cursor: dict[str, int] = {}
        self.seq = 0

    @staticmethod
    def refused(field: str, value: Any) -> bool:
        return field == "n" and isinstance(value, str)

    def append(self, field: str, value: Any) -> None:
        self.seq += 1
        self.logs.setdefault(field, []).append((self.seq, value))
        self.cursor[field] = len(self.logs[field]) - 1

    def last_touched(self) -> str | None:
        best = None
        for field, log in self.logs.items():
            c = self.cursor[field]
            if c >= 0 and (best is None or log[c][0] > best[1]):
                best = (field, log[c][0])
        return best and best[0]

    def next_redo(self) -> str | None:
        best = None
        for field, log in self.logs.items():
            c = self.cursor[field]
            if c < len(log) - 1 and (best is None or log[c + 1][0] < best[1]):
                best = (field, log[c + 1][0])
        return best and best[0]

    def move(self, field: str | None, step: int) -> bool:
        target = field if field is not None else (self.last_touched() if step < 0 else self.next_redo())
        if target is None:
            return False
        log, c = self.logs.get(target, []), self.cursor.get(target, -1)
        if not (c >= 0 if step < 0 else c < len(log) - 1):
            return False
        self.cursor[target] = c + step
        return True

    def at_cursor(self) -> dict[str, Any]:
        """Each field's raw value in force, a refused one included (it reads invalid)."""
        out = {}
        for field, log in self.logs.items():
            c = self.cursor[field]
            if c >= 0 and log[c][1] is not RETRACT:
                out[field] = log[c][1]
        return out

    def in_force(self) -> dict[str, Any]:
        return {f: v for f, v in self.at_cursor().items() if not self.refused(f, v)}

    def invalid(self) -> set[str]:
        return {f for f, v in self.at_cursor().items() if self.refused(f, v)}

    def would(self, field: str | None, step: int) -> tuple[str, Any, bool] | None:
        """What a bare or named move would do: (field, raw value it restores or None, accepted)."""
        target = field if field is not None else (self.last_touched() if step < 0 else self.next_redo())
        if target is None:
            return None
        log, c = self.logs.get(target, []), self.cursor.get(target, -1)
        if not (c >= 0 if step < 0 else c < len(log) - 1):
            return None
        i = c + step
        value = log[i][1] if i >= 0 else RETRACT
        if value is RETRACT:
            return target, None, True
        return target, value, not self.refused(target, value)


_moves = st.tuples(st.sampled_from(["undo", "redo"]), st.sampled_from(FIELDS + [None, None]))
# A set of each field, made once: a strategy made afresh at every draw (as a flatmap's function
# made it) was checked and measured again by hypothesis before drawing from it. The same
# strategies draw the same values.
_SETS = {f: st.tuples(st.just("set"), st.just(f), st.sampled_from(VALUES[f])) for f in FIELDS}
ops = st.lists(
    st.one_of(
        st.sampled_from(FIELDS).flatmap(_SETS.__getitem__),
        st.tuples(st.just("retract"), st.sampled_from(FIELDS)),
        _moves,
        _moves,  # twice: cursor moves are where the interesting states are
    ),
    max_size=20,
)


def _runner() -> FormRunner:
    r = FormRunner(MemoryAdapter(), registry=make_registry(), subject="p")
    r.start("trio")
    return r


def _stored(r: FormRunner):
    _, instance, ev = r.evaluation()
    return instance, ev


@PROPERTY_SETTINGS
@given(ops)
# The bare undo/redo cases, always tried: bare redo takes the oldest pending revision, bare
# undo the newest at a cursor.
@example([("set", "a", "x"), ("set", "b", "y"), ("undo", "a"), ("undo", "b"), ("redo", None), ("redo", None)])
@example([("set", "b", "x"), ("set", "c", "y"), ("set", "b", "z"), ("undo", None), ("undo", None), ("undo", None)])
# A refused value is a revision like any other: undo moves onto it, redo past it.
@example([("set", "n", "forty"), ("undo", "n"), ("redo", None)])
@example([("set", "n", "forty"), ("set", "n", 3), ("undo", "n"), ("undo", None), ("redo", "n"), ("redo", None)])
def test_no_sequence_of_writes_loses_a_revision_or_leaves_the_cursor_out_of_range(sequence):
    r, model = _runner(), LogModel()
    previous: dict[str, tuple] = {}
    for op in sequence:
        kind, field = op[0], op[1]
        if kind == "set":
            value = op[2]
            r.revise(field, value)
            if not isinstance(value, str) or value.strip():
                model.append(field, value)
        elif kind == "retract":
            r.retract(field)
            model.append(field, RETRACT)
        else:
            step = -1 if kind == "undo" else +1
            expected = model.move(field, step)
            try:
                (r.undo if step < 0 else r.redo)(field)
                moved = True
            except FormError as error:
                assert error.code == "nothing_to_move"
                moved = False
            assert moved == expected, op

        instance, ev = _stored(r)
        seqs = []
        for fid, log in instance.entries.items():
            assert -1 <= log.cursor <= len(log.revisions) - 1
            # append-only: what was there before is still there, in the same order
            assert log.revisions[: len(previous.get(fid, ()))] == previous.get(fid, ())
            seqs.extend(e.seq for e in log.revisions)
        previous = {fid: log.revisions for fid, log in instance.entries.items()}
        assert len(seqs) == len(set(seqs))
        assert instance.revision_seq == max(seqs, default=0)
        assert {
            fid: [e.value if not e.retracted else RETRACT for e in log.revisions]
            for fid, log in instance.entries.items()
        } == {fid: [v for _, v in log] for fid, log in model.logs.items()}
        assert {fid: log.cursor for fid, log in instance.entries.items()} == model.cursor
        assert ev.values == model.in_force()
        assert set(ev.errors) == model.invalid()
        # The previews name exactly what the act would restore, and say when it was refused.
        view = r.status()
        for target, step in ((view.undo, -1), (view.redo, +1)):
            expected_move = model.would(None, step)
            if expected_move is None:
                assert target is None
            else:
                assert target is not None
                assert (target.field, None if target.empties else target.value, target.accepted) == expected_move


@PROPERTY_SETTINGS
@given(ops, st.sampled_from(FIELDS + [None]))
@example([("set", "n", "forty")], "n")  # undo empties it; redo puts the refused value back
@example([("set", "n", "forty"), ("set", "n", 3)], None)
def test_undo_then_redo_restores_the_value_in_force(sequence, field):
    r = _runner()
    for op in sequence:
        kind = op[0]
        try:
            if kind == "set":
                r.revise(op[1], op[2])
            elif kind == "retract":
                r.retract(op[1])
            elif kind == "undo":
                r.undo(op[1])
            else:
                r.redo(op[1])
        except FormError:
            pass
    instance, ev = _stored(r)
    before = (dict(ev.values), dict(ev.errors), {fid: log.cursor for fid, log in instance.entries.items()})
    try:
        result = r.undo(field)
    except FormError:
        return
    moved = field
    if moved is None:
        # a bare undo moves the last-touched field; redo that one by name
        after_instance, _ = _stored(r)
        moved = next(fid for fid, log in after_instance.entries.items() if log.cursor != before[2][fid])
    assert result.captured == []
    r.redo(moved)
    instance, ev = _stored(r)
    assert (ev.values, ev.errors, {fid: log.cursor for fid, log in instance.entries.items()}) == before


# --------------------------------------------------------------------------- the liveness fixpoint


answers_for_chain = st.fixed_dictionaries(
    {},
    optional={
        fid: st.lists(st.sampled_from(["yes", "no", "dd", RETRACT]), min_size=1, max_size=3)
        for fid in ("a", "b", "c", "d")
    },
)


def _outcome(form, ev) -> dict[str, Any]:
    return {
        "status": {f.id: ev.status[f.order] for f in form.fields},
        "applicable": {f.id: ev.applicable[f.order] for f in form.fields},
        "values": ev.values,
        "held": ev.held,
        "passes": ev.passes,
        "complete": ev.complete,
        "defects": ev.defects,
    }


@settings(max_examples=150, deadline=None)
@given(answers_for_chain, st.permutations(["a", "b", "c", "d"]))
def test_the_chain_fixpoint_does_not_depend_on_declaration_order(answers, order):
    reference_form = example_forms.chain()
    permuted_form = example_forms.chain(tuple(order))
    reference = evaluate(reference_form, build_instance(reference_form, answers))
    # the stored entries come in the permuted order too: storage order must not matter either
    permuted_answers = {fid: answers[fid] for fid in order if fid in answers}
    permuted = evaluate(permuted_form, build_instance(permuted_form, permuted_answers))
    assert _outcome(permuted_form, permuted) == _outcome(reference_form, reference)
    assert reference.passes <= len(reference_form.fields) + 1


GATE_KINDS = st.one_of(
    st.none(),
    st.tuples(st.just("eq"), st.integers(0, 5), st.sampled_from(["yes", "no"])),
    st.tuples(st.just("not"), st.integers(0, 5)),
)


def _gate(spec, ids):
    if spec is None:
        return None
    target = ids[spec[1] % len(ids)]
    if spec[0] == "eq":
        wanted = spec[2]
        return lambda v, s: v[target] == wanted
    return lambda v, s: not v[target]


_ANSWERS = st.sampled_from(["yes", "no", 7])
_PERMUTATIONS = {n: st.permutations([f"f{i}" for i in range(n)]) for n in range(2, 7)}  # made once, as _SETS


@st.composite
def gated_forms(draw):
    n = draw(st.integers(2, 6))
    ids = [f"f{i}" for i in range(n)]
    gates = {fid: draw(GATE_KINDS) for fid in ids}  # gates may form cycles, and may read themselves
    optional = {fid: draw(st.booleans()) for fid in ids}
    answers = {fid: draw(_ANSWERS) for fid in ids if draw(st.booleans())}
    order = draw(_PERMUTATIONS[n])
    return ids, gates, optional, answers, order


def _build(ids, gates, optional, order):
    builder = define_form("gen", name="Generated").step("s", title="S")
    for fid in order:
        schema = str | None if optional[fid] else str
        builder = builder.field(fid, schema, label=fid.upper(), when=_gate(gates[fid], ids))
    return builder.build()


@settings(max_examples=200, deadline=None)
@given(gated_forms())
def test_any_value_gated_form_settles_and_ignores_declaration_order(case):
    ids, gates, optional, answers, order = case
    declared = _build(ids, gates, optional, ids)
    permuted = _build(ids, gates, optional, order)
    first = evaluate(declared, build_instance(declared, answers))
    second = evaluate(permuted, build_instance(permuted, {fid: answers[fid] for fid in order if fid in answers}))
    assert first.defects == []
    assert first.passes <= len(ids) + 1
    assert _outcome(permuted, second) == _outcome(declared, first)
    # Only answered fields are ever excluded, and a held field always has an answer.
    for fid, status in _outcome(declared, first)["status"].items():
        if status == "held":
            assert fid in answers
