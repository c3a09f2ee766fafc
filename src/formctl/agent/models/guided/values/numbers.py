"""Numbers and amounts in a person's words: "£1,200", "12 pounds 40", "forty-one",
"about 210, exactly 212.40", "nothing".

Figures are read with ``price-parser`` (currency signs, thousands and decimal separators, the
decimal separator from the locale), numbers written in words with ``number-parser``. A line
with several numbers gives the one it says is exact ("about 210, exactly 212.40" is 212.40, and
the reading is said back); otherwise it is asked again. A number the line says is not now
("I'll be 18 in June") is not the answer. An amount with a multiplier ("1.2k") is refused: it
is neither read as its digits nor multiplied out.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from formctl.agent.models.guided.values.context import ReadingContext
from formctl.agent.models.guided.values.kinds import UnreadableAnswer
from formctl.agent.models.guided.values.reading import Reading, around

# A figure, not glued to letters on its left ("AB1234" is not 1234): digits with separators
# ("1,200.50", "1.200,50"), a currency before or after, a unit after ("40 miles", "12 pounds").
_FIGURE = re.compile(
    r"(?<![A-Za-z0-9])(?P<neg>-\s?)?(?P<cur>[£$€]\s?)?(?P<num>\d+(?:[.,]\d+)*)(?![\d])"
    r"(?:\s?(?P<unit>pounds?|quid|pence|p|dollars?|euros?|gbp|usd|eur|k|m|mn|bn|b|thousand|million|billion|grand)(?![a-z])"
    r"(?:\s+(?:and\s+)?(?P<pence>\d{1,2})(?:\s?(?:p|pence))?(?![\d.,]))?)?",
    re.IGNORECASE,
)
LIMIT = 24  # figures read from one line at most: more than any answer gives, and a bound on the work
_SCALES = frozenset({"k", "m", "mn", "bn", "b", "thousand", "million", "billion", "grand"})
_MAJOR_UNITS = frozenset({"pound", "pounds", "quid", "dollar", "dollars", "euro", "euros"})
# Number words, run together into one number ("forty-one", "two hundred and twelve").
_NUMBER_WORDS = frozenset(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety "
    "hundred thousand".split()
)
_WORD_RUN = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)?")
# What marks the number meant: "exactly 212.40", "actually 300", "to be exact".
_EXACT = re.compile(
    r"(?:exactly|precisely|actually|to be exact|to be precise|in fact|no wait|sorry|i mean|make it|correction)\W*$",
    re.IGNORECASE,
)
_ROUGH = re.compile(r"(?:about|around|roughly|approx(?:imately)?|circa|maybe|nearly|almost|under|over)\W*$", re.I)
# The same marks after the figure: "312.75 exactly", "300 or so", "312.75 to be exact".
_EXACT_AFTER = re.compile(r"^\W*(?:exactly|precisely|to be (?:exact|precise)|on the dot|on the nose)\b", re.I)
_ROUGH_AFTER = re.compile(r"^\W*(?:or so|ish|give or take|roughly|approx(?:imately)?|more or less)\b", re.I)


def marked(text: str, span: tuple[int, int]) -> str | None:
    """ "exact" or "rough" when the words just before or after the figure at ``span`` say so
    ("exactly 212.40", "312.75 to be exact", "roughly 300", "300 or so"), else None."""
    before, after = text[max(0, span[0] - 24) : span[0]], text[span[1] : span[1] + 24]
    if _EXACT.search(before) or _EXACT_AFTER.match(after):
        return "exact"
    if _ROUGH.search(before) or _ROUGH_AFTER.match(after):
        return "rough"
    return None


# A number that is not now: "I'll be 18 in June", "turning 18 next month".
_FUTURE_BEFORE = re.compile(r"(?:'ll be|will be|going to be|gonna be|turning|turn|be)\s*$", re.IGNORECASE)
# A year, not a number of now: "born in 1990".
_BORN = re.compile(r"\bborn\b[\w\s,]{0,16}$", re.IGNORECASE)
_FUTURE_AFTER = re.compile(r"^\s*(?:in|on|next|this|come|by|soon|later|when|after|from)\b", re.IGNORECASE)
# "18 in June", "18 next month": a number with a time still to come after it.
_COMING = re.compile(
    r"^\s*(?:in|next|this|come|on my)\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|a |\d+ |"
    r"(?:one|two|three|few|couple) |month|year|week|birthday|spring|summer|autumn|winter)",
    re.IGNORECASE,
)
_NONE = re.compile(
    r"\b(?:nothing|none|nil|zero cost|no cost|no charge|free|not a penny|didn't (?:pay|spend|cost)|"
    r"did not (?:pay|spend|cost)|no (?:hotel|accommodation|meals?|food|costs?|expenses?|receipts?|charge|mileage))\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Figure:
    value: Decimal
    span: tuple[int, int]
    text: str
    scaled: bool = False
    currency: str | None = None


def figures(text: str, ctx: ReadingContext) -> list[Figure]:
    """Every number written in ``text``, in figures or in words, in order."""
    found = [_figure(m, ctx) for m in itertools.islice(_FIGURE.finditer(text), LIMIT)]
    found += _word_numbers(text)[:LIMIT]
    return sorted((f for f in found if f is not None), key=lambda f: f.span)


def _figure(m: re.Match[str], ctx: ReadingContext) -> Figure | None:
    from price_parser import Price

    unit = (m.group("unit") or "").lower()
    amount = Price.fromstring(m.group("num"), decimal_separator=ctx.decimal_separator).amount
    if amount is None:
        return None
    if m.group("pence") and unit in _MAJOR_UNITS and amount == amount.to_integral_value():
        amount += Decimal(m.group("pence")) / 100  # "12 pounds 40"
    end = m.end() if m.group("pence") or unit else m.end("num")
    if unit in ("p", "pence") and not m.group("cur"):
        amount = amount / 100
    value = -amount if m.group("neg") and not m.group("cur") else amount
    currency = (m.group("cur") or "").strip() or (unit if unit in _MAJOR_UNITS else None)
    return Figure(value, (m.start(), end), m.group(0)[: end - m.start()], unit in _SCALES, currency)


def _word_numbers(text: str) -> list[Figure]:
    """Numbers written in words ("forty-one", "two hundred and twelve"), with number-parser."""
    out: list[Figure] = []
    if _NUMBER_WORDS.isdisjoint(w for m in _WORD_RUN.finditer(text.lower()) for w in m.group(0).split("-")):
        return out  # no number word at all: nothing for number-parser to read
    from number_parser import parse_number

    run: list[re.Match[str]] = []
    for m in [*_WORD_RUN.finditer(text), None]:
        if len(out) >= LIMIT:
            break
        if m is not None and _is_number_word(m.group(0), run):
            run.append(m)
            continue
        while run and run[-1].group(0).lower() == "and":
            run.pop()
        if run and run[0].group(0).lower() in ("hundred", "thousand") and not _after_a(text, run[0].start()):
            run = []  # "a few hundred", "hundreds": no number ("a hundred" is one)
        if run and len(run) <= 12:
            start, end = run[0].start(), run[-1].end()
            number = parse_number(text[start:end])
            if number is not None:
                out.append(Figure(Decimal(number), (start, end), text[start:end]))
        run = []
    return out


def _after_a(text: str, at: int) -> bool:
    return text[max(0, at - 3) : at].lower() in (" a ", "a ") or text[max(0, at - 2) : at].lower() == "a "


def _is_number_word(word: str, run: list[re.Match[str]]) -> bool:
    parts = word.lower().split("-")
    if all(p in _NUMBER_WORDS for p in parts):
        return True
    return bool(run) and word.lower() == "and"


def says_none(text: str) -> bool:
    """Do these words say there is no amount ("nothing", "nope, no hotel", "I stayed with friends,
    so nothing"), with no figure in them?"""
    from formctl.forms.replies import yes_no

    if any(ch.isdigit() for ch in text):
        return False
    answer, rest = yes_no(text)
    if answer is False and not any(_is_number_word(w, []) for w in _WORD_RUN.findall(rest)):
        return True
    return _NONE.search(text) is not None


def read_number(text: str, ctx: ReadingContext, *, integer: bool) -> Reading:
    """The one number ``text`` gives (see the module's docstring); raises UnreadableAnswer."""
    found = figures(text, ctx)
    if not found and says_none(text):
        return Reading(None, (0, len(text)), "none")
    if any(f.scaled for f in found):
        raise UnreadableAnswer("please write the amount in full, in figures, like 1,200.")
    meant, dropped = _choose(text, found)
    whole = " (a whole number)" if integer else ""
    if meant is None:
        if dropped and len(found) == len(dropped):
            f = dropped[0]
            said = " ".join(text.split()) if len(text) <= 80 else _context(text, f)
            raise UnreadableAnswer(f'"{said}" is not what it is now: I need the number as it is today.')
        raise UnreadableAnswer(f"I need a single number{whole}, like 40 or 1,200.")
    if len(str(meant.value)) > 300:
        raise UnreadableAnswer("That number is far too long; I need the number itself, like 40 or 1,200.")
    value: int | float = _as_json(meant.value, integer)
    # "about 210, exactly 212.40": the figure given up is part of the reading, not something else said
    exact = marked(text, meant.span) == "exact"
    spans = [
        meant.span,
        *(
            f.span
            for f in found
            if f is not meant and exact and (f.span < meant.span or marked(text, f.span) == "rough")
        ),
    ]
    note = None
    if len(found) > 1:
        note = f'I read "{" ".join(text.split())}" as {_shown(meant)}.'
    rest = around(text, spans)
    return Reading(value, meant.span, _shown(meant), rest, note)


def _choose(text: str, found: list[Figure]) -> tuple[Figure | None, list[Figure]]:
    """The figure meant, and those that are not now ("I'll be 18 in June")."""
    later = [f for f in found if _not_now(text, f)]
    current = [f for f in found if f not in later]
    if len(current) == 1:
        return current[0], later
    exact = [f for f in current if marked(text, f.span) == "exact"]
    if exact:
        return exact[-1], later  # before the money: "roughly 300 quid, 312.75 to be precise"
    money = [f for f in current if f.currency]
    if len(money) == 1:
        return money[0], later  # "£60, that was for two dinners": the amount is the one in money
    rough = [f for f in current if marked(text, f.span) == "rough"]
    if len(current) - len(rough) == 1 and rough:
        return next(f for f in current if f not in rough), later
    return None, later


def _not_now(text: str, figure: Figure) -> bool:
    before = text[max(0, figure.span[0] - 24) : figure.span[0]]
    after = text[figure.span[1] : figure.span[1] + 24]
    if _COMING.match(after) or _BORN.search(before):
        return True
    return _FUTURE_BEFORE.search(before) is not None and (
        _FUTURE_AFTER.match(after) is not None or "ll be" in before or "will be" in before or "turn" in before
    )


def _context(text: str, figure: Figure) -> str:
    start = text.rfind(" ", 0, max(0, figure.span[0] - 8))
    start = max(0, start)
    m = re.match(r"\s*\S+(?:\s+\S+)?", text[figure.span[1] :])
    end = figure.span[1] + (m.end() if m else 0)
    return " ".join(text[start:end].split()).strip(" ,.;")


def _as_json(value: Decimal, integer: bool) -> int | float:
    try:
        if value == value.to_integral_value() and (integer or "." not in str(value)):
            return int(value)
    except InvalidOperation:
        pass
    # A whole number written "40.0" is still a whole number; "40.5" is sent as it is, and the
    # engine's rejection says why it doesn't fit.
    return int(value) if integer and value == value.to_integral_value() else float(value)


def _shown(figure: Figure) -> str:
    value = figure.value
    text = f"{value:,.2f}" if value != value.to_integral_value() else f"{int(value):,}"
    sign = figure.currency if figure.currency in ("£", "$", "€") else ""
    if figure.currency in ("pound", "pounds", "quid") or figure.text.lower().endswith(("p", "pence")):
        sign = "£"
    return f"{sign}{text}"
