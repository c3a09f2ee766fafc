"""What an eval measured, per run, per scenario and model, and per model: JSON, JUnit, a table.

**pass^k** is the chance that *all* k runs of a scenario succeed (the reliability measure of
the tool-agent-user benchmarks): from n runs of which c passed, the unbiased estimate is
C(c, k) / C(n, k). With k = n it is 1 when every run passed, else 0; pass^1 is c / n. A
model's figure is the mean over its scenarios. docs/eval.md gives the JSON schema.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from formctl.agent.usage import KEYS, Usage
from formctl.errors import ScenarioError
from formctl.eval.run import RunResult
from formctl.forms.lifecycle import Status
from formctl.json_types import JsonObject

if TYPE_CHECKING:
    from rich.table import Table

__all__ = [
    "DEFAULT_PRICES",
    "JSON_FORMAT",
    "Price",
    "cost",
    "load_prices",
    "pass_hat_k",
    "price_for",
    "report_json",
    "summary_line",
    "write_junit",
]

# 2: invention_attempts, sdk_retries, each run's expected and stored values and conversation;
# pass_k is null when k is 1 (pass^1 is pass_1). `formctl eval compare` reads 1 and 2.
JSON_FORMAT = 2


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write: float

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


# List prices per million tokens (USD) as published by the providers when this table was
# written; the cache figures are Anthropic's 5-minute cache write (1.25x input) and read (0.1x
# input), OpenAI's cached input. Override with --prices FILE (docs/eval.md, "Cost"). Keys match
# a model's name by prefix, the longest first; the guided and scripted models cost nothing.
DEFAULT_PRICES: dict[str, Price] = {
    "guided": Price(0, 0, 0, 0),
    "scripted": Price(0, 0, 0, 0),
    "claude-opus-4-5": Price(5.0, 25.0, 0.50, 6.25),
    "claude-opus-4": Price(15.0, 75.0, 1.50, 18.75),
    "claude-sonnet-4": Price(3.0, 15.0, 0.30, 3.75),
    "claude-haiku-4": Price(1.0, 5.0, 0.10, 1.25),
    "claude-3-5-haiku": Price(0.80, 4.0, 0.08, 1.0),
    "gpt-4.1-nano": Price(0.10, 0.40, 0.025, 0.10),
    "gpt-4.1-mini": Price(0.40, 1.60, 0.10, 0.40),
    "gpt-4.1": Price(2.0, 8.0, 0.50, 2.0),
    "gpt-4o-mini": Price(0.15, 0.60, 0.075, 0.15),
    "gpt-4o": Price(2.50, 10.0, 1.25, 2.50),
}


def load_prices(path: str | Path | None) -> dict[str, Price]:
    """The default table, with a TOML file's entries over it::

    [prices."claude-sonnet-4-6"]
    input = 3.0          # USD per million tokens
    output = 15.0
    cache_read = 0.30
    cache_write = 3.75
    """
    prices = dict(DEFAULT_PRICES)
    if path is None:
        return prices
    try:
        doc = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ScenarioError(f"cannot read the price table: {exc}", path=path) from None
    table = doc.get("prices")
    if not isinstance(table, dict):
        raise ScenarioError('a price table is a [prices."MODEL"] table per model', path=path)
    for name, row in table.items():
        if not isinstance(row, dict):
            raise ScenarioError(
                f"[prices.{name!r}] must be a table of input, output, cache_read, cache_write", path=path
            )
        try:
            values = {k: float(row.get(k, 0.0)) for k in ("input", "output", "cache_read", "cache_write")}
        except (TypeError, ValueError):
            raise ScenarioError(f"[prices.{name!r}]: prices are numbers (USD per million tokens)", path=path) from None
        prices[name] = Price(**values)
    return prices


def price_for(model: str, prices: dict[str, Price]) -> Price | None:
    """The price of a model by its name (``anthropic:claude-sonnet-4-6`` or the bare name), longest prefix first."""
    name = model.split(":", 1)[1] if ":" in model else model
    for key in sorted(prices, key=len, reverse=True):
        if name.startswith(key) or model.startswith(key):
            return prices[key]
    return None


def cost(usage: Usage, price: Price | None) -> float | None:
    """Dollars for these tokens, or None when the model has no price."""
    if price is None:
        return None
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_input_tokens * price.cache_read
        + usage.cache_creation_input_tokens * price.cache_write
    ) / 1_000_000


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The chance that k runs drawn from these n (c of them passed) all pass: C(c, k) / C(n, k)."""
    if n <= 0 or k <= 0 or k > n:
        return 0.0
    return math.comb(c, k) / math.comb(n, k)


# --------------------------------------------------------------------------- JSON


def _tokens(usages: Iterable[Usage]) -> dict[str, int]:
    total = Usage()
    for u in usages:
        total.add(u.to_dict())
    return {k: getattr(total, k) for k in KEYS}


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 2) if values else None


def _sum_cost(costs: list[float | None]) -> float | None:
    known = [c for c in costs if c is not None]
    return round(sum(known), 6) if known and len(known) == len(costs) else None


