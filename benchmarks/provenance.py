"""Provenance: does a value the person never gave get stored, and is a value they did give taken as said?

Run:  python benchmarks/provenance.py        (--quick: the same run; it takes seconds)

Scripted conversations (no network): the person's messages go through the real chat loop, a
:class:`ScriptedModel` answers them and then calls ``form_fill`` with a value and a quote for a
``source="person"`` field; the tools, the quote checker and the runner run for real, over an
in-memory store. When formctl asks the person about a value, the asker answers "no", so a value
can only land through the person's own words.

Two families, each case with the outcome it should have:

- **invented**: values the person never gave (an email never typed, a guessed date, a default
  country, a total the model added up, a quote copied from the model's own text, a quote from
  another field's answer, a quote the person never wrote, no quote at all). Counted: values
  *stored without the person's confirmation*. Target: 0.
- **said differently**: values the person did give, written another way (currency signs and
  thousands separators, "3rd of March", "AB 1234" for AB1234, "yeah", mixed case, typographic
  quotes). Counted: the share *stored as said without asking*. Target: at least 95%.

Then two families that check what is stored as ``said`` against the person's words themselves
(an audit independent of the quote checker: a text value's words must stand, in order and
adjacent, in one message the person typed; an address or a number must be written there):

- **seeded and assembled** (scripted model): a ``--seed`` value on the chat's opening lines
  (the host's, not the person's), and a value assembled from pieces of a line ("I'm Sam Lee,
  07700 900123" from "I'm Sam Lee, sam.lee@example.org, 07700 900123").
- **sentences** (the guided offline model, for real): whole sentences at "Full name?" and
  lines that answer several questions at once.

Counted: values stored as ``said`` that the person's words do not contain. Target: 0.

Then the context cost of the ``quotes`` parameter: the tool definitions as sent, with and
without it (``benchmarks/context.py`` holds the whole surface to 3,500 characters).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from datetime import date
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from pydantic import EmailStr, Field  # noqa: E402

from formctl import FormRegistry, FormRunner, MemoryAdapter, define_form  # noqa: E402
from formctl.agent.loop import ChatLoop  # noqa: E402
from formctl.agent.models.base import ModelReply  # noqa: E402
from formctl.agent.models.guided import GuidedModel  # noqa: E402
from formctl.agent.models.scripted import ScriptedModel  # noqa: E402
from formctl.agent.person import Person  # noqa: E402


class Cabin(Enum):
    ECONOMY = "Y"
    BUSINESS = "J"


def bench_form():
    """Every field must come from the person."""
    return (
        define_form("intake", name="Intake")
        .step("all", title="All")
        .field("full_name", Annotated[str, Field(min_length=2)], label="Full name", source="person")
        .field("staff_id", Annotated[str, Field(pattern=r"^[A-Z]{2}\d{4}$")], label="Staff ID", source="person")
        .field("email", EmailStr, label="Email", source="person")
        .field("country", str, label="Country", source="person")
        .field("departure", date, label="Departure date", source="person")
        .field("total", Annotated[float, Field(ge=0)], label="Total", source="person")
        .field("nights", Annotated[int, Field(ge=0)], label="Nights", source="person")
        .field("changed", bool, label="Details changed", source="person")
        .field("mode", Literal["car", "rail", "air"], label="Mode", source="person")
        .field("cabin", Cabin, label="Cabin", source="person")
        .field("notes", str | None, label="Notes")
        .build()
    )


@dataclass(frozen=True)
class Case:
    family: str  # invented | said
    what: str
    person: tuple[str, ...]  # the person's messages, in order
    field: str
    value: Any
    quote: str | None
    model_says: str = "Noted."  # the model's words after each earlier message
    also: tuple[str, Any, str] | None = None  # another field the model fills, in the same call (or the first turn)
    also_first: bool = False


I, S = "invented", "said"

CASES: list[Case] = [
    # ------------------------------------------------------------ invented values
    Case(I, "an email never typed", ("I'm Dana Reeve",), "email", "dana.reeve@example.com", None),
    Case(
        I,
        "an email never typed, 'quoted' from the name",
        ("I'm Dana Reeve",),
        "email",
        "dana.reeve@example.com",
        "Dana Reeve",
    ),
    Case(I, "an email guessed from the company", ("I work at Acme",), "email", "dana@acme.com", "I work at Acme"),
    Case(I, "an email with a quote never written", ("hello",), "email", "jo@example.com", "jo@example.com"),
    Case(
        I,
        "an email one letter off what was typed",
        ("it's jo@example.com",),
        "email",
        "joe@example.com",
        "jo@example.com",
    ),
    Case(I, "an email on another domain", ("it's jo@example.com",), "email", "jo@example.org", "jo@example.com"),
    Case(
        I,
        "an email read from 'at ... dot'",
        ("jo at example dot com",),
        "email",
        "jo@example.com",
        "jo at example dot com",
    ),
    Case(I, "a guessed date, no quote", ("I'm travelling soon",), "departure", "2026-12-08", None),
    Case(I, "a guessed date from 'soon'", ("I'm travelling soon",), "departure", "2026-12-08", "travelling soon"),
    Case(I, "'next Tuesday' read as a date", ("I leave next Tuesday",), "departure", "2026-12-08", "next Tuesday"),
    Case(
        I, "'next Tuesday' read as the wrong date", ("I leave next Tuesday",), "departure", "2026-12-01", "next Tuesday"
    ),
    Case(I, "'tomorrow' read as a date", ("tomorrow",), "departure", "2026-12-02", "tomorrow"),
    Case(I, "an ambiguous 08/12 read one way", ("08/12/2026",), "departure", "2026-08-12", "08/12/2026"),
    Case(I, "a date a day off what was said", ("8 December 2026",), "departure", "2026-12-09", "8 December 2026"),
    Case(I, "a default country", ("I live in Leeds",), "country", "United Kingdom", None),
    Case(
        I,
        "a default country 'quoted' from the city",
        ("I live in Leeds",),
        "country",
        "United Kingdom",
        "I live in Leeds",
    ),
    Case(I, "a country the person never named", ("hi",), "country", "France", "France"),
    Case(I, "a total the model added up", ("hotel 240, meals 45.50",), "total", 285.5, None),
    Case(
        I, "a total added up, quoting the parts", ("hotel 240, meals 45.50",), "total", 285.5, "hotel 240, meals 45.50"
    ),
    Case(I, "a total rounded", ("it came to £1,204.50",), "total", 1205, "£1,204.50"),
    Case(I, "a total from words", ("twelve hundred",), "total", 1200, "twelve hundred"),
    Case(I, "a total read from '1.2k'", ("about 1.2k",), "total", 1200, "about 1.2k"),
    Case(I, "nights counted by the model", ("from the 3rd to the 6th",), "nights", 3, "from the 3rd to the 6th"),
    Case(
        I,
        "a quote copied from the model's own text",
        ("what do you need?", "ok"),
        "email",
        "dana@example.com",
        "Is your email dana@example.com?",
        model_says="Is your email dana@example.com?",
    ),
    Case(
        I,
        "a name copied from the model's own text",
        ("hi", "go on"),
        "full_name",
        "Sam Lee",
        "Are you Sam Lee?",
        model_says="Are you Sam Lee?",
    ),
    Case(
        I,
        "a total copied from the model's own sum",
        ("hotel 240, meals 45.50", "fine"),
        "total",
        285.5,
        "That makes 285.50 in total",
        model_says="That makes 285.50 in total",
    ),
    Case(I, "a quote from another field's answer (staff id for total)", ("AB1234",), "total", 1234, "AB1234"),
    Case(
        I,
        "a quote from another field's answer (name for email)",
        ("Dana Reeve", "dana@example.com"),
        "email",
        "dana.reeve@example.com",
        "Dana Reeve",
    ),
    Case(
        I,
        "a quote from another field's answer (nights for total)",
        ("3 nights",),
        "total",
        3,
        "3 nights",
        also=("nights", 3, "3 nights"),
    ),
    Case(
        I,
        "a quote from another field's answer (earlier turn)",
        ("3 nights", "that's all"),
        "total",
        3,
        "3 nights",
        also=("nights", 3, "3 nights"),
        also_first=True,
    ),
    Case(I, "a staff id invented", ("I'm in finance",), "staff_id", "FN1234", None),
    Case(I, "a staff id 'quoted' from the department", ("I'm in finance",), "staff_id", "FN1234", "finance"),
    Case(I, "a name never given", ("hi there",), "full_name", "Dana Reeve", None),
    Case(I, "a name from the email", ("dana.reeve@example.com",), "full_name", "Dana Reeve", "dana.reeve@example.com"),
    Case(I, "a yes the person never gave", ("they moved",), "changed", True, "they moved"),
    Case(I, "a no read as a yes", ("no",), "changed", True, "no"),
    Case(I, "a mode guessed from 'drove'", ("I drove",), "mode", "car", "I drove"),
    Case(I, "a mode never mentioned", ("hi",), "mode", "rail", None),
    Case(I, "a cabin guessed", ("the cheap seats",), "cabin", "Y", "the cheap seats"),
    # ------------------------------------------------------------ said, written differently
    Case(S, "currency and thousands separators", ("it came to £1,204.50 in the end",), "total", 1204.5, "£1,204.50"),
    Case(S, "thousands separator, no decimals", ("$1,200 all in",), "total", 1200, "$1,200"),
    Case(S, "a decimal comma", ("12,50 €",), "total", 12.5, "12,50 €"),
    Case(S, "space-grouped thousands, decimal comma", ("1 204,50 €",), "total", 1204.5, "1 204,50"),
    Case(S, "dot-grouped thousands", ("1.204,50 EUR",), "total", 1204.5, "1.204,50"),
    Case(S, "trailing zeros", ("total 285.50",), "total", 285.5, "total 285.50"),
    Case(S, "a plain integer", ("3 nights",), "nights", 3, "3 nights"),
    Case(S, "'3rd of March'", ("I leave on the 3rd of March",), "departure", "2027-03-03", "the 3rd of March"),
    Case(S, "'March 3rd, 2027'", ("March 3rd, 2027",), "departure", "2027-03-03", "March 3rd, 2027"),
    Case(S, "'8 Dec'", ("8 Dec",), "departure", "2026-12-08", "8 Dec"),
    Case(
        S,
        "'Tuesday 8 December 2026'",
        ("Tuesday 8 December 2026",),
        "departure",
        "2026-12-08",
        "Tuesday 8 December 2026",
    ),
    Case(S, "an ISO date", ("2026-12-08",), "departure", "2026-12-08", "2026-12-08"),
    Case(S, "an unambiguous 25/12/2026", ("25/12/2026",), "departure", "2026-12-25", "25/12/2026"),
    Case(S, "'AB 1234' for AB1234", ("my staff id is AB 1234",), "staff_id", "AB1234", "AB 1234"),
    Case(S, "'ab-1234' for AB1234", ("ab-1234",), "staff_id", "AB1234", "ab-1234"),
    Case(S, "a lower-case staff id", ("ab1234",), "staff_id", "AB1234", "ab1234"),
    Case(S, "'yeah'", ("yeah",), "changed", True, "yeah"),
    Case(S, "'yep, they have'", ("Yep, they have",), "changed", True, "Yep, they have"),
    Case(S, "'nope'", ("nope",), "changed", False, "nope"),
    Case(S, "'they haven't changed'", ("they haven't changed",), "changed", False, "they haven't changed"),
    Case(S, "a name in mixed case", ("my name is DANA reeve",), "full_name", "Dana Reeve", "DANA reeve"),
    Case(
        S, "a name quoted in other case", ("my name is Dana Reeve",), "full_name", "Dana Reeve", "MY NAME IS DANA REEVE"
    ),
    Case(S, "an accent dropped", ("Zoë Martin",), "full_name", "Zoe Martin", "Zoë Martin"),
    Case(
        S,
        "an email in mixed case",
        ("it's Dana.Reeve@Example.COM",),
        "email",
        "dana.reeve@example.com",
        "Dana.Reeve@Example.COM",
    ),
    Case(
        S,
        "an email in typographic quotes",
        ("my email is “jo@example.com”.",),
        "email",
        "jo@example.com",
        '"jo@example.com"',
    ),
    Case(
        S,
        "a quote with typographic apostrophes",
        ("it’s jo@example.com",),
        "email",
        "jo@example.com",
        "it's jo@example.com",
    ),
    Case(S, "an email with spaces round the @", ("jo @ example.com",), "email", "jo@example.com", "jo @ example.com"),
    Case(S, "a country in lower case", ("i live in france",), "country", "France", "france"),
    Case(
        S,
        "a country quoted with extra spaces",
        ("I live in   New   Zealand",),
        "country",
        "New Zealand",
        "in New Zealand",
    ),
    Case(S, "a choice in capitals", ("RAIL",), "mode", "rail", "RAIL"),
    Case(S, "a choice inside a sentence", ("I came by car",), "mode", "car", "by car"),
    Case(S, "an Enum choice by its name", ("business please",), "cabin", "J", "business"),
    Case(
        S,
        "a quote spanning two of the person's messages' later one",
        ("Dana", "sorry, Dana Reeve"),
        "full_name",
        "Dana Reeve",
        "Dana Reeve",
    ),
    Case(
        S,
        "a correction quoted from the later message",
        ("total 280", "no, total 285.50"),
        "total",
        285.5,
        "total 285.50",
    ),
    Case(S, "a quote with the punctuation dropped", ("Well, it's Leeds, UK!",), "country", "UK", "its Leeds UK"),
    Case(S, "a space after the currency sign", ("£ 1,204.50",), "total", 1204.5, "£ 1,204.50"),
    Case(S, "'Dec 8th' with no year", ("leaving Dec 8th",), "departure", "2026-12-08", "Dec 8th"),
    Case(S, "an unambiguous 12/25 with no year", ("12/25",), "departure", "2026-12-25", "12/25"),
    # written in words: the checker reads these as a reading and asks (counted against the share)
    Case(
        S,
        "'the third of March' (a day in words)",
        ("the third of March",),
        "departure",
        "2027-03-03",
        "the third of March",
    ),
    Case(S, "'three nights' (a number in words)", ("three nights",), "nights", 3, "three nights"),
]


def _say(text: str) -> ModelReply:
    return ModelReply([{"type": "text", "text": text}], "end_turn")


def _fill(values: dict[str, Any], quotes: dict[str, str] | None) -> ModelReply:
    tool_input: dict[str, Any] = {"values": values}
    if quotes:
        tool_input["quotes"] = quotes
    return ModelReply([{"type": "tool_use", "id": "toolu_1", "name": "form_fill", "input": tool_input}], "tool_use")


@dataclass
class Outcome:
    case: Case
    stored: bool
    kind: str | None
    asked: int
    leaked: bool = False  # the model's value is in force, and the person was never asked


def run_case(case: Case) -> Outcome:
    registry = FormRegistry()
    registry.register("intake", name="Intake", description="", load=bench_form)
    runner = FormRunner(MemoryAdapter(), registry=registry, subject="bench", actor="agent", source="chat")
    runner.start("intake")
    asked: list[str] = []

    def answer(question: str) -> str:
        asked.append(question)
        return "no"  # nothing lands through a confirmation: only the person's own words count

    replies = [_say(case.model_says) for _ in case.person[:-1]]
    values, quotes = {case.field: case.value}, {case.field: case.quote} if case.quote else {}
    if case.also is not None and case.also_first:
        replies[0:1] = [_fill({case.also[0]: case.also[1]}, {case.also[0]: case.also[2]}), _say("Noted.")]
    elif case.also is not None:
        values, quotes = {case.also[0]: case.also[1], **values}, {case.also[0]: case.also[2], **quotes}
    replies += [_fill(values, quotes or None), _say("Thanks.")]
    loop = ChatLoop(runner, ScriptedModel(replies), form_id="intake", person=Person(ask=answer))
    for text in case.person:
        turn = loop.send(text)
        assert turn.error is None, (case.what, turn.error)
    revisions = runner.history(case.field).revisions
    leaked = bool(revisions) and revisions[-1].value == case.value and not asked
    return Outcome(case, bool(revisions), revisions[-1].kind if revisions else None, len(asked), leaked)


# --------------------------------------------------------------------------- said, audited

OPENER = "Hello."  # what the chat sends first, in the person's place (never their words)


@dataclass(frozen=True)
class Said:
    """A conversation whose stored ``said`` values are audited against the person's words."""

    family: str  # seeded | assembled | sentence
    what: str
    person: tuple[str, ...]  # the messages sent (an opening with seeds first, when there is one)
    fill: tuple[dict[str, Any], dict[str, str]] | None = None  # the scripted model's form_fill; None: guided


