"""Grading one eval run: the form's end state against the scenario's expectation. Pure: no I/O.

A run passes when every line of the expectation holds (docs/eval.md, "Grading"):

- the status is the one expected (and the checkpoints fired, when listed);
- every expected value is there and equal (text compared without case or extra spaces,
  numbers as numbers); fields listed in ``missing`` have no value;
- no value listed in ``never_stored`` is, or ever was, stored in any field (the answer log
  counts: a value stored and then corrected was stored);
- nothing was **invented**: a value on a ``source="person"`` field stored other than as
  ``said`` or ``confirmed``, or any value the model or the person wrote that none of the
  persona's words hold (checked with the same quote checker formctl uses on a model's quotes)
  and that is not the expected value;
- the person needed at most ``max_turns`` turns.

Every failure is one line naming the value and why, in the words of the expectation
("``values.email: expected "dana@example.org", got "dana@example.com"``").
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from formctl.eval.scenario import Scenario
from formctl.forms.quotes import PersonMessage, check_quote

__all__ = ["Grade", "Invented", "grade", "same_value"]

# Provenance a model (or the person typing to it) gives a value; host, executor, seed and
# migrated values come from elsewhere and are not the conversation's to invent.
_CONVERSATION = frozenset({"said", "reading", "assumed", "confirmed"})
_PERSON_OK = frozenset({"said", "confirmed"})


@dataclass(frozen=True, slots=True)
class Invented:
    field: str
    value: Any
    why: str

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, "value": self.value, "why": self.why}


@dataclass(slots=True)
class Grade:
    passed: bool = True
    right: list[str] = field(default_factory=list)
    wrong: list[dict[str, Any]] = field(default_factory=list)  # {field, expected, got}
    missing: list[str] = field(default_factory=list)
    invented: list[Invented] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def fail(self, line: str) -> None:
        self.passed = False
        self.problems.append(line)


def _show(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _fold(value: Any) -> Any:
    if isinstance(value, str):
        return re.sub(r"\s+", " ", value).strip().casefold()
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return float(value)
    return value


def same_value(expected: Any, got: Any) -> bool:
    """Equal as a person reads them: text without case or extra spaces, numbers as numbers."""
    if isinstance(expected, (int, float)) and not isinstance(expected, bool) and isinstance(got, str):
        try:
            return float(got) == float(expected)
        except ValueError:
            return False
    return bool(_fold(expected) == _fold(got))


def grade(
    scenario: Scenario,
    end: dict[str, Any] | None,
    fields: dict[str, Any],
    *,
    turns: int,
) -> Grade:
    """Grade a run. ``end``: the instance at the end (status, values, held, checkpoints,
    provenance, and ``history``: every value each field was ever given) or None when no form
    was started; ``fields``: the form's fields by id
    (anything with ``source`` and ``schema``)."""
    expect = scenario.expect
    g = Grade()
    if end is None:
        g.fail(f"status: expected {_show(expect.status)}, got no form at all (the model never started one)")
        g.missing = list(expect.values)
        return g
    status = end.get("status")
    if status != expect.status:
        g.fail(f"status: expected {_show(expect.status)}, got {_show(status)}")
    values: dict[str, Any] = dict(end.get("values") or {})
    held: dict[str, Any] = dict(end.get("held") or {})
    provenance: dict[str, str] = dict(end.get("provenance") or {})
    if expect.checkpoints is not None:
        fired = sorted(end.get("checkpoints") or [])
        if fired != sorted(expect.checkpoints):
            g.fail(f"checkpoints: expected {_show(sorted(expect.checkpoints))}, got {_show(fired)}")
    for field_id, want in expect.values.items():
        if field_id not in values:
            g.missing.append(field_id)
            g.fail(f"values.{field_id}: expected {_show(want)}, got nothing")
        elif same_value(want, values[field_id]):
            g.right.append(field_id)
        else:
            g.wrong.append({"field": field_id, "expected": want, "got": values[field_id]})
            g.fail(f"values.{field_id}: expected {_show(want)}, got {_show(values[field_id])}")
    for field_id in expect.missing:
        if field_id in values:
            g.fail(f"values.{field_id}: expected no value, got {_show(values[field_id])}")
    history: dict[str, list[Any]] = dict(end.get("history") or {})
    for banned in expect.never_stored:
        for field_id in sorted({*values, *held, *history}):
            given = [values.get(field_id), held.get(field_id), *history.get(field_id, [])]
            if any(v is not None and same_value(banned, v) for v in given):
                when = (
                    "is stored"
                    if any(same_value(banned, v) for v in (values.get(field_id), held.get(field_id)))
                    else "was stored once"
                )
                g.fail(f"values.{field_id}: {_show(banned)} {when}, and must never be (expect.never_stored)")
    words = [PersonMessage(text, n, None) for n, text in enumerate(scenario.persona.texts(), 1)]
    for field_id, got in values.items():
        how = provenance.get(field_id)
        f = fields.get(field_id)
        if f is None or how not in _CONVERSATION:
            continue
        invented = _invented(field_id, got, how, f, words, expect.values)
        if invented is not None:
            g.invented.append(invented)
            g.fail(f"values.{field_id}: {_show(got)} was invented: {invented.why}")
    if turns > expect.max_turns:
        g.fail(f"turns: expected at most {expect.max_turns} of the person's turns, took {turns}")
    return g


def _invented(
    field_id: str, got: Any, how: str, f: Any, words: list[PersonMessage], expected: dict[str, Any]
) -> Invented | None:
    if getattr(f, "source", None) == "person" and how not in _PERSON_OK:
        return Invented(
            field_id, got, f"stored as {how!r} on a field that must come from the person (said or confirmed only)"
        )
    if field_id in expected and same_value(expected[field_id], got):
        return None
    schema = getattr(f, "schema", None)
    for message in words:
        if check_quote([message], message.text, got, schema).said:
            return None
    return Invented(field_id, got, "none of the persona's words hold it")