def run_json(r: RunResult, price: Price | None) -> JsonObject:
    g = r.grade
    return {
        "scenario": r.scenario,
        "model": r.model,
        "run": r.run,
        "passed": r.passed,
        "status": r.status,
        "problems": list(g.problems),
        "values": {"right": list(g.right), "wrong": list(g.wrong), "missing": list(g.missing)},
        "invented": [i.to_dict() for i in g.invented],
        "invention_attempts": [a.to_dict() for a in g.attempts],
        "turns": r.turns,
        "model_calls": r.model_calls,
        "sdk_retries": r.sdk_retries,
        "tool_calls": r.tool_calls,
        "tool_errors": r.tool_errors,
        "tokens": r.usage.to_dict(),
        "person_tokens": r.person_usage.to_dict(),
        "cost_usd": None if cost(r.usage, price) is None else round(cost(r.usage, price) or 0.0, 6),
        "seconds": round(r.seconds, 3),
        "transcript": r.transcript,
        "error": r.error,
        "expected": dict(r.expected),
        "stored": dict(r.values),
        "conversation": list(r.conversation),
    }


def _group(runs: list[JsonObject], k: int) -> JsonObject:
    n = len(runs)
    c = sum(1 for r in runs if r["passed"])
    completed = [r for r in runs if r["status"] == Status.COMPLETE]
    return {
        "runs": n,
        "passed": c,
        "pass_1": round(pass_hat_k(n, c, 1), 4),
        "pass_k": round(pass_hat_k(n, c, k), 4) if n >= k and k > 1 else None,
        "values": {
            "right": sum(len(r["values"]["right"]) for r in runs),
            "wrong": sum(len(r["values"]["wrong"]) for r in runs),
            "missing": sum(len(r["values"]["missing"]) for r in runs),
        },
        "invented": sum(len(r["invented"]) for r in runs),
        "invention_attempts": sum(len(r.get("invention_attempts") or []) for r in runs),
        "tool_errors": sum(r["tool_errors"] for r in runs),
        "turns_mean": _mean([r["turns"] for r in runs]),
        "model_calls": sum(r["model_calls"] for r in runs),
        "sdk_retries": sum(r.get("sdk_retries") or 0 for r in runs),
        "model_calls_mean": _mean([r["model_calls"] for r in runs]),
        "completed": len(completed),
        "turns_per_completed_form": _mean([r["turns"] for r in completed]),
        "model_calls_per_completed_form": _mean([r["model_calls"] for r in completed]),
        "tokens": _tokens(Usage.from_dict(r["tokens"]) for r in runs),
        "cost_usd": _sum_cost([r["cost_usd"] for r in runs]),
        "seconds": round(sum(r["seconds"] for r in runs), 3),
    }


def report_json(results: list[RunResult], *, k: int, prices: dict[str, Price], person: str) -> JsonObject:
    """The whole eval as JSON (the schema is in docs/eval.md, "JSON output")."""
    runs = [run_json(r, price_for(r.model, prices)) for r in results]
    models = list(dict.fromkeys(r["model"] for r in runs))
    scenarios = list(dict.fromkeys(r["scenario"] for r in runs))
    per_scenario: list[JsonObject] = []
    per_model: list[JsonObject] = []
    for m in models:
        rows = []
        for s in scenarios:
            these = [r for r in runs if r["model"] == m and r["scenario"] == s]
            if these:
                row = {"scenario": s, "model": m, **_group(these, k)}
                rows.append(row)
        per_scenario.extend(rows)
        mine = [r for r in runs if r["model"] == m]
        whole = _group(mine, k)
        # A model's pass^1 and pass^k: the mean over its scenarios (each scenario counts once).
        whole["pass_1"] = round(sum(r["pass_1"] for r in rows) / len(rows), 4) if rows else 0.0
        ks = [r["pass_k"] for r in rows if r["pass_k"] is not None]
        whole["pass_k"] = round(sum(ks) / len(ks), 4) if ks and len(ks) == len(rows) else None
        # Only when k > 1: with one run per scenario, pass^k is pass^1 and the report says it once.
        price = price_for(m, prices)
        per_model.append(
            {"model": m, "scenarios": len(rows), **whole, "price": price.to_dict() if price is not None else None}
        )
    return {
        "format": JSON_FORMAT,
        "k": k,
        "person": person,
        "models": per_model,
        "scenarios": per_scenario,
        "runs": runs,
    }


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.0f}%"


def _money(value: float | None) -> str:
    return "no price" if value is None else f"${value:.4f}"