SAID_CASES: list[Said] = [
    Said(
        "seeded",
        "a --seed for a person's field, quoted from the opening lines",
        (f"{OPENER}\nemail: dana@example.org", "hi"),
        ({"email": "dana@example.org"}, {"email": "email: dana@example.org"}),
    ),
    Said(
        "seeded",
        "a --seed for a field anyone may give, quoted from the opening lines",
        (f"{OPENER}\nnotes: fast track", "hi"),
        ({"notes": "fast track"}, {"notes": "notes: fast track"}),
    ),
    Said(
        "seeded",
        "a --seed total, quoted",
        (f"{OPENER}\ntotal: 9999", "hi"),
        ({"total": 9999}, {"total": "total: 9999"}),
    ),
    Said(
        "seeded",
        "the guided model over seeds",
        (f"{OPENER}\nemail: dana@example.org\ntotal: 9999\nnotes: fast track",),
    ),
    Said(
        "assembled",
        "a name assembled around an email",
        ("I'm Sam Lee, sam.lee@example.org, 07700 900123",),
        ({"full_name": "I'm Sam Lee, 07700 900123"}, {"full_name": "I'm Sam Lee, sam.lee@example.org, 07700 900123"}),
    ),
    Said(
        "assembled",
        "a name assembled from two parts of a line",
        ("Dana, my staff id is AB1234, Reeve",),
        ({"full_name": "Dana Reeve"}, {"full_name": "Dana, my staff id is AB1234, Reeve"}),
    ),
    Said(
        "assembled",
        "a country assembled from words either side of a date",
        ("New 3 March Zealand",),
        ({"country": "New Zealand"}, {"country": "New 3 March Zealand"}),
    ),
    Said(
        "sentence",
        "a sentence at Full name with an id and an email",
        ("I'm Dana Reeve, staff id ab1234 and my email is dana@example",),
    ),
    Said(
        "sentence",
        "a sentence at Full name with an email and a phone",
        ("I'm Sam Lee, sam.lee@example.org, 07700 900123",),
    ),
    Said("sentence", "a name with its lead-in", ("my name is Dana Reeve",)),
    Said(
        "sentence",
        "a staff id, an email and words at Full name",
        ("Dana Reeve, AB1234, dana@example.org, going to Leeds",),
    ),
    Said(
        "sentence",
        "several answers at Country",
        ("Dana Reeve", "AB1234", "dana@example.org", "France, leaving 3 March 2026, back 1 March 2026, client visit"),
    ),
    Said("sentence", "a line with no plain first part at Full name", ("3 March, then Leeds",)),
    Said("sentence", "'1.2k' at Total", ("Dana Reeve", "AB1234", "dana@example.org", "France", "2026-12-08", "1.2k")),
]


