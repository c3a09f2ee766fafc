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

Last, **parallel runs** (``formctl eval --jobs``): every scenario once through the real
``anthropic`` SDK against the loopback Messages API (``tests/fake_anthropic.py``), which answers
each request as the guided model would after ``--latency`` seconds (200 ms: a fast live model),
with ``--jobs 1`` and then ``--jobs N`` (``--parallel``, default 4). It prints both wall times
and their ratio (the aim: at most 0.35 for 4 jobs), and checks the two give the same results.

    python benchmarks/eval.py
    python benchmarks/eval.py --runs 5 --price-model claude-haiku-4-5
    python benchmarks/eval.py --parallel 8 --latency 0.5
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from formctl.agent.usage import Usage  # noqa: E402
from formctl.eval import (  # noqa: E402
    ModelSpec,
    RunResult,
    Scenario,
    ScriptedPerson,
    SuitePlan,
    load_scenario,
    report_json,
    run_suite,
    scenario_files,
)
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
    parser.add_argument("--parallel", type=int, default=4, help="--jobs to compare with --jobs 1")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the loopback model takes per reply")
    parser.add_argument(
        "--quick", action="store_true", help="one run of each scenario; 4 scenarios at 50 ms in parallel (.ci/run)"
    )
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
        results = run_suite(scenarios, registry, [ModelSpec("guided", build)], SuitePlan(args.runs, person, folder))
    report = report_json(results, k=args.runs, prices=load_prices(None), person="scripted")
    (model,) = report["models"]
    print(f"{len(scenarios)} scenarios × {args.runs} runs, guided model, scripted persons")
    print(summary_line(model, args.runs))
    reliability = f"   pass^{args.runs} {model['pass_k']:.3f}" if model["pass_k"] is not None else ""
    print(f"pass^1 {model['pass_1']:.3f}{reliability}")
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
    parallel(scenarios[:4] if args.quick else scenarios, registry, args.parallel, 0.05 if args.quick else args.latency)


def _system_text(system: Any) -> str:
    if isinstance(system, list):
        return "".join(b.get("text", "") for b in system if isinstance(b, dict))
    return system or ""


def _behind_http(latency: float) -> tuple[Any, ModelSpec]:
    """The loopback Messages API answering as the guided model, each reply after ``latency`` seconds;
    each run's model has a name of its own, which routes its requests to its own guided model."""
    sys.path.insert(0, str(ROOT / "tests"))
    from fake_anthropic import FakeAnthropic
    from formctl.agent.models.anthropic import AnthropicModel
    from formctl.agent.models.base import ModelRequest
    from formctl.agent.models.guided import GuidedModel

    api = FakeAnthropic()
    behind: dict[str, Any] = {}
    names = itertools.count(1)

    def respond(body: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
        time.sleep(latency)
        request = ModelRequest(_system_text(body.get("system")), body.get("tools") or [], body["messages"])
        reply = behind[body["model"]].respond(request)
        return reply.content, reply.stop_reason

    def build(runner: Any, form_id: str) -> Any:
        name = f"claude-bench-{next(names)}"
        behind[name] = GuidedModel(runner, form_id=form_id)
        return AnthropicModel(name, api_key="sk-ant-bench-0123456789", base_url=api.url, max_retries=0, timeout=30)

    api.answer_with(respond)
    return api, ModelSpec("anthropic:claude-bench", build)


def parallel(scenarios: list[Scenario], registry: FormRegistry, jobs: int, latency: float) -> None:
    """Wall time of every scenario once with --jobs 1 and with --jobs N, through the SDK over HTTP."""
    api, spec = _behind_http(latency)
    walls: dict[int, float] = {}
    outcomes: dict[int, list[RunResult]] = {}
    try:
        for n in (1, jobs):
            started = time.perf_counter()
            outcomes[n] = run_suite(scenarios, registry, [spec], SuitePlan(1, _scripted, None, n))
            walls[n] = time.perf_counter() - started
    finally:
        api.close()
    calls = sum(r.model_calls for r in outcomes[1])
    same = [(r.scenario, r.passed, r.values) for r in outcomes[1]] == [
        (r.scenario, r.passed, r.values) for r in outcomes[jobs]
    ]
    print(
        f"\nparallel runs: {len(scenarios)} scenarios once each, {calls} model calls through the anthropic SDK to a "
        f"loopback server answering in {latency * 1000:.0f} ms"
    )
    print(f"  --jobs 1: {walls[1]:.2f} s   --jobs {jobs}: {walls[jobs]:.2f} s")
    print(f"  --jobs {jobs} ÷ --jobs 1 = {walls[jobs] / walls[1]:.3f}   (aim: at most 0.35 for 4 jobs)")
    print(f"  same results: {'yes' if same else 'NO'}")
    if not same:
        raise SystemExit("--jobs gave other results than --jobs 1")


def _scripted(s: Scenario) -> ScriptedPerson:
    return ScriptedPerson(s.persona)


if __name__ == "__main__":
    main()
