"""Comparing a replayed conversation with its recording: the first turn that diverges, the end
state's difference, and the result of one transcript's replay (:mod:`.replay` and
:mod:`.program_replay` both report through these)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from formctl.json_types import JsonObject, JsonValue
from formctl.transcripts import changes as _changes
from formctl.transcripts import diff as _diff
from formctl.transcripts.format import Turn

__all__ = ["Divergence", "ReplayResult", "compare_end", "compare_turn", "step_label"]

_STEP = re.compile(r'step (\d+/\d+) "([^"]*)"')


@dataclass
class ReplayResult:
    """The outcome of one transcript. ``diff`` is the failure message (or, after ``update``, what changed)."""

    name: str
    path: str
    passed: bool
    diff: str = ""
    mode: str = "exact"
    turns: int = 0
    updated: bool = False
    seconds: float = 0.0
    stale_words: list[_changes.StaleWords] = field(default_factory=list)  # kept replies that may no longer fit (update)

    def __bool__(self) -> bool:  # pragma: no cover - convenience
        return self.passed


@dataclass
class Divergence:
    turn: int
    where: str
    details: str
    step: str | None = None

    def render(self) -> str:
        head = f"  diverged at turn {self.turn} ({self.where})"
        if self.step:
            head += f", step {self.step}"
        return f"{head}:\n{self.details}"


def step_label(tier0: str | None, result: JsonValue) -> str | None:
    data = result.get("data") if isinstance(result, dict) else None
    step = data.get("step") if isinstance(data, dict) else None
    if isinstance(step, dict) and step.get("title"):
        return f'{step.get("position", "")} "{step["title"]}"'.strip()
    match = _STEP.search(tier0 or "")
    if match:
        return f'{match.group(1)} "{match.group(2)}"'
    return None


def compare_turn(n: int, old: Turn, new: Turn) -> Divergence | None:
    """The first way the replayed turn ``new`` differs from the recorded ``old``, or None."""
    where = old.label()
    if old.kind == "host":
        if old.result is not None and new.result is not None:
            diffs = _diff.differences(old.result, new.result)
            if diffs:
                return Divergence(
                    n,
                    where,
                    "    the host action's result changed:\n" + _diff.render(diffs, indent="      "),
                    step_label(None, old.result),
                )
        return None
    for k, (a, b) in enumerate(zip(old.iterations, new.iterations), 1):
        at = f"{where}, model call {k}" if len(old.iterations) > 1 else where
        if a.tier0 is not None and b.tier0 is not None and a.tier0 != b.tier0:
            return Divergence(
                n,
                at,
                "    the model was sent a different tier-0 line, so the recorded reply answers another question:\n"
                + _diff.text_diff(a.tier0, b.tier0, indent="      "),
                step_label(a.tier0, None),
            )
        for c_old, c_new in zip(a.calls, b.calls):
            if c_old.result is None:
                return Divergence(
                    n,
                    at,
                    f"    {c_old.name}: no result was recorded (`formctl replay --update` records one)",
                    step_label(a.tier0, None),
                )
            # Plain equality first (C speed, and nearly always true); the field-by-field walk
            # only runs to explain a difference.
            diffs = _changes.result_differences(c_old.result, c_new.result) if c_old.result != c_new.result else []
            if diffs:
                return Divergence(
                    n,
                    at,
                    f"    {_changes.call_line(c_old.name, c_old.input)} returned something else:\n"
                    + _diff.render(diffs, indent="      "),
                    step_label(a.tier0, c_old.result),
                )
    if len(old.iterations) != len(new.iterations) or (old.error or None) != (new.error or None):
        details = f"    recorded {len(old.iterations)} model call(s), the replay made {len(new.iterations)}"
        if new.error and new.error != old.error:
            details += f"\n    the turn ended with an error: {new.error}"
        elif old.error and not new.error:
            details += f"\n    the recording ended with an error the replay did not hit: {old.error}"
        return Divergence(n, where, details)
    return None


def compare_end(old: JsonObject | None, new: JsonObject | None, *, exact: bool = True) -> str | None:
    """The end-state diff (``[expect]``), or None. Non-exact (live) grading accepts extra values."""
    if old is None:
        return None
    if new is None:
        return "    no form instance was started"
    lines: list[str] = []
    for key in ("status", "values", "held", "checkpoints", "provenance"):
        if key not in old:
            continue
        want, got = old[key], new.get(key)
        if not exact and key in ("values", "held", "provenance") and isinstance(want, dict) and isinstance(got, dict):
            got = {k: got[k] for k in want if k in got}
        if key == "checkpoints" and not exact:
            want, got = sorted(want or []), sorted(got or [])
        diffs = _diff.differences(want, got, key)
        if diffs:
            lines.append(_diff.render(diffs, indent="    ", labels=_diff.RECORDED if exact else _diff.EXPECTED))
    return "\n".join(lines) or None
