"""The shipped eval scenarios with the guided model: reliability, effort, and what a live run costs.

Runs every scenario under ``scenarios/`` ``--runs`` times (default 3) with the guided model
and the scripted person, exactly as ``formctl eval scenarios/ --model guided --runs 3`` does,
and prints per model:

* pass^1 and pass^3 (docs/eval.md, "pass^k"), and which scenarios fail and why;
* mean person turns and model calls per *completed* form.

Then, from the same offline runs, what a live model would be sent: every request's system
prompt, tools and conversation, and every reply, counted in characters and turned into tokens
at ``--chars-per-token`` (4, the usual rule of thumb for English and JSON). The Anthropic
adapter marks two cache breakpoints, after the fixed system prompt and tools and on the newest
assistant message, so each call reads from the cache what the previous call wrote, writes the
conversation that has grown since, and pays full input price only for the newest turn (the
person's words or the tool results, and the tier-0 line). Priced with
the built-in table for ``--price-model`` (default claude-sonnet-4-6). This is an estimate of
the *shape* of a conversation the guided model leads; a real model talks more or less.

    python benchmarks/eval.py
    python benchmarks/eval.py --runs 5 --price-model claude-haiku-4-5
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from formctl.agent.usage import Usage  # noqa: E402
from formctl.eval import ModelSpec, ScriptedPerson, load_scenario, report_json, run_suite, scenario_files  # noqa: E402
from formctl.eval.report import cost, load_prices, price_for, summary_line  # noqa: E402
from formctl.forms.registry import FormRegistry  # noqa: E402


class _Measured:
    """The guided model, with the size of every request and reply it handled, in characters."""

    def __init__(self, inner: Any, sizes: list[tuple[int, int, int]]) -> None:
        self.inner, self.sizes, self.name = inner, sizes, inner.name

    def respond(self, request: Any, on_text: Any = None) -> Any:
        """Records (cacheable prefix, whole request, reply) in characters. The Anthropic adapter puts
        cache breakpoints after the system prompt and on the newest assistant message, so the
        cacheable prefix is the system prompt, the tools and the conversation up to that message."""
        fixed = len(json.dumps(request.system)) + len(json.dumps(request.tools))
        sizes = [len(json.dumps(m, ensure_ascii=False)) for m in request.messages]
        last_assistant = max((i for i, m in enumerate(request.messages) if m.get("role") == "assistant"), default=-1)
        reply = self.inner.respond(request, on_text=on_text)
        self.sizes.append(
            (
                fixed + sum(sizes[: last_assistant + 1]),
                fixed + sum(sizes),
                len(json.dumps(reply.content, ensure_ascii=False)),
            )
        )
        return reply


def _usd(amount: float) -> str:
    return f"${amount:.4f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--chars-per-token", type=float, default=4.0)
    parser.add_argument("--price-model", default="claude-sonnet-4-6")
    parser.add_argument("--forms", default=str(ROOT / "tests" / "fixtures" / "forms"))
    parser.add_argument("--quick", action="store_true", help="one run of each scenario (.ci/run)")
    args = parser.parse_args()
    if args.quick:
        args.runs = 1

    from formctl.agent.models.guided import GuidedModel

    registry = FormRegistry.from_toml(Path(args.forms) / "registry.toml")
    scenarios = [load_scenario(p) for p in scenario_files([ROOT / "scenarios"])]
    sizes: dict[tuple[str, int], list[tuple[int, int, int]]] = {}
    current: list[Any] = [None]

    def build(runner: Any, form_id: str) -> Any:
        key = (current[0], len([k for k in sizes if k[0] == current[0]]) + 1)
        sizes[key] = []
        return _Measured(GuidedModel(runner, form_id=form_id), sizes[key])

    def person(s: Any) -> ScriptedPerson:
        current[0] = s.name
        return ScriptedPerson(s.persona)

    with tempfile.TemporaryDirectory() as folder:
        results = run_suite(
            scenarios,
            registry,
            [ModelSpec("guided", build)],
            runs=args.runs,
            make_person=person,
            record_dir=folder,
        )
    report = report_json(results, k=args.runs, prices=load_prices(None), person="scripted")
    (model,) = report["models"]
    print(f"{len(scenarios)} scenarios × {args.runs} runs, guided model, scripted persons")
    print(summary_line(model, args.runs))
    print(f"pass^1 {model['pass_1']:.3f}   pass^{args.runs} {model['pass_k']:.3f}")
    print(
        f"per completed form ({model['completed']} of {model['runs']} runs): "
        f"{model['turns_per_completed_form']} person turns, {model['model_calls_per_completed_form']} model calls"
    )
    for row in report["scenarios"]:
        if row["passed"] != row["runs"]:
            run = next(r for r in report["runs"] if r["scenario"] == row["scenario"] and not r["passed"])
            print(f"  fails: {row['scenario']}: {run['problems'][0]}")

    price = price_for(args.price_model, load_prices(None))
    print(
        f"\nwhat a live run would be sent, estimated at {args.chars_per_token} characters per token, priced as "
        f"{args.price_model} (USD per million: {price.to_dict() if price else 'no price'}):"
    )
    print(f"{'scenario':36} {'calls':>5} {'input':>8} {'cache rd':>9} {'cache wr':>9} {'output':>7} {'cost':>8}")
    total_cost = 0.0
    by_scenario: dict[str, list[Usage]] = {}
    for (name, _), calls in sizes.items():
        usage = Usage()
        cached_before = 0  # characters already in the cache from the previous call's breakpoints
        for prefix, whole, reply in calls:
            read = min(cached_before, prefix)
            usage.add(
                {
                    "input_tokens": round((whole - prefix) / args.chars_per_token),
                    "cache_read_input_tokens": round(read / args.chars_per_token),
                    "cache_creation_input_tokens": round((prefix - read) / args.chars_per_token),
                    "output_tokens": round(reply / args.chars_per_token),
                }
            )
            cached_before = prefix
        by_scenario.setdefault(name, []).append(usage)
    for name, usages in by_scenario.items():
        u = usages[0]  # the guided model's runs are identical; one is the figure
        dollars = cost(u, price) or 0.0
        total_cost += dollars
        calls = len(sizes[(name, 1)])
        print(
            f"{name:36} {calls:>5} {u.input_tokens:>8,} {u.cache_read_input_tokens:>9,} "
            f"{u.cache_creation_input_tokens:>9,} {u.output_tokens:>7,} {_usd(dollars):>8}"
        )
    firsts = [usages[0] for usages in by_scenario.values()]
    n = len(firsts)
    mean_calls = sum(len(sizes[(name, 1)]) for name in by_scenario) / n
    print(
        f"{'mean per scenario run':36} {mean_calls:>5.1f} {sum(u.input_tokens for u in firsts) / n:>8,.0f} "
        f"{sum(u.cache_read_input_tokens for u in firsts) / n:>9,.0f} "
        f"{sum(u.cache_creation_input_tokens for u in firsts) / n:>9,.0f} "
        f"{sum(u.output_tokens for u in firsts) / n:>7,.0f} {_usd(total_cost / n):>8}"
    )
    print(f"{'one run of every scenario':36} {'':>5} {'':>8} {'':>9} {'':>9} {'':>7} {_usd(total_cost):>8}")
    print(f"{'--runs ' + str(args.runs):36} {'':>5} {'':>8} {'':>9} {'':>9} {'':>7} {_usd(total_cost * args.runs):>8}")


if __name__ == "__main__":
    main()