def summary_line(model: JsonObject, k: int) -> str:
    """One line per model: ``guided: pass^1 93%, pass^3 86% over 14 scenarios; ...``."""
    t = model["tokens"]
    per_form = (
        f"{model['turns_per_completed_form']} turns and {model['model_calls_per_completed_form']} model calls "
        "per completed form"
        if model["completed"]
        else "no form completed"
    )
    reliability = f", pass^{k} {_pct(model['pass_k'])}" if k > 1 else ""
    return (
        f"{model['model']}: pass^1 {_pct(model['pass_1'])}{reliability} over "
        f"{model['scenarios']} scenarios ({model['passed']}/{model['runs']} runs passed); "
        f"{model['invented']} invented values stored, {model['invention_attempts']} invention attempts; {per_form}; "
        f"{model['model_calls']} model calls, {model['sdk_retries']} SDK retries; {model['tool_errors']} tool errors; "
        f"tokens {t['input_tokens']:,} in, {t['output_tokens']:,} out, {t['cache_read_input_tokens']:,} cache reads, "
        f"{t['cache_creation_input_tokens']:,} cache writes; {_money(model['cost_usd'])}; {model['seconds']:.1f} s"
    )


def table(report: JsonObject) -> Table:
    """The rich table of scenarios × models."""
    from rich.table import Table

    k = report["k"]
    t = Table(title=f"formctl eval · {k} run{'s' if k != 1 else ''} per scenario · person: {report['person']}")
    columns = [
        ("scenario", "left"),
        ("model", "left"),
        ("pass^1", "right"),
        *([(f"pass^{k}", "right")] if k > 1 else []),
        ("values ✓/✗/∅", "right"),
        ("invented", "right"),
        ("attempts", "right"),  # invention attempts: values formctl had to ask the person about
        ("turns", "right"),
        ("calls", "right"),  # model calls per run (mean)
        ("retries", "right"),  # the SDK's retries of failed requests, all runs
        ("tool err", "right"),
        ("tokens in/out/cache r/w", "right"),  # cache reads / cache writes
        ("cost", "right"),
        ("time", "right"),
    ]
    for name, justify in columns:
        t.add_column(name, justify=justify)  # type: ignore[arg-type]
    for row in report["scenarios"]:
        v, tok = row["values"], row["tokens"]
        style = None if row["passed"] == row["runs"] else "red"
        t.add_row(
            row["scenario"],
            row["model"],
            _pct(row["pass_1"]),
            *([_pct(row["pass_k"])] if k > 1 else []),
            f"{v['right']}/{v['wrong']}/{v['missing']}",
            str(row["invented"]),
            str(row["invention_attempts"]),
            str(row["turns_mean"]),
            str(row["model_calls_mean"]),
            str(row["sdk_retries"]),
            str(row["tool_errors"]),
            f"{tok['input_tokens']:,}/{tok['output_tokens']:,}/{tok['cache_read_input_tokens']:,}/"
            f"{tok['cache_creation_input_tokens']:,}",
            _money(row["cost_usd"]),
            f"{row['seconds']:.1f}s",
            style=style,
        )
    return t


def failures(report: JsonObject) -> list[str]:
    """Each failed run: its problems, its transcript, and the command that replays it as a test."""
    out: list[str] = []
    for r in report["runs"]:
        if r["passed"]:
            continue
        head = f"FAILED {r['scenario']} · {r['model']} · run {r['run']}"
        out.append(head)
        out.extend(f"  {p}" for p in r["problems"])
        if r["transcript"]:
            out.append(f"  transcript: {r['transcript']}")
            out.append(f"  as a regression test: {regression_command(r)}")
    return out


def regression_command(run: JsonObject) -> str:
    """The one command that replays a failed run's person against the model, graded on the scenario."""
    model = run["model"]
    how = "--offline" if model == "guided" else f"--model {model}"
    return f"formctl replay {run['transcript']} --live {how}"


# --------------------------------------------------------------------------- JUnit


def write_junit(path: str | Path, report: JsonObject) -> None:
    """JUnit XML: one testcase per scenario and model (it passes when all its runs passed)."""
    import xml.etree.ElementTree as ET

    rows = report["scenarios"]
    failed = sum(1 for r in rows if r["passed"] != r["runs"])
    total = sum(r["seconds"] for r in rows)
    root = ET.Element(
        "testsuites", name="formctl-eval", tests=str(len(rows)), failures=str(failed), time=f"{total:.3f}"
    )
    suite = ET.SubElement(
        root,
        "testsuite",
        name="formctl-eval",
        tests=str(len(rows)),
        failures=str(failed),
        errors="0",
        time=f"{total:.3f}",
    )
    for row in rows:
        case = ET.SubElement(
            suite, "testcase", classname=f"eval.{row['model']}", name=row["scenario"], time=f"{row['seconds']:.3f}"
        )
        if row["passed"] != row["runs"]:
            mine = [r for r in report["runs"] if r["model"] == row["model"] and r["scenario"] == row["scenario"]]
            bad = [r for r in mine if not r["passed"]]
            first = bad[0]["problems"][0] if bad and bad[0]["problems"] else "failed"
            node = ET.SubElement(
                case, "failure", message=f"{len(bad)}/{len(mine)} runs failed: {first}"[:200], type="EvalFailure"
            )
            lines: list[str] = []
            for r in bad:
                lines.append(f"run {r['run']}:")
                lines.extend(f"  {p}" for p in r["problems"])
                if r["transcript"]:
                    lines.append(f"  {regression_command(r)}")
            node.text = "\n".join(lines)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
