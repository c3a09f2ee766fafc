"""Context cost: what the chat loop sends the model, call by call, against the "eager" alternative.

Run:  python benchmarks/context.py          (--quick: the same run; it takes seconds)

For six scripted conversations on ``travel-claim`` (the model's turns are fixed
:class:`ScriptedModel` replies; the tools, the engine and the loop run for real) this
keeps a ledger per model call, in characters (and characters / 4 as a token estimate):

- **tools**: the tool definitions as sent (compact JSON, as the SDK serialises them);
- **system**: the fixed system prompt (base conventions + the form's conduct);
- **tier 0**: the transient status block appended to the newest user turn;
- **tool results**: the ``tool_result`` contents that are new in this call (the results
  of the previous iteration's tool calls), split into *read* results (``form_status`` /
  ``form_inspect``) and *write* results (start, fill, revise, …);
- **eager**: the alternative design that renders every field of the form (id, label,
  type, required, ask/hint text), step by step, into the prompt of every call.

"Spent learning what to ask" is defined as **tier 0 + the read results** (``form_status``
and ``form_inspect``), summed over every call: the characters whose only purpose is to
tell the model which fields exist and which to ask next. The eager design spends the
whole-form rendering on every call for the same purpose. The headline ratio is
``learning / eager`` over all six scenarios; target ≤ 30%.

Write results are reported separately and left out of the headline: the eager design
needs them as well (a model must see what was captured or rejected whichever design
tells it what to ask). For transparency a *strict* ratio, counting every tool result
too, is printed as well.

Neither design's re-sent history is counted: both re-send the same history, and with
the tools and system prompt fixed, a provider's prompt cache serves it.

Targets: the ten tool definitions as sent ≤ 3,500 characters (the reference: 6,842);
tier 0 at the start of travel-claim ≤ 260 characters (the reference: 521); learning ≤ 30%
of eager.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from formctl import FormRegistry, FormRunner, MemoryAdapter  # noqa: E402
from formctl.agent.events import ModelCall  # noqa: E402
from formctl.agent.loop import ChatLoop  # noqa: E402
from formctl.agent.models.base import ModelReply  # noqa: E402
from formctl.agent.models.scripted import ScriptedModel  # noqa: E402
from formctl.agent.tools import tool_definitions  # noqa: E402

REGISTRY = ROOT / "forms" / "registry.toml"
READ_TOOLS = {"form_status", "form_inspect"}

CLAIMANT = {"full_name": "Dana Reeve", "staff_id": "AB1234", "email": "dana@example.com"}
TRIP = {
    "destination": "Leeds",
    "departure_date": "2026-03-02",
    "return_date": "2026-03-04",
    "purpose": "Client workshop",
}
RAIL = {"mode": "rail", "ticket_reference": "TR-99812"}
COSTS = {"accommodation": 240, "meals": 45.5, "total": 285.5}


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# --------------------------------------------------------------------------- scripted replies

_ids = iter(range(1, 100_000))


def say(text: str) -> ModelReply:
    return ModelReply([{"type": "text", "text": text}], "end_turn")


def use(name: str, input: dict[str, Any], *more: tuple[str, dict[str, Any]]) -> ModelReply:
    blocks = [
        {"type": "tool_use", "id": f"toolu_{next(_ids):05d}", "name": n, "input": i} for n, i in ((name, input), *more)
    ]
    return ModelReply(blocks, "tool_use")


def start(values: dict[str, Any] | None = None) -> ModelReply:
    args: dict[str, Any] = {"form": "travel-claim"}
    if values:
        args["values"] = values
    return use("form_start", args)


def fill(values: dict[str, Any]) -> ModelReply:
    return use("form_fill", {"values": values})


def submit() -> ModelReply:
    return use("form_submit", {})


# The travel claim is sent only after the person confirms a read-back (review=True).
READ_BACK = (
    "Before I send it: Dana Reeve, AB1234, dana@example.com; Leeds, 2-4 March 2026, client "
    "workshop; rail TR-99812; hotel 240, meals 45.50, total 285.50. Shall I send it?"
)


# Each scenario: [(user message, [model replies for that turn]), ...]
SCENARIOS: dict[str, list[tuple[str, list[ModelReply]]]] = {
    "straight-through": [
        ("I'd like to claim travel expenses.", [start(), say("Sure. What's your full name, staff ID and work email?")]),
        ("Dana Reeve, AB1234, dana@example.com", [fill(CLAIMANT), say("Where did you go, when, and why?")]),
        ("Leeds, 2 to 4 March 2026, a client workshop", [fill(TRIP), say("How did you travel?")]),
        ("By train, ticket TR-99812", [fill(RAIL), say("What did accommodation and meals cost, and the total?")]),
        ("Hotel 240, meals 45.50, total 285.50", [fill(COSTS), say(READ_BACK)]),
        ("Yes, send it.", [submit(), say("Sent: your claim is complete.")]),
    ],
    "front-loaded": [
        (
            "Claim for Dana Reeve, AB1234, dana@example.com: Leeds 2-4 March 2026 for a client workshop, "
            "by train (TR-99812), hotel 240, meals 45.50, total 285.50.",
            [start(CLAIMANT | TRIP | RAIL | COSTS), say(READ_BACK)],
        ),
        ("Yes.", [submit(), say("Sent: your claim is complete.")]),
    ],
    "held value after a correction": [
        ("Claim please: Dana Reeve, AB1234, dana@example.com", [start(CLAIMANT), say("Where did you go, and when?")]),
        (
            "Leeds, 2-4 March 2026, client workshop. I drove, 120 miles.",
            [fill(TRIP | {"mode": "car", "mileage": 120}), say("Got it: 120 miles by car. Accommodation and meals?")],
        ),
        (
            "Sorry, I actually took the train.",
            [
                use("form_revise", {"field": "mode", "value": "rail", "reason": "took the train"}),
                say("Updated to rail; I've kept the mileage aside. Your ticket reference?"),
            ],
        ),
        ("TR-99812", [fill({"ticket_reference": "TR-99812"}), say("And the costs?")]),
        ("Hotel 240, meals 45.50, total 285.50", [fill(COSTS), say(READ_BACK)]),
        ("Yes, send it.", [submit(), say("Sent.")]),
    ],
    "a bad value": [
        (
            "Start a travel claim. I'm Dana Reeve, staff ab12.",
            [
                start({"full_name": "Dana Reeve", "staff_id": "ab12"}),
                say("Staff IDs are two capital letters and four digits, like AB1234. What's yours?"),
            ],
        ),
        (
            "AB1234, and dana@example.com",
            [fill({"staff_id": "AB1234", "email": "dana@example.com"}), say("Thanks. Where did you go?")],
        ),
        ("Leeds, 2-4 March 2026, a client workshop", [fill(TRIP), say("How did you travel?")]),
    ],
    "what else will you need?": [
        ("Claim please: Dana Reeve, AB1234, dana@example.com", [start(CLAIMANT), say("Where did you travel?")]),
        (
            "What else will you need from me?",
            [
                use("form_inspect", {"scope": "outline"}),
                say("The trip (destination, dates, purpose), how you travelled, and your costs."),
            ],
        ),
        (
            "OK: Leeds, 2-4 March 2026, client workshop",
            [fill(TRIP), use("form_status", {}), say("How did you travel?")],
        ),
    ],
    "over the policy cap": [
        (
            "Dana Reeve, AB1234, dana@example.com; Leeds 2-4 March 2026, client workshop; flew, ticket AF-4421.",
            [start(CLAIMANT | TRIP | {"mode": "air", "ticket_reference": "AF-4421"}), say("What were the costs?")],
        ),
        (
            "Hotel 600, meals 250, total 850",
            [
                fill({"accommodation": 600, "meals": 250, "total": 850}),
                say("That's over the 750 cap, so Finance needs to approve it before it can be filed."),
            ],
        ),
        (
            "Can I change the meals to 150?",
            [
                use("form_revise", {"field": "meals", "value": 150}),
                say("Not while it waits for Finance; I'll note it for them."),
            ],
        ),
    ],
}


# --------------------------------------------------------------------------- the eager alternative


def eager_rendering(compiled: Any) -> str:
    """Every field of the form, with its type, required flag and ask/hint text, step by step."""
    lines = [f'Form {compiled.id} "{compiled.name}": {compiled.description}'.rstrip()]
    total = len(compiled.steps)
    for step in compiled.steps:
        lines.append(f"Step {step.number}/{total} {step.title}:")
        for f in step.fields:
            row = f"- {f.id} ({f.label}): {f.type}; {'required' if f.required else 'optional'}"
            if f.description:
                row += f"; {f.description}"
            lines.append(row)
    return "\n".join(lines)


# --------------------------------------------------------------------------- the ledger


@dataclass
class CallRow:
    tools: int
    system: int
    tier0: int
    read_results: int
    write_results: int
    eager: int

    @property
    def learning(self) -> int:
        return self.tier0 + self.read_results


@dataclass
class Ledger:
    name: str
    calls: list[CallRow] = field(default_factory=list)
    final_status: str = ""

    def total(self, attr: str) -> int:
        return sum(getattr(c, attr) for c in self.calls)


def run_scenario(name: str, turns: list[tuple[str, list[ModelReply]]]) -> Ledger:
    registry = FormRegistry.from_toml(REGISTRY)
    runner = FormRunner(MemoryAdapter(), registry=registry, subject=f"bench:{name}")
    eager = len(eager_rendering(registry.load("travel-claim")))
    replies = [r for _, rs in turns for r in rs]
    ledger = Ledger(name)
    tool_names: dict[str, str] = {}

    def on_event(event: Any) -> None:
        if not isinstance(event, ModelCall):
            return
        request = event.request
        newest = request.messages[-1]["content"]
        read = write = 0
        for block in newest if isinstance(newest, list) else []:
            if block.get("type") == "tool_result":
                size = len(block["content"])
                if tool_names.get(block["tool_use_id"]) in READ_TOOLS:
                    read += size
                else:
                    write += size
        ledger.calls.append(
            CallRow(
                tools=len(_compact(request.tools)),
                system=len(request.system),
                tier0=len(event.tier0),
                read_results=read,
                write_results=write,
                eager=eager,
            )
        )

    for reply in replies:
        for block in reply.content:
            if block.get("type") == "tool_use":
                tool_names[block["id"]] = block["name"]
    loop = ChatLoop(runner, ScriptedModel(replies), form_id="travel-claim", on_event=on_event)
    for text, _ in turns:
        turn = loop.send(text)
        if turn.error:
            raise SystemExit(f"scenario {name!r}: {turn.error}")
    instance = runner.open_instance()
    ledger.final_status = instance.status if instance is not None else "-"
    return ledger


def tool_definition_sizes() -> dict[str, int]:
    definitions = tool_definitions()
    with_cache = [dict(d) for d in definitions]
    with_cache[-1]["cache_control"] = {"type": "ephemeral"}
    return {
        "compact": len(_compact(definitions)),
        "compact_with_cache_control": len(_compact(with_cache)),
        "spaced": len(json.dumps(definitions, ensure_ascii=False)),
    }


def start_tier0() -> str:
    runner = FormRunner(MemoryAdapter(), registry=FormRegistry.from_toml(REGISTRY), subject="bench:tier0")
    runner.start("travel-claim")
    return runner.tier0()


def _tok(chars: int) -> str:
    return f"{chars:,} ({chars // 4:,} tok)"


def main() -> dict[str, Any]:
    sizes = tool_definition_sizes()
    tier0 = start_tier0()
    compiled = FormRegistry.from_toml(REGISTRY).load("travel-claim")
    print("Context cost — formctl's tiered design vs the eager alternative (characters; tokens ≈ chars/4)\n")
    print(
        f"ten tool definitions as sent (compact JSON, as the SDK sends): {sizes['compact']:,} chars "
        f"({sizes['compact_with_cache_control']:,} with the cache_control marker; {sizes['spaced']:,} with "
        f"spaced separators) — target ≤ 3,500, reference 6,842"
    )
    print(f"tier 0 at the start of travel-claim: {len(tier0)} chars — target ≤ 260, reference 521")
    print(f"    {tier0!r}")
    print(f"eager whole-form rendering: {len(eager_rendering(compiled)):,} chars per call (reference 1,754)\n")

    header = (
        f"{'scenario':<32}{'calls':>6}{'tools':>10}{'system':>9}{'tier 0':>8}{'reads':>8}{'writes':>9}"
        f"{'learning':>10}{'eager':>9}{'ratio':>8}  final"
    )
    print(header)
    print("-" * len(header))
    ledgers = [run_scenario(name, turns) for name, turns in SCENARIOS.items()]
    for lg in ledgers:
        learning, eager = lg.total("learning"), lg.total("eager")
        print(
            f"{lg.name:<32}{len(lg.calls):>6}{lg.total('tools'):>10,}{lg.total('system'):>9,}"
            f"{lg.total('tier0'):>8,}{lg.total('read_results'):>8,}{lg.total('write_results'):>9,}"
            f"{learning:>10,}{eager:>9,}{learning / eager:>8.1%}  {lg.final_status}"
        )
    totals = {
        k: sum(lg.total(k) for lg in ledgers)
        for k in ("tools", "system", "tier0", "read_results", "write_results", "learning", "eager")
    }
    calls = sum(len(lg.calls) for lg in ledgers)
    print("-" * len(header))
    print(
        f"{'all six':<32}{calls:>6}{totals['tools']:>10,}{totals['system']:>9,}{totals['tier0']:>8,}"
        f"{totals['read_results']:>8,}{totals['write_results']:>9,}{totals['learning']:>10,}"
        f"{totals['eager']:>9,}{totals['learning'] / totals['eager']:>8.1%}"
    )
    ratio = totals["learning"] / totals["eager"]
    strict = (totals["tier0"] + totals["read_results"] + totals["write_results"]) / totals["eager"]
    print(f"\nspent learning what to ask (tier 0 + status/inspect results): {_tok(totals['learning'])}")
    print(f"eager (whole form in every call):                            {_tok(totals['eager'])}")
    print(f"ratio: {ratio:.1%} of eager — target ≤ 30%")
    print(f"strict ratio (tier 0 + every tool result, writes included):  {strict:.1%} of eager")
    print(
        f"fixed prefix per call (tools + system, prompt-cached):       "
        f"{_tok(totals['tools'] // calls + totals['system'] // calls)}"
    )
    return {
        "tool_chars": sizes["compact"],
        "tier0_chars": len(tier0),
        "ratio": ratio,
        "strict_ratio": strict,
        "totals": totals,
        "calls": calls,
    }


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="for .ci/run: the same run (it takes seconds)")
    parser.parse_args()
    main()
