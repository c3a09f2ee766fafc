"""What a checkpoint's decision is bound to (docs/engine.md, "Checkpoints and waits").

A checkpoint that fired decided on the values its condition read, plus the fields it
names in ``watch``. The condition is asked again over a mapping that notes what it reads;
the runner compares the bound values before and after a write, and a change while the
condition still holds is a new occurrence. Pure: gates are pure, and nothing here stores
anything.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from formctl.forms.compile import CompiledCheckpoint, CompiledForm
from formctl.forms.evaluate import Evaluation

_EVERY = "*"  # the condition looked at every value (it iterated the mapping)
_MISSING = object()  # no live value (told apart from a live None)


class _Reading(Mapping[str, Any]):
    """The values as a gate sees them (a declared field with no live answer reads None, an
    undeclared one raises KeyError), noting every field the gate reads. Read-only; no copy."""

    __slots__ = ("_values", "_declared", "read")

    def __init__(self, values: dict[str, Any], declared: dict[str, Any]) -> None:
        self._values = values
        self._declared = declared
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        if key in self._values:
            return self._values[key]
        if key in self._declared:
            return None
        raise KeyError(f"no field {key!r} on this form")

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return self._values.get(key, default)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self.read.add(key)
        return key in self._values

    def __iter__(self) -> Iterator[str]:
        self.read.add(_EVERY)
        return iter(self._values)

    def __len__(self) -> int:
        self.read.add(_EVERY)
        return len(self._values)

    def keys(self) -> Any:
        self.read.add(_EVERY)
        return self._values.keys()

    def values(self) -> Any:
        self.read.add(_EVERY)
        return self._values.values()

    def items(self) -> Any:
        self.read.add(_EVERY)
        return self._values.items()


def _reads(compiled: CompiledForm, checkpoint: CompiledCheckpoint, ev: Evaluation, fired: dict[str, int]) -> set[str]:
    values = _Reading(ev.values, compiled.field_by_id)
    try:
        checkpoint.when(values, ev.frozen_state(fired))
    except Exception:  # a gate defect is reported by the evaluation; bind to what it read so far
        pass
    return values.read


def bound_fields(
    compiled: CompiledForm, checkpoint: CompiledCheckpoint, ev: Evaluation, fired: dict[str, int]
) -> dict[str, Any]:
    """The fields a decision on ``checkpoint`` covers under ``ev`` (those its condition reads,
    then its ``watch``), each with its live value (None when it has none), in declaration order."""
    read = _reads(compiled, checkpoint, ev, fired)
    every = _EVERY in read
    wanted = read | set(checkpoint.watch)
    return {f.id: ev.values.get(f.id) for f in compiled.fields if every or f.id in wanted}


def rebound(
    compiled: CompiledForm, checkpoint: CompiledCheckpoint, before: Evaluation, after: Evaluation, fired: dict[str, int]
) -> bool:
    """Did a value ``checkpoint`` is bound to change between ``before`` and ``after``?

    Only ``after`` is read through the condition: a condition is deterministic, so over
    ``before`` it reads the same fields unless a value it read in ``after`` differs there,
    and that difference is already a change.
    """
    old, new = before.values, after.values
    if old == new:  # no live value changed: nothing can be bound differently
        return False
    read = _reads(compiled, checkpoint, after, fired)
    if _EVERY in read:
        return True
    missing = _MISSING
    return any(old.get(f, missing) != new.get(f, missing) for f in (*read, *checkpoint.watch))
