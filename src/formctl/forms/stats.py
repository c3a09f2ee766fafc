"""How a form is doing (``formctl stats``): counts, times, where people stop, what is refused.

Two halves. :class:`FormFacts` is what the store can say without the definition: instances by
status, the time from start to completion, the answered fields of every instance that did not
complete (grouped, so a thousand instances that stopped alike are one entry), per field how
often a value was refused (and with what message), corrected or undone, and how long
checkpoints waited for a host, by outcome. A store computes it in one pass over its instances
(:class:`FactsBuilder`, the folder store) or in SQL aggregates (the PostgreSQL store), by the
same rules. :func:`summarise` then reads it against the compiled form: which step each group
stopped at, labels, rates.

The rules, in one place:

* *started*: instances created at or after ``since`` (all of them without it);
* *waiting*: ``awaiting`` (a checkpoint holds it for a host); *open*: ``active`` or ``ready``;
* *time to complete*: ``completed_at - created_at`` of the complete ones; median and p90 are
  interpolated between neighbours, as PostgreSQL's ``percentile_cont`` does;
* *stopped at*: for an instance open or abandoned, the first step (in form order) with a
  required field that has no gate and no accepted value in force; "all answered" when none
  (waiting for a decision or to be sent);
* *refused*: a revision stored with its validation error; *corrected*: an accepted value that
  replaced an earlier accepted one; *undone*: an undo act on the field;
* *a wait*: from the last answer before a checkpoint's resolution (the one that made it fire:
  nothing can be written while it waits) to the resolution, by outcome (approved, rejected,
  withdrawn).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from formctl.forms.acts import MARK as ACT_MARK
from formctl.forms.instance import ABANDONED, ACTIVE, AWAITING, COMPLETE, READY, Instance
from formctl.forms.resolutions import resolutions

if TYPE_CHECKING:
    from formctl.forms.compile import CompiledForm

__all__ = [
    "END",
    "FactsBuilder",
    "FieldFacts",
    "FormFacts",
    "ModelOf",
    "Spread",
    "percentile",
    "stopped_at",
    "summarise",
]

ModelOf = Callable[[str], "str | None"]
"""The model an instance's conversation says spoke (None: it does not say)."""

END = "(all answered)"
"""Where an instance stopped when every required question was answered (a decision or a send awaited)."""

TOP_MESSAGES = 5


def percentile(ordered: list[float], p: float) -> float | None:
    """The ``p`` quantile of sorted values, interpolated as PostgreSQL's ``percentile_cont``."""
    if not ordered:
        return None
    pos = p * (len(ordered) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


@dataclass(frozen=True)
class Spread:
    """How many, and the median and 90th percentile of their durations, in seconds."""

    count: int = 0
    median: float | None = None
    p90: float | None = None

    @classmethod
    def of(cls, values: Iterable[float]) -> Spread:
        ordered = sorted(values)
        return cls(len(ordered), percentile(ordered, 0.5), percentile(ordered, 0.9))

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count, "median_seconds": self.median, "p90_seconds": self.p90}


@dataclass
class FieldFacts:
    refused: int = 0
    messages: Counter[str] = field(default_factory=Counter)
    corrected: int = 0
    undone: int = 0


@dataclass
class FormFacts:
    """What a store says of one form's instances (see the module's rules)."""

    by_status: dict[str, int] = field(default_factory=dict)
    to_complete: Spread = Spread()
    stops: dict[tuple[str, tuple[str, ...]], int] = field(default_factory=dict)  # (status, answered) -> n
    fields: dict[str, FieldFacts] = field(default_factory=dict)
    waits: dict[tuple[str, str], Spread] = field(default_factory=dict)  # (checkpoint, outcome) -> spread
    waiting_now: dict[str, int] = field(default_factory=dict)  # checkpoint -> instances held by it
    by_model: dict[str, dict[str, int]] = field(default_factory=dict)  # model -> status -> n

    def field_facts(self, field_id: str) -> FieldFacts:
        found = self.fields.get(field_id)
        if found is None:
            found = self.fields[field_id] = FieldFacts()
        return found


def seconds_between(start: str, end: str) -> float:
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


