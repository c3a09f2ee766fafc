"""Grading one eval run: the form's end state against the scenario's expectation. Pure: no I/O.

A run passes when every line of the expectation holds (docs/eval.md, "Grading"):

- the status is the one expected (and the checkpoints fired, when listed);
- every expected value is there and equal (text compared without case or extra spaces,
  numbers as numbers); fields listed in ``missing`` have no value;
- no value listed in ``never_stored`` is, or ever was, stored in any field (the answer log
  counts: a value stored and then corrected was stored);
- nothing was **invented**: a value on a ``source="person"`` field stored other than as
  ``said`` or ``confirmed``, or any value the model or the person wrote, at any point of the
  conversation (the answer log counts, not only the final values), that none of the persona's
  words hold (checked with the same quote checker formctl uses on a model's quotes) and that
  is not the expected value;
- the model **tried** to invent nothing: no value formctl had to ask the person about because
  their words did not hold it and the person did not confirm it (an :class:`Attempt`; formctl's
  guard kept it out of the form, but the model wrote it);
- the person needed at most ``max_turns`` turns.

Every failure is one line naming the value and why, in the words of the expectation
("``values.email: expected "dana@example.org", got "dana@example.com"``").
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, TypedDict

from formctl.eval.scenario import Scenario
from formctl.forms.quotes import PersonMessage, check_quote
from formctl.json_types import FieldValue, JsonObject, JsonValue

if TYPE_CHECKING:
    from formctl.forms.compile import CompiledField

__all__ = ["Attempt", "Grade", "Invented", "WrongValue", "grade", "held_by", "same_value"]

# Provenance a model (or the person typing to it) gives a value; host, executor, seed and
# migrated values come from elsewhere and are not the conversation's to invent.
_CONVERSATION = frozenset({"said", "reading", "assumed", "confirmed"})
_PERSON_OK = frozenset({"said", "confirmed"})


@dataclass(frozen=True, slots=True)
class Invented:
    field: str
    value: FieldValue
    why: str

    def to_dict(self) -> JsonObject:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Attempt:
    """An invention attempt: the model wrote ``value`` for ``field``, the person's words did not hold
    it, formctl asked them, and they did not confirm it (``outcome``: gave, declined, no answer;
    ``gave``: what they typed instead)."""

    field: str
    value: JsonValue  # as the model wrote it in its tool call
    outcome: str
    gave: JsonValue = None

    def to_dict(self) -> JsonObject:
        return asdict(self)

    def line(self) -> str:
        answer = {
            "gave": f"they gave {_show(self.gave)}" if self.gave is not None else "they gave another value",
            "declined": "they said no",
        }.get(self.outcome, "they did not answer")
        return (
            f"values.{self.field}: the model tried to invent {_show(self.value)}: the person's words did not hold "
            f"it, formctl asked them and {answer} (an invention attempt)"
        )


class WrongValue(TypedDict):
    """An expected value the run stored otherwise."""

    field: str
    expected: JsonValue
    got: JsonValue


@dataclass(slots=True)
class Grade:
    passed: bool = True
    right: list[str] = field(default_factory=list)
    wrong: list[WrongValue] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    invented: list[Invented] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def fail(self, line: str) -> None:
        self.passed = False
        self.problems.append(line)


def _show(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def _fold(value: JsonValue) -> JsonValue:
    if isinstance(value, str):
        return re.sub(r"\s+", " ", value).strip().casefold()
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return float(value)
    return value


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip().replace(",", ""))
        except ValueError:
            return None
    return None


def same_value(expected: JsonValue, got: JsonValue) -> bool:
    """Equal as a person reads them: text without case or extra spaces, numbers as numbers (either
    side may be text that reads as one: ``never_stored = ["212.4"]`` bans the number 212.4)."""
    numbers = (_number(expected), _number(got))
    if None not in numbers and (not isinstance(expected, str) or not isinstance(got, str)):
        return numbers[0] == numbers[1]
    return bool(_fold(expected) == _fold(got))


def grade(
    scenario: Scenario,
    end: JsonObject | None,
    fields: dict[str, CompiledField],
    *,
    turns: int,
    attempts: tuple[Attempt, ...] = (),
) -> Grade:
    """Grade a run. ``end``: the instance at the end (status, values, held, checkpoints,
    provenance, and ``history``: every value each field was ever given, as ``{"value", "how"}``
    oldest first) or None when no form was started; ``fields``: the form's fields by id
    (anything with ``source`` and ``schema``); ``attempts``: the model's invention attempts."""
    expect = scenario.expect
    g = Grade()
    for attempt in attempts:
        g.attempts.append(attempt)
        g.fail(attempt.line())
    if end is None:
        g.fail(f"status: expected {_show(expect.status)}, got no form at all (the model never started one)")
        g.missing = list(expect.values)
        return g
    status = end.get("status")
    if status != expect.status:
        g.fail(f"status: expected {_show(expect.status)}, got {_show(status)}")
    if expect.checkpoints is not None:
        fired = sorted(end.get("checkpoints") or [])
        if fired != sorted(expect.checkpoints):
            g.fail(f"checkpoints: expected {_show(sorted(expect.checkpoints))}, got {_show(fired)}")
    _grade_values(g, scenario, dict(end.get("values") or {}))
    _grade_banned(g, scenario, end)
    _grade_invented(g, scenario, end, fields)
    if turns > expect.max_turns:
        g.fail(f"turns: expected at most {expect.max_turns} of the person's turns, took {turns}")
    return g


