"""The tool-layer fuzz at scale: ten thousand tool calls a confused model might make, counted.

Run:  python benchmarks/fuzz.py [CALLS] [--through chat|openai|mcp]   (default 10,000, chat; --quick: 300)

``--through``: how the calls reach the tools. ``chat`` (the default) hands them to the chat
loop as they are; ``openai`` streams them from a loopback Chat Completions server through the
real ``openai`` SDK and the adapter (one in four with garbled arguments); ``mcp`` makes them
with the ``mcp`` SDK's client to ``formctl mcp``'s server, which also counts reads across
subjects.

The same examples and checks as ``tests/agent/test_tool_fuzz.py`` (``tests/tool_fuzz.py`` says what
each call must keep true): every example is one chat turn in a fresh JSON store, the tools run
through the chat loop, and every call is checked as it happens. Instead of stopping at the
first finding, this counts them and prints, for the whole run: calls, crashes, writes on error
results, fields a write was sent that its result names in no list (captured, held, rejected,
not stored, undone, ...), captures not in the log, version regressions, conversations saved
under another id, and every other kind of finding, then the wall time. It exits 1 when
anything was found. Through the chat and OpenAI paths the person answers formctl's own
questions from a drawn list (yes, no, nothing, a value, words with a NUL), so a write that ends
the form and is declined is taken back in the run.

The examples come from hypothesis, generated only (no shrinking: a finding is printed with
the call that made it, the first few of each kind). fsync is off, as in the tests.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402

import tool_fuzz  # noqa: E402

HEADLINE = [
    "crash",
    "write on error",
    "field missing from result",
    "lost capture",
    "version drop",
    "conversation under another id",
    "read across subjects",
]


def main(target: int, through: str = "chat") -> int:
    # fsync off, as in the test suite: what is checked is what gets written, not that it is durable.
    from formctl.store import _durable

    _durable.fsync_enabled = False
    # The example forms, copied: loading them must not write a __pycache__ into the checkout.
    project = Path(tempfile.mkdtemp(prefix="formctl-fuzz-forms-"))
    shutil.copytree(ROOT / "tests" / "fixtures" / "forms", project / "forms")
    registry = project / "forms" / "registry.toml"
    tally = tool_fuzz.Tally()
    examples = 0
    harness_errors: list[str] = []

    def one(example: dict) -> None:
        nonlocal examples
        examples += 1
        try:
            if through == "mcp":
                tool_fuzz.play_mcp(example, registry, tally)
            else:
                tool_fuzz.play(
                    example, registry, tally, through=tool_fuzz.through_openai if through == "openai" else None
                )
        except Exception as exc:  # the harness's own failure: reported, never hidden
            harness_errors.append(f"{type(exc).__name__}: {exc}")

    started = time.perf_counter()
    try:
        while tally.calls < target:
            # about four calls a turn: ask hypothesis for just enough turns, then see how far it got
            turns = max(1, min(500, (target - tally.calls) // 4))
            given(example=tool_fuzz.turns())(
                settings(
                    max_examples=turns,
                    deadline=None,
                    database=None,
                    phases=[Phase.generate],
                    suppress_health_check=list(HealthCheck),
                )(lambda example: one(example))
            )()
    finally:
        shutil.rmtree(project, ignore_errors=True)
    wall = time.perf_counter() - started

    kinds = Counter(f.kind for f in tally.findings)
    print(
        f"tool-layer fuzz through {through}: {tally.calls:,} calls in {examples:,} chat turns "
        f"({tally.errors:,} error results, {tally.calls - tally.errors:,} successes)"
    )
    print(f"  crashes:                              {kinds['crash']}")
    print(f"  writes on error results:              {kinds['write on error']}")
    print(f"  fields missing from a write's result: {kinds['field missing from result']}")
    print(f"  captures not in the log:              {kinds['lost capture']}")
    print(f"  declined endings taken back:          {tally.taken_back}")
    print(f"  version regressions:                  {kinds['version drop']}")
    print(f"  conversations saved under another id: {kinds['conversation under another id']}")
    if through == "mcp":
        print(f"  reads across subjects:                {kinds['read across subjects']}")
    for kind, count in sorted(kinds.items()):
        if kind not in HEADLINE:
            print(f"  {kind + ':':<38}{count}")
    print(
        "  per tool (calls / successes): "
        + ", ".join(f"{name} {calls:,}/{ok:,}" for name, (calls, ok) in sorted(tally.by_tool.items()))
    )
    if harness_errors:
        print(f"  harness errors:                       {len(harness_errors)}")
    print(f"  wall time: {wall:.1f} s ({wall / max(tally.calls, 1) * 1000:.1f} ms a call, checks included)")
    shown: Counter[str] = Counter()
    for finding in tally.findings:
        if shown[finding.kind] < 3:
            shown[finding.kind] += 1
            print(f"  - {finding}"[:600])
    for error in harness_errors[:3]:
        print(f"  - harness: {error}"[:600])
    return 1 if tally.findings or harness_errors else 0


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("calls", nargs="?", type=int, default=10_000)
    parser.add_argument("--through", choices=["chat", "openai", "mcp"], default="chat")
    parser.add_argument("--quick", action="store_true", help="300 calls, for .ci/run")
    args = parser.parse_args()
    sys.exit(main(300 if args.quick else args.calls, args.through))