class FactsBuilder:
    """:class:`FormFacts` in one pass over instances (``add`` each one once)."""

    def __init__(self) -> None:
        self.facts = FormFacts()
        self._complete: list[float] = []
        self._waits: dict[tuple[str, str], list[float]] = {}

    def add(self, instance: Instance, model: str | None = None) -> None:
        facts = self.facts
        status = instance.status
        facts.by_status[status] = facts.by_status.get(status, 0) + 1
        if model is not None:
            per = facts.by_model.setdefault(model, {})
            per[status] = per.get(status, 0) + 1
        if status == COMPLETE:
            if instance.completed_at:
                self._complete.append(seconds_between(instance.created_at, instance.completed_at))
        else:
            answered = tuple(sorted(f for f, log in instance.entries.items() if _accepted(log.in_force)))
            key = (status, answered)
            facts.stops[key] = facts.stops.get(key, 0) + 1
        if status == AWAITING and instance.blocked_on:
            facts.waiting_now[instance.blocked_on] = facts.waiting_now.get(instance.blocked_on, 0) + 1
        self._answers(instance)
        self._acts(instance)

    def _answers(self, instance: Instance) -> None:
        for field_id, log in instance.entries.items():
            accepted_before = False
            for entry in log.revisions:
                if entry.error:
                    facts = self.facts.field_facts(field_id)
                    facts.refused += 1
                    facts.messages[entry.error] += 1
                elif not entry.retracted:
                    if accepted_before:
                        self.facts.field_facts(field_id).corrected += 1
                    accepted_before = True

    def _acts(self, instance: Instance) -> None:
        for key, record in instance.dispatches.items():
            if f"{ACT_MARK}undo:" in key and record.detail:
                self.facts.field_facts(record.detail.partition(":")[0]).undone += 1
        decided = resolutions(instance)
        if not decided:
            return
        times = sorted(e.at for log in instance.entries.values() for e in log.revisions)
        for r in decided:
            fired = max((at for at in times if at <= r.at), default=None)
            if fired is not None:
                self._waits.setdefault((r.checkpoint, r.outcome), []).append(seconds_between(fired, r.at))

    def done(self) -> FormFacts:
        self.facts.to_complete = Spread.of(self._complete)
        self.facts.waits = {key: Spread.of(values) for key, values in sorted(self._waits.items())}
        return self.facts


def _accepted(entry: Any) -> bool:
    return entry is not None and not entry.error


def stopped_at(compiled: CompiledForm, answered: Iterable[str]) -> str:
    """The step an instance with these accepted answers stopped at (the module's rule), or :data:`END`."""
    have = set(answered)
    for step in compiled.steps:
        for f in step.fields:
            if f.when is None and f.required and f.id not in have:
                return step.id
    return END


def summarise(facts: FormFacts, compiled: CompiledForm, *, since: str | None = None) -> dict[str, Any]:
    """The figures ``formctl stats`` shows, as JSON-ready data, read against the form."""
    counts = facts.by_status
    started = sum(counts.values())
    completed = counts.get(COMPLETE, 0)
    return {
        "form": compiled.id,
        "name": compiled.name,
        "since": since,
        "started": started,
        "completed": completed,
        "abandoned": counts.get(ABANDONED, 0),
        "waiting": counts.get(AWAITING, 0),
        "open": counts.get(ACTIVE, 0) + counts.get(READY, 0),
        "completion_rate": completed / started if started else None,
        "time_to_complete": facts.to_complete.to_dict(),
        "drop_off": _drop_off(facts, compiled),
        "fields": _fields(facts, compiled),
        "checkpoints": _checkpoints(facts),
        "by_model": [
            {"model": model, "started": sum(n.values()), "completed": n.get(COMPLETE, 0)}
            for model, n in sorted(facts.by_model.items())
        ],
    }


def _drop_off(facts: FormFacts, compiled: CompiledForm) -> list[dict[str, Any]]:
    titles = {s.id: s.title for s in compiled.steps} | {END: "All answered"}
    counts: dict[str, Counter[str]] = {step: Counter() for step in titles}
    for (status, answered), n in facts.stops.items():
        column = "abandoned" if status == ABANDONED else "waiting" if status == AWAITING else "open"
        counts[stopped_at(compiled, answered)][column] += n
    return [
        {"step": step, "title": title, **{c: counts[step][c] for c in ("open", "waiting", "abandoned")}}
        for step, title in titles.items()
    ]


def _fields(facts: FormFacts, compiled: CompiledForm) -> list[dict[str, Any]]:
    out = []
    order = [f.id for f in compiled.fields] + sorted(set(facts.fields) - set(compiled.field_by_id))
    for field_id in order:
        f = facts.fields.get(field_id, FieldFacts())
        known = compiled.field_by_id.get(field_id)
        out.append(
            {
                "field": field_id,
                "label": known.label if known is not None else field_id,
                "step": known.step_id if known is not None else None,
                "refused": f.refused,
                "top_refusals": [{"message": m, "count": n} for m, n in _top(f.messages)],
                "corrected": f.corrected,
                "undone": f.undone,
            }
        )
    return out


def _top(messages: Counter[str]) -> list[tuple[str, int]]:
    return sorted(messages.items(), key=lambda item: (-item[1], item[0]))[:TOP_MESSAGES]


def _checkpoints(facts: FormFacts) -> list[dict[str, Any]]:
    out = [{"checkpoint": cp, "outcome": outcome, **spread.to_dict()} for (cp, outcome), spread in facts.waits.items()]
    out += [
        {"checkpoint": cp, "outcome": "waiting", "count": n, "median_seconds": None, "p90_seconds": None}
        for cp, n in sorted(facts.waiting_now.items())
    ]
    return out
