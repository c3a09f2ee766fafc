"""What ``formctl replay --update`` changed, turn by turn, and which kept words no longer fit.

An exact replay stops at the first divergence: later ones are usually its echoes. An update
rewrites the whole file, so the author is shown every turn it touched: each tool result
(and host result) that changed, each call the model now makes or no longer makes, each
reply whose words changed, and the end state. Lines name the turn, the call and the field,
as a replay failure does::

    turn 4 (person: "App crashes when saving a big file"):
      form_fill {"values": {"summary": "App crashes when saving a big file"}} returned something else:
        fields[summary].status: recorded "filled", now "invalid"
      the model's words:
        - Got it — Summary: App crashes when saving a big file.
        + Summary: at most 15 characters. What is the summary?

:func:`stale_words` finds the replies of a *real* model that an update would keep although
the model was shown something else before writing them: their words were written for the
old tool results, and may now say something the form no longer does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from formctl.json_types import JsonValue
from formctl.transcripts import diff as _diff
from formctl.transcripts.format import Iteration, Transcript, Turn

MAX_TURNS = 20


@dataclass(frozen=True, slots=True)
class StaleWords:
    """A model reply kept by an update whose words were written after a different tool result."""

    turn: int
    label: str
    call: int
    text: str
    why: str

    def render(self) -> str:
        text = self.text if len(self.text) <= 140 else self.text[:137] + "…"
        return (
            f"    turn {self.turn} ({self.label}), model call {self.call}: {json.dumps(text, ensure_ascii=False)}\n"
            f"      {self.why}"
        )


def call_line(name: str, value: JsonValue) -> str:
    text = json.dumps(value, ensure_ascii=False)
    if len(text) > 120:
        text = text[:117] + "…"
    return f"{name} {text}"


def result_differences(old: JsonValue, new: JsonValue) -> list[_diff.Difference]:
    """Differences between two tool results; inside two successes, paths start at the data
    (``fields[mileage].status``, not ``data.fields[mileage].status``)."""
    if (
        isinstance(old, dict)
        and isinstance(new, dict)
        and old.get("status") == new.get("status") == "success"
        and set(old) == set(new) == {"status", "data"}
    ):
        return _diff.differences(old["data"], new["data"])
    return _diff.differences(old, new)


def _words(iterations: list[Iteration]) -> str:
    return "\n".join(it.text for it in iterations if it.text)


def turn_changes(old: Turn, new: Turn) -> list[str]:
    """What changed between a recorded turn and its replay, as indented lines (empty: nothing)."""
    lines: list[str] = []
    if old.kind == "host":
        diffs = _diff.differences(old.result, new.result)
        if diffs:
            lines.append("      the host action's result changed:")
            lines.append(_diff.render(diffs, indent="        "))
        return lines
    before = [c for it in old.iterations for c in it.calls]
    after = [c for it in new.iterations for c in it.calls]
    for k in range(max(len(before), len(after))):
        a = before[k] if k < len(before) else None
        b = after[k] if k < len(after) else None
        if a is not None and b is not None and (a.name, a.input) == (b.name, b.input):
            diffs = result_differences(a.result, b.result) if a.result != b.result else []
            if diffs:
                lines.append(f"      {call_line(a.name, a.input)} returned something else:")
                lines.append(_diff.render(diffs, indent="        "))
            continue
        if a is not None:
            lines.append(f"      no longer calls {call_line(a.name, a.input)}")
        if b is not None:
            lines.append(f"      now calls {call_line(b.name, b.input)}")
    said, says = _words(old.iterations), _words(new.iterations)
    if said != says:
        lines.append("      the model's words:")
        lines.append(_diff.text_diff(said, says, indent="        "))
    if (old.error or None) != (new.error or None):
        lines.append(f"      error: recorded {json.dumps(old.error)}, now {json.dumps(new.error)}")
    return lines


def describe(old: Transcript, new: Transcript, *, end: str | None = None, request: str | None = None) -> str:
    """Every turn that changed (up to :data:`MAX_TURNS`), then the request and the end state."""
    parts: list[str] = []
    shown = 0
    for n, (a, b) in enumerate(zip(old.turns, new.turns), 1):
        lines = turn_changes(a, b)
        if not lines:
            continue
        shown += 1
        if shown > MAX_TURNS:
            parts.append("  … and more turns")
            break
        parts.append(f"  turn {n} ({a.label()}):")
        parts.extend(lines)
    if len(old.turns) != len(new.turns):
        parts.append(f"  recorded {len(old.turns)} turns, the replay has {len(new.turns)}")
    if request:
        parts.append("  the request changed:")
        parts.append(request)
    if end:
        parts.append("  the end state:")
        parts.append(end)
    return "\n".join(parts)


def stale_words(old: Transcript, new: Transcript) -> list[StaleWords]:
    """The replies an update would keep although the model saw something else before writing them.

    A reply's words were written after the tier-0 line its call was sent and every tool
    result earlier in the same turn. When one of those changed, the words may no longer fit
    what the form did: the reply is listed, with what changed first.
    """
    out: list[StaleWords] = []
    for n, (a, b) in enumerate(zip(old.turns, new.turns), 1):
        if a.kind != "person":
            continue
        why: str | None = None
        for k, (x, y) in enumerate(zip(a.iterations, b.iterations), 1):
            if why is None and x.tier0 is not None and y.tier0 is not None and x.tier0 != y.tier0:
                why = "it was sent a different tier-0 line"
            if why is not None and x.text:
                out.append(StaleWords(n, a.label(), k, x.text, why))
            if why is None:
                for c_old, c_new in zip(x.calls, y.calls):
                    if c_old.result != c_new.result:
                        why = f"it saw a different result from {c_old.name}"
                        break
    return out
