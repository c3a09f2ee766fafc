"""Acts are numbered in turn under their verb (docs/engine.md, "Host acts"): ``ID:act:VERB:N``."""

from __future__ import annotations

import itertools

from formctl.forms.acts import MARK, _next_number
from formctl.forms.instance import DispatchState


def test_undos_and_redos_are_numbered_one_two_three_under_their_verb(runner):
    r = runner()
    instance_id = r.start("trio", {"a": "x"}).instance_id
    for value in ("y", "z", "w"):
        r.revise("a", value)
    for _ in range(3):
        r.undo("a")
    for _ in range(2):
        r.redo("a")
    _, instance, _ = r.evaluation()
    keys = [key for key in instance.dispatches if MARK in key]
    stem = f"{instance_id}{MARK}"
    assert keys == [f"{stem}undo:1", f"{stem}undo:2", f"{stem}undo:3", f"{stem}redo:1", f"{stem}redo:2"]


def test_the_next_number_is_one_past_the_last_however_many_there_are():
    record = DispatchState("act:undo", "ok", 1, "2026-01-01T00:00:00Z")
    for taken in range(70):
        runs = {f"i:act:undo:{n}": record for n in range(1, taken + 1)}
        runs.update({f"i:act:redo:{n}": record for n in range(1, 2 * taken + 2)})  # another verb's count is its own
        assert _next_number(runs, "i:act:undo:") == taken + 1


def test_over_numbers_with_gaps_the_next_number_is_free_and_follows_a_taken_one():
    # A map this code wrote never has gaps; one edited by hand may. Whatever it holds, the number
    # returned must be free (an act never overwrites another) and follow a taken one.
    record = DispatchState("act:undo", "ok", 1, "2026-01-01T00:00:00Z")
    for size in range(9):
        for taken in itertools.combinations(range(1, 9), size):
            runs = {f"i:act:undo:{n}": record for n in taken}
            n = _next_number(runs, "i:act:undo:")
            assert n not in taken and (n == 1 or n - 1 in taken), taken
