"""Reading time of the guided model: how long it takes to read a person's line (issue 37).

Runs every scenario under ``scenarios/`` once with the guided model and the scripted person,
as ``formctl eval scenarios/ --model guided`` does, and times each turn's reading (the model's
planning of the person's words into tool calls: ``plan_turn``, the value readers and all):
p50, p99 and the slowest. Then the worst case: one 10,000-character line of letters and spaces
(no punctuation: the line that made the old chatty-line pattern backtrack for minutes) read at
each question of a travel claim and a client intake. The aim is under 50 ms. The first lines and
the first values a process reads are reported apart: they load the readers' libraries once.

    python benchmarks/guided.py            (--quick: the same, the long line read once per form)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from formctl.agent.models.guided import model as guided_model  # noqa: E402
from formctl.eval import ModelSpec, ScriptedPerson, SuitePlan, load_scenario, run_suite, scenario_files  # noqa: E402
from formctl.forms.registry import FormRegistry  # noqa: E402

LONG_LINE = ("support with a disability benefit claim and advice about a debt letter from the council " * 120)[:10_000]


def _timed(took: list[float]) -> Any:
    real = guided_model.plan_turn

    def plan_turn(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            took.append(time.perf_counter() - start)

    return plan_turn


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def _scenarios(registry: FormRegistry) -> list[float]:
    from formctl.agent.models.guided import GuidedModel

    took: list[float] = []
    guided_model.plan_turn = _timed(took)  # type: ignore[assignment]
    scenarios = [load_scenario(p) for p in scenario_files([ROOT / "scenarios"])]
    with tempfile.TemporaryDirectory() as folder:
        run_suite(
            scenarios,
            registry,
            [ModelSpec("guided", lambda runner, form_id: GuidedModel(runner, form_id=form_id))],
            SuitePlan(runs=1, make_person=lambda s: ScriptedPerson(s.persona), record_dir=folder),
        )
    print(f"{len(scenarios)} scenarios, {len(took)} turns read")
    return took


def _long_line(registry: FormRegistry, quick: bool) -> list[float]:
    """The long line read at each question of each example form (the answers before it typed plainly)."""
    from formctl import FormRunner
    from formctl.agent.models.base import ModelRequest
    from formctl.agent.models.guided import GuidedModel
    from formctl.store.jsonfile import JsonFileAdapter

    answers = {
        "travel-claim": ["Dana Reeve", "AB1234", "dana@example.org", "Leeds", "3 March 2026", "5 March 2026"],
        "client-intake": ["new", "34", "Sam Lee", "sam@example.org"],
    }
    took: list[float] = []
    long: list[float] = []
    guided_model.plan_turn = _timed(took)  # type: ignore[assignment]
    for form_id, given in answers.items():
        for n in range(1 if quick else len(given) + 1):
            with tempfile.TemporaryDirectory() as folder:
                runner = FormRunner(JsonFileAdapter(folder), registry=registry, subject="bench")
                model = GuidedModel(runner, form_id=form_id)
                messages: list[dict[str, Any]] = []
                for words in ["Hello.", *given[:n]]:
                    _say(model, messages, words, ModelRequest, runner)
                before = len(took)
                _say(model, messages, LONG_LINE, ModelRequest, runner)
                long.append(took[before])  # the long line's own reading (not the replies after it)
    return long


def _say(model: Any, messages: list[dict[str, Any]], words: str, request: Any, runner: Any) -> None:
    """One person turn and the model's replies until it answers in words, its tools run for real."""
    from formctl.agent.loop import tool_result_block
    from formctl.agent.tools import FormTools

    messages.append({"role": "user", "content": words})
    tools = FormTools(runner)
    for _ in range(6):
        reply = model.respond(request(system="", tools=[], messages=list(messages), max_tokens=1000))
        messages.append({"role": "assistant", "content": reply.content})
        calls = [b for b in reply.content if b.get("type") == "tool_use"]
        if not calls:
            return
        results = [tool_result_block(c["id"], tools.call(c["name"], c["input"])) for c in calls]
        messages.append({"role": "user", "content": results})


def _first_values() -> float:
    """One value of each kind read in a fresh process: each reader's library loads once."""
    from formctl.agent.models.guided.values import Kind, ReadingContext, read_value

    ctx = ReadingContext("en-GB")
    start = time.perf_counter()
    read_value(Kind("date"), "Monday 9 March 2026", ctx)
    read_value(Kind("number"), "12 pounds 40", ctx)
    read_value(Kind("integer"), "forty-one", ctx)
    read_value(Kind("phone"), "my mobile is 07700 900982", ctx)
    read_value(Kind("choice", ("car", "rail"), aliases=(("rail", ("train",)),)), "trian", ctx)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--forms", default=str(ROOT / "tests" / "fixtures" / "forms"))
    parser.add_argument("--quick", action="store_true", help="the long line read once per form (.ci/run)")
    args = parser.parse_args()
    registry = FormRegistry.from_toml(Path(args.forms) / "registry.toml")
    cold = _long_line(registry, quick=True)  # the first lines of a process load the readers' libraries
    print(f"first lines read in a fresh process (libraries loading): {', '.join(_ms(t) for t in cold)}")
    print(f"first values read in a fresh process (libraries loading, dateparser its data): {_ms(_first_values())}")
    took = sorted(_scenarios(registry))
    p99 = took[min(len(took) - 1, int(len(took) * 0.99))]
    print(f"per-turn reading: p50 {_ms(statistics.median(took))}   p99 {_ms(p99)}   slowest {_ms(took[-1])}")
    worst = _long_line(registry, args.quick)
    print(f"a 10,000-character line of letters and spaces: worst {_ms(max(worst))} over {len(worst)} questions")
    print("aim: under 50 ms")


if __name__ == "__main__":
    main()