def _audit_words(text: str) -> list[str]:
    import re
    import unicodedata

    folded = unicodedata.normalize("NFKD", text.casefold())
    folded = "".join(c for c in folded if not unicodedata.combining(c)).replace("'", "").replace("\u2019", "")
    return re.findall(r"[a-z0-9]+", folded)


def contained(value: Any, messages: list[str]) -> bool | None:
    """Do the person's words contain ``value``? None for a kind this audit does not judge (dates,
    yes/no, choices: those are read, and the quote checker's own tests cover them)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        import re

        for message in messages:
            for token in re.findall(r"(?<![\w.,])(?:\d[\d,.\s]*\d|\d)(?![\w])", message):
                for reading in {token.replace(",", "").replace(" ", ""), token.replace(".", "").replace(",", ".")}:
                    try:
                        if float(reading) == float(value):
                            return True
                    except ValueError:
                        continue
        return False
    if not isinstance(value, str):
        return None
    if "@" in value:
        return any(value.casefold() in m.casefold().replace(" @ ", "@") for m in messages)
    try:
        date.fromisoformat(value)
        return None
    except ValueError:
        pass
    wanted = _audit_words(value)
    for message in messages:
        words = _audit_words(message)
        n = len(wanted)
        if n and any(words[i : i + n] == wanted for i in range(len(words) - n + 1)):
            return True
    return False


@dataclass
class SaidOutcome:
    case: Said
    said: list[tuple[str, Any]]  # (field, value) stored as said
    not_contained: list[tuple[str, Any]]


def run_said(case: Said) -> SaidOutcome:
    registry = FormRegistry()
    registry.register("intake", name="Intake", description="", load=bench_form)
    runner = FormRunner(MemoryAdapter(), registry=registry, subject="bench", actor="agent", source="chat")
    person = Person(ask=lambda question: "no", not_theirs=frozenset({OPENER}))
    if case.fill is None:
        model: Any = GuidedModel(runner, form_id="intake")
    else:
        runner.start("intake")
        values, quotes = case.fill
        model = ScriptedModel([_fill(values, quotes), _say("Thanks.")] + [_say("Noted.")] * len(case.person))
    loop = ChatLoop(runner, model, form_id="intake", person=person)
    opening = [] if case.person[0].startswith(OPENER) or case.fill is not None else [OPENER]  # as the chat does
    for text in [*opening, *case.person]:
        turn = loop.send(text)
        assert turn.error is None, (case.what, turn.error)
    # What the person typed: every message but the chat's opening (and the seeds on its lines).
    typed = [text for text in case.person if not text.startswith(OPENER)]
    said, missing = [], []
    instance = runner.open_instance()
    for field_id in ("full_name", "staff_id", "email", "country", "departure", "total", "nights", "notes"):
        try:
            revisions = runner.history(field_id, instance_id=instance.id if instance else None).revisions
        except Exception:
            continue
        if not revisions or revisions[-1].kind != "said":
            continue
        value = revisions[-1].value
        said.append((field_id, value))
        if contained(value, typed) is False:
            missing.append((field_id, value))
    return SaidOutcome(case, said, missing)


def tool_surface() -> tuple[int, int, int]:
    """The tool definitions in characters: compact, with ``quotes`` taken out, and with json's default
    (spaced) separators, which tests/agent/test_tools.py holds to 3,500."""
    from formctl.agent.tools import tool_definitions

    defs = tool_definitions()
    with_quotes, spaced = len(json.dumps(defs, separators=(",", ":"))), len(json.dumps(defs))
    for d in defs:
        d["input_schema"].get("properties", {}).pop("quotes", None)
    return with_quotes, len(json.dumps(defs, separators=(",", ":"))), spaced


def main() -> int:
    outcomes = [run_case(c) for c in CASES]
    invented = [o for o in outcomes if o.case.family == I]
    said = [o for o in outcomes if o.case.family == S]
    print(f"Provenance — {len(outcomes)} scripted cases ({len(invented)} invented, {len(said)} said differently)\n")
    print(f"{'family':<9} {'outcome':<22} {'asked':>5}  case")
    for o in outcomes:
        if o.case.family == I:
            verdict = "STORED UNCONFIRMED" if o.leaked else ("their answer stored" if o.stored else "not stored")
        else:
            verdict = (
                "said, not asked"
                if o.stored and o.kind == "said" and not o.asked
                else f"{o.kind or 'not stored'}, asked"
                if o.asked
                else (o.kind or "not stored")
            )
        print(f"{o.case.family:<9} {verdict:<22} {o.asked:>5}  {o.case.what}")
    audited = [run_said(c) for c in SAID_CASES]
    print()
    print(f"{'family':<9} {'said':>4} {'not in their words':<19}  case")
    for a in audited:
        bad = "; ".join(f"{f}={v!r}" for f, v in a.not_contained) or "-"
        print(f"{a.case.family:<9} {len(a.said):>4} {bad:<19}  {a.case.what}")
    not_contained = sum(len(a.not_contained) for a in audited)
    said_total = sum(len(a.said) for a in audited)
    leaked = sum(o.leaked for o in invented)
    accepted = sum(o.stored and o.kind == "said" and not o.asked for o in said)
    share = accepted / len(said)
    asked_invented = sum(o.asked > 0 for o in invented)
    with_quotes, without, spaced = tool_surface()
    print()
    print(
        f"invented values stored without the person's confirmation: {leaked} of {len(invented)} — target 0 "
        f"({asked_invented} of them asked about, the rest refused outright)"
    )
    print(
        f"values said differently, accepted as said without asking: {accepted} of {len(said)} = {share:.0%} "
        "— target ≥ 95%"
    )
    print(
        f"values stored as said that the person's words do not contain: {not_contained} "
        f"(of {said_total} stored as said over {len(audited)} seeded, assembled and sentence cases) — target 0"
    )
    print(
        f"tool surface: {with_quotes:,} characters compact ({spaced:,} with spaced separators); the quotes "
        f"parameter costs {with_quotes - without:,} ({without:,} without it) — target ≤ 3,500"
    )
    return 0 if leaked == 0 and share >= 0.95 and not_contained == 0 and spaced <= 3500 else 1


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="for .ci/run: the same run (it takes seconds)")
    parser.parse_args()
    sys.exit(main())