def _grade_values(g: Grade, scenario: Scenario, values: JsonObject) -> None:
    for field_id, want in scenario.expect.values.items():
        if field_id not in values:
            g.missing.append(field_id)
            g.fail(f"values.{field_id}: expected {_show(want)}, got nothing")
        elif same_value(want, values[field_id]):
            g.right.append(field_id)
        else:
            g.wrong.append({"field": field_id, "expected": want, "got": values[field_id]})
            g.fail(f"values.{field_id}: expected {_show(want)}, got {_show(values[field_id])}")
    for field_id in scenario.expect.missing:
        if field_id in values:
            g.fail(f"values.{field_id}: expected no value, got {_show(values[field_id])}")


def _history(end: JsonObject) -> dict[str, list[JsonObject]]:
    return {k: [e for e in v if isinstance(e, dict)] for k, v in dict(end.get("history") or {}).items()}


def _grade_banned(g: Grade, scenario: Scenario, end: JsonObject) -> None:
    values: JsonObject = dict(end.get("values") or {})
    held: JsonObject = dict(end.get("held") or {})
    history = _history(end)
    for banned in scenario.expect.never_stored:
        for field_id in sorted({*values, *held, *history}):
            now = [values.get(field_id), held.get(field_id)]
            given = [*now, *(e.get("value") for e in history.get(field_id, []))]
            if any(v is not None and same_value(banned, v) for v in given):
                when = "is stored" if any(v is not None and same_value(banned, v) for v in now) else "was stored once"
                g.fail(f"values.{field_id}: {_show(banned)} {when}, and must never be (expect.never_stored)")


def _grade_invented(g: Grade, scenario: Scenario, end: JsonObject, fields: dict[str, CompiledField]) -> None:
    """Every value the conversation wrote, the final ones and any since replaced, each once."""
    values: JsonObject = dict(end.get("values") or {})
    provenance: dict[str, str] = dict(end.get("provenance") or {})
    written: list[tuple[str, JsonValue, str | None, bool]] = [
        (k, v, provenance.get(k), True) for k, v in values.items()
    ]
    for field_id, entries in _history(end).items():
        written.extend((field_id, e.get("value"), e.get("how"), False) for e in entries)
    words = [PersonMessage(text, n, None) for n, text in enumerate(scenario.persona.texts(), 1)]
    seen: list[tuple[str, JsonValue]] = []
    for field_id, got, how, final in written:
        f = fields.get(field_id)
        if f is None or how not in _CONVERSATION or got is None:
            continue
        if any(k == field_id and same_value(v, got) for k, v in seen):
            continue
        seen.append((field_id, got))
        invented = _invented(field_id, got, how, f, words, scenario.expect.values)
        if invented is not None:
            g.invented.append(invented)
            later = "" if final else " (written, then replaced)"
            g.fail(f"values.{field_id}: {_show(got)} was invented: {invented.why}{later}")


def held_by(words: list[PersonMessage], value: JsonValue, schema: object) -> bool:
    """Whether one of these lines of the person's holds ``value``, by the quote checker formctl uses
    on a model's quotes (each line quoted whole)."""
    return any(check_quote([message], message.text, value, schema).said for message in words)


def _invented(
    field_id: str, got: JsonValue, how: str, f: CompiledField, words: list[PersonMessage], expected: JsonObject
) -> Invented | None:
    if getattr(f, "source", None) == "person" and how not in _PERSON_OK:
        return Invented(
            field_id, got, f"stored as {how!r} on a field that must come from the person (said or confirmed only)"
        )
    if field_id in expected and same_value(expected[field_id], got):
        return None
    if held_by(words, got, getattr(f, "schema", None)):
        return None
    return Invented(field_id, got, "none of the persona's words hold it")
