"""``formctl eval compare OLD.json NEW.json``: what changed between two evals, regressions first.

Two result files (``formctl eval --json``) of the same scenarios: two models, two commits of a
form or a prompt, main's last results and a pull request's. Each scenario and model in both is
compared on the figures a reviewer weighs, and a change is a **regression** when NEW is worse:

1. pass → fail: pass^1 or pass^k went down;
2. the model tried to invent more (invention attempts) or invented more (values stored);
3. more turns per run (by more than :data:`TURNS_TOLERANCE` of the old mean, and at least one
   turn: a live model's turn count wobbles a little from run to run);
4. more cost (by more than :data:`COST_TOLERANCE`).

The lines come in that order, then improvements, then scenarios added or gone. The text is
Markdown, to paste into a pull request as it is. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from formctl.json_types import JsonObject

__all__ = ["COST_TOLERANCE", "TURNS_TOLERANCE", "Change", "Comparison", "compare", "markdown", "read_report"]

TURNS_TOLERANCE = 0.10
COST_TOLERANCE = 0.10
_READS = (1, 2)  # the JSON formats this compares


def read_report(text: str, name: str) -> JsonObject:
    """A ``formctl eval --json`` report from its text; ValueError with one line naming ``name`` otherwise."""
    import json

    try:
        report = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{name}: not JSON ({exc.msg}, line {exc.lineno}); give a file from formctl eval --json"
        ) from None
    if not isinstance(report, dict) or not isinstance(report.get("scenarios"), list) or "format" not in report:
        raise ValueError(f"{name}: not a formctl eval --json report (no format and scenarios)")
    if report["format"] not in _READS:
        raise ValueError(
            f"{name}: format {report['format']!r} is not one this formctl reads ({', '.join(map(str, _READS))})"
        )
    return report


@dataclass(slots=True)
class Change:
    """One scenario and model: what moved between OLD and NEW."""

    scenario: str
    model: str
    old: JsonObject | None
    new: JsonObject | None
    worse: list[tuple[int, str]] = field(default_factory=list)  # (rank, what): the lower the rank, the worse
    better: list[str] = field(default_factory=list)
    why: str | None = None  # a newly failing run's first problem

    @property
    def regression(self) -> bool:
        return bool(self.worse)

    @property
    def rank(self) -> int:
        return min(r for r, _ in self.worse) if self.worse else 99


@dataclass(slots=True)
class Comparison:
    old_name: str
    new_name: str
    changes: list[Change]
    model_lines: list[str]  # one Markdown bullet per model of NEW: its figures, OLD → NEW

    @property
    def regressions(self) -> list[Change]:
        return sorted((c for c in self.changes if c.regression), key=lambda c: c.rank)

    @property
    def improvements(self) -> list[Change]:
        return [c for c in self.changes if c.better and not c.regression]

    @property
    def added(self) -> list[Change]:
        return [c for c in self.changes if c.old is None]

    @property
    def gone(self) -> list[Change]:
        return [c for c in self.changes if c.new is None]

    @property
    def unchanged(self) -> int:
        return sum(1 for c in self.changes if c.old and c.new and not c.worse and not c.better)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.0f}%"


def _cost(value: float | None) -> str:
    return "no price" if value is None else f"${value:.4f}"


def _moved(change: Change, rank: int, text: str, *, worse: bool) -> None:
    if worse:
        change.worse.append((rank, text))
    else:
        change.better.append(text)


def _judge(change: Change, k_old: int, k_new: int) -> None:
    old, new = change.old or {}, change.new or {}
    for key, name in (("pass_1", "pass^1"), ("pass_k", f"pass^{k_new}" if k_old == k_new else "pass^k")):
        a, b = old.get(key), new.get(key)
        if a is not None and b is not None and a != b:
            _moved(change, 0, f"{name} {_pct(a)} → {_pct(b)}", worse=b < a)
    for key, name in (("invention_attempts", "invention attempts"), ("invented", "invented values")):
        a, b = old.get(key) or 0, new.get(key) or 0
        if a != b:
            _moved(change, 1, f"{name} {a} → {b}", worse=b > a)
    a, b = old.get("turns_mean"), new.get("turns_mean")
    if a is not None and b is not None and abs(b - a) >= max(1.0, TURNS_TOLERANCE * a):
        _moved(change, 2, f"turns {a} → {b}", worse=b > a)
    a, b = old.get("cost_usd"), new.get("cost_usd")
    if a is not None and b is not None and abs(b - a) > COST_TOLERANCE * max(a, 1e-6):
        _moved(change, 3, f"cost {_cost(a)} → {_cost(b)}", worse=b > a)


def _first_problem(report: JsonObject, scenario: str, model: str) -> str | None:
    for run in report.get("runs") or []:
        if run.get("scenario") == scenario and run.get("model") == model and not run.get("passed"):
            problems = run.get("problems") or []
            return f"run {run.get('run')}: {problems[0]}" if problems else f"run {run.get('run')} failed"
    return None


def compare(old: JsonObject, new: JsonObject, *, old_name: str = "OLD", new_name: str = "NEW") -> Comparison:
    """Every scenario and model of either report, with what got worse and what got better."""
    rows_old = {(r["scenario"], r["model"]): r for r in old.get("scenarios") or []}
    rows_new = {(r["scenario"], r["model"]): r for r in new.get("scenarios") or []}
    changes: list[Change] = []
    for key in [*rows_old, *(k for k in rows_new if k not in rows_old)]:
        change = Change(key[0], key[1], rows_old.get(key), rows_new.get(key))
        if change.old is not None and change.new is not None:
            _judge(change, int(old.get("k") or 1), int(new.get("k") or 1))
            if change.worse:
                change.why = _first_problem(new, *key)
        changes.append(change)
    return Comparison(old_name, new_name, changes, _model_lines(old, new))


def _model_lines(old: JsonObject, new: JsonObject) -> list[str]:
    by_old = {m["model"]: m for m in old.get("models") or []}
    lines = []
    for m in new.get("models") or []:
        o = by_old.get(m["model"])
        if o is None:
            lines.append(f"- **{m['model']}**: new (pass^1 {_pct(m.get('pass_1'))})")
            continue
        lines.append(
            f"- **{m['model']}**: pass^1 {_pct(o.get('pass_1'))} → {_pct(m.get('pass_1'))}, "
            f"pass^k {_pct(o.get('pass_k'))} → {_pct(m.get('pass_k'))}, "
            f"invention attempts {o.get('invention_attempts') or 0} → {m.get('invention_attempts') or 0}, "
            f"turns per run {o.get('turns_mean')} → {m.get('turns_mean')}, "
            f"cost {_cost(o.get('cost_usd'))} → {_cost(m.get('cost_usd'))}"
        )
    return lines


def _row(mark: str, change: Change, what: list[str]) -> str:
    return f"| {mark} | `{change.scenario}` | {change.model} | {'; '.join(what)} |"


def markdown(c: Comparison) -> str:
    """The comparison as Markdown a reviewer pastes into a pull request: a headline, the models,
    then one table row per change, regressions first (the worst first), with why a run now fails."""
    regressions, improvements = c.regressions, c.improvements
    n = len(regressions)
    head = f"**{n} regression{'s' if n != 1 else ''}**" if n else "**No regressions**"
    lines = [
        f"### formctl eval: {c.old_name} → {c.new_name}",
        "",
        f"{head} · {len(improvements)} improved · {c.unchanged} unchanged · {len(c.added)} added · {len(c.gone)} gone",
        "",
        *c.model_lines,
    ]
    rows = [_row("❌ regression", ch, [w for _, w in sorted(ch.worse)] + ch.better) for ch in regressions]
    rows += [_row("✅ improved", ch, ch.better) for ch in improvements]
    rows += [_row("➕ added", ch, [f"pass^1 {_pct((ch.new or {}).get('pass_1'))}"]) for ch in c.added]
    rows += [_row("➖ gone", ch, [f"was pass^1 {_pct((ch.old or {}).get('pass_1'))}"]) for ch in c.gone]
    if rows:
        lines += ["", "| | scenario | model | what changed |", "|---|---|---|---|", *rows]
    why = [f"- `{ch.scenario}` · {ch.model}: {ch.why}" for ch in regressions if ch.why]
    if why:
        lines += ["", "Why the regressions fail now:", *why]
    return "\n".join(lines) + "\n"
