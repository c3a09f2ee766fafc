"""The quote checker: is a value the person's own words? Pure functions, no I/O, no clock.

A model that fills a field may say where the value came from: a quote of the person's words.
:func:`check_quote` classifies the value against the person's own messages in the
conversation (never the model's text, never tool results), as docs/engine.md describes under
"Provenance":

- ``said``: the quote is found in one of the person's messages and the value is in the quote,
  once both are normalised for the field's type;
- ``reading``: the quote is found, but the value is an interpretation of it ("next Tuesday"
  for a date, "twelve hundred" for 1200, "jo at example dot com" for an email);
- ``assumed``: no quote, or a quote the person never wrote.

Finding a quote is tolerant of case, whitespace, punctuation, accents and quote marks: both
sides are cut into words and the quote's words must appear, in order and adjacent, in one
message. Each type then has its own idea of "in":

- text: the value's words, case- and space-insensitive ("AB 1234" holds ``AB1234``);
- email: the address itself, spaces aside ("jo at example dot com" is a reading);
- numbers: every number written in the quote, with currency signs, thousands separators and
  decimal commas read ("£1,204.50" holds 1204.5; words for numbers are a reading);
- choices: the option, or its label, among the quote's words;
- dates: a date written in the quote ("3rd of March", "8 Dec 2026", "2026-12-08", "08/12" only
  when day and month cannot be swapped); relative words ("next Tuesday", "tomorrow") are read
  against the message's own date and are always a reading;
- booleans: yes or no words, and not both.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal, InvalidOperation
from enum import Enum
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from formctl.forms.replies import confirmation

__all__ = [
    "ASSUMED",
    "READING",
    "SAID",
    "PersonMessage",
    "QuoteCheck",
    "ValueKind",
    "answer_value",
    "check_quote",
    "is_no",
    "is_yes",
    "find_quote",
    "value_kind",
]

SAID, READING, ASSUMED = "said", "reading", "assumed"


@dataclass(frozen=True, slots=True)
class PersonMessage:
    """One message the person typed: its words, its turn in the conversation, and when it was sent.

    ``at`` is an ISO date or timestamp (or a ``date``); relative words are read against it.
    """

    text: str
    turn: int
    at: str | date | None = None


@dataclass(frozen=True, slots=True)
class QuoteCheck:
    """Where a value came from, as the checker found it.

    ``quote`` is the person's words exactly as they wrote them (cut from their message, so a
    quote sent in other case or punctuation reads as typed); ``span`` is where they sit in
    ``message``; ``reads_as`` what a relative date reads as, from the message's date.
    """

    kind: str
    quote: str | None = None
    turn: int | None = None
    message: str | None = None
    span: tuple[int, int] | None = None
    reads_as: str | None = None

    @property
    def said(self) -> bool:
        return self.kind == SAID


@dataclass(frozen=True, slots=True)
class ValueKind:
    """How the checker reads a field's values: ``kind`` and, for a choice, the options' words."""

    kind: str  # text | email | number | choice | date | bool
    labels: tuple[tuple[str, str], ...] = ()  # a choice: (stored value, label) pairs


# --------------------------------------------------------------------------- words

# A word: letters and digits, held together across an apostrophe ("it's", "don’t" are one word,
# spelt without it); every other sign (quote marks, "-", "@", ".", "_") separates words.
_WORD = re.compile(r"[^\W_]+(?:['’‘`´][^\W_]+)*")
_APOSTROPHES = re.compile(r"['’‘`´]")


def _fold(text: str) -> str:
    """Case- and accent-insensitive form of ``text``, the same length (so offsets carry over)."""
    out = []
    for ch in text:
        base = unicodedata.normalize("NFKD", ch)
        base = "".join(c for c in base if not unicodedata.combining(c)) or ch
        folded = base.casefold()
        out.append(folded if len(folded) == 1 else ch.lower()[:1] or ch)
    return "".join(out)


def _words(text: str) -> list[tuple[str, int, int]]:
    """The words of ``text`` (letters and digits), folded, each with its offsets in ``text``."""
    return [(_APOSTROPHES.sub("", m.group()), m.start(), m.end()) for m in _WORD.finditer(_fold(text))]


def _locate(needle: Sequence[str], hay: Sequence[tuple[str, int, int]], limit: int | None = None) -> list[int]:
    """Every index in ``hay`` where the words ``needle`` start, in order and adjacent (the first
    ``limit`` of them)."""
    n = len(needle)
    if n == 0:
        return []
    first = needle[0]
    found: list[int] = []
    for i in range(len(hay) - n + 1):
        if hay[i][0] == first and all(hay[i + k][0] == needle[k] for k in range(1, n)):
            found.append(i)
            if limit is not None and len(found) >= limit:
                break
    return found


def _joined_in(value_words: Sequence[str], hay_words: Sequence[str]) -> bool:
    """The value's words, run together, appear in ``hay_words`` run together, starting and ending on
    word boundaries: "AB 1234" holds AB1234 and "ab-1234" holds "AB 1234", "cab 12345" holds neither."""
    target = "".join(value_words)
    if not target:
        return False
    starts: dict[int, int] = {}
    ends: set[int] = set()
    pos = 0
    for w in hay_words:
        starts[pos] = len(starts)
        pos += len(w)
        ends.add(pos)
    joined = "".join(hay_words)
    at = joined.find(target)
    while at >= 0:
        if at in starts and at + len(target) in ends:
            return True
        at = joined.find(target, at + 1)
    return False


def find_quote(messages: Iterable[PersonMessage], quote: str) -> list[tuple[PersonMessage, tuple[int, int]]]:
    """Every place ``quote`` occurs in the person's messages, as (message, span in its text)."""
    wanted = [w for w, _, _ in _words(quote)]
    found: list[tuple[PersonMessage, tuple[int, int]]] = []
    for message in messages:
        hay = _words(message.text)
        # A quote found many times in one message is the same words each time: the first few
        # places are enough, and reading thousands (a pathological line) would take minutes.
        spans: dict[tuple[int, int], None] = {}  # places that widen to the same words are one place
        for i in _locate(wanted, hay, _PLACES):
            spans.setdefault(_widen(message.text, hay[i][1], hay[i + len(wanted) - 1][2]))
        found.extend((message, span) for span in spans)
    return found


_PLACES = 8  # places of one quote read in one message at most


_LEADING = "\"'`´‘’‚‛“”„‟«»‹›「」『』([{<"
_TRAILING = _LEADING + ")]}>.,;:!?"


def _widen(text: str, start: int, end: int) -> tuple[int, int]:
    """The quote's span grown to the whitespace around it, less enclosing quote marks and closing
    punctuation: so "£", "-" and "@example.com" next to the quoted words are part of them."""
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    while end < len(text) and not text[end].isspace():
        end += 1
    while start < end and text[start] in _LEADING:
        start += 1
    while end > start and text[end - 1] in _TRAILING:
        end -= 1
    return start, end


# --------------------------------------------------------------------------- kinds of values


def value_kind(annotation: Any) -> ValueKind | None:
    """How the checker reads values of a field with this annotation; None when it cannot.

    ``formctl check`` warns about a ``source="person"`` field this returns None for: every
    value the model gives it would be a reading, so the person would be asked every time.
    """
    try:
        return _value_kind(annotation)
    except TypeError:  # unhashable annotation
        return _kind_of(annotation)


@functools.lru_cache(maxsize=1024)
def _value_kind(annotation: Any) -> ValueKind | None:
    return _kind_of(annotation)


def _unwrap(annotation: Any) -> Any:
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
            continue
        if origin is Union or type(annotation).__name__ == "UnionType":
            rest = [a for a in get_args(annotation) if a is not type(None)]
            if len(rest) != 1:
                return _MIXED
            annotation = rest[0]
            continue
        return annotation


_MIXED = object()  # a union of several types: which one a value means is not for the checker to guess


def _kind_of(annotation: Any) -> ValueKind | None:
    bare = _unwrap(annotation)
    if bare is _MIXED:
        return None
    if get_origin(bare) is Literal:
        options = get_args(bare)
        return ValueKind("choice", tuple((str(o), str(o)) for o in options))
    if isinstance(bare, type) and issubclass(bare, Enum):
        return ValueKind("choice", tuple((str(m.value), m.name) for m in bare))
    if bare is bool:
        return ValueKind("bool")
    if bare in (int, float, Decimal):
        return ValueKind("number")
    if bare is date:
        return ValueKind("date")
    if bare is str:
        return ValueKind("text")
    if getattr(bare, "__name__", "") in ("EmailStr", "NameEmail"):
        return ValueKind("email")
    # Anything else pydantic can describe: read its JSON schema (a constrained type, a NewType).
    from formctl.forms.validate import adapter_for

    try:
        schema = adapter_for(annotation).json_schema()
    except Exception:
        return None
    branches = [b for b in schema.get("anyOf", [schema]) if isinstance(b, dict) and b.get("type") != "null"]
    if len(branches) != 1:
        return None
    node = branches[0]
    if isinstance(node.get("enum"), list):
        return ValueKind("choice", tuple((str(o), str(o)) for o in node["enum"]))
    kind, fmt = node.get("type"), node.get("format")
    if kind == "string":
        if fmt is None:
            return ValueKind("text")
        return ValueKind(fmt) if fmt in ("email", "date") else None
    if kind in ("integer", "number"):
        return ValueKind("number")
    if kind == "boolean":
        return ValueKind("bool")
    return None


# --------------------------------------------------------------------------- the check


def check_quote(messages: Sequence[PersonMessage], quote: str | None, value: Any, annotation: Any) -> QuoteCheck:
    """Classify ``value`` for a field of ``annotation``, quoted as ``quote``, against the person's messages.

    When the quote occurs in several messages, the one whose words hold the value wins (then the
    latest): a person who corrected themselves is quoted from the correction.
    """
    if not isinstance(quote, str) or not _words(quote):
        return QuoteCheck(ASSUMED)
    places = find_quote(messages, quote)
    if not places:
        return QuoteCheck(ASSUMED)
    kind = value_kind(annotation)
    best: QuoteCheck | None = None
    for message, (start, end) in places:
        words = message.text[start:end]
        holds, reads_as = _holds(kind, value, words, message.at)
        found = QuoteCheck(SAID if holds else READING, words, message.turn, message.text, (start, end), reads_as)
        if best is None or (found.said, found.turn or 0) >= (best.said, best.turn or 0):
            best = found
    assert best is not None
    return best


def _holds(kind: ValueKind | None, value: Any, words: str, at: str | date | None) -> tuple[bool, str | None]:
    """Whether ``words`` (the person's) hold ``value``; for a date, what a relative word reads as."""
    if kind is None or value is None:
        return False, None
    if kind.kind == "date":
        return _date_holds(value, words, at)
    if kind.kind == "number":
        return _number_holds(value, words), None
    if kind.kind == "bool":
        return _bool_holds(value, words), None
    if kind.kind == "choice":
        return _choice_holds(kind, value, words), None
    if kind.kind == "email":
        return isinstance(value, str) and _email_holds(value, words), None
    return isinstance(value, str) and _text_holds(value, words), None


_ADDRESS = re.compile(r"\S*(?:@|://|www\.)\S*")


def _text_holds(value: str, words: str) -> bool:
    value_words = [w for w, _, _ in _words(value)]
    chunks = [words]
    if not _ADDRESS.search(value):
        # "Dana Reeve" is not in "dana.reeve@example.com": an address's parts are not the person's
        # words. Nor does taking an address out join what stood either side of it: the value must
        # be in the words on one side ("Sam Lee, sam@example.org, 07700" does not hold "Sam Lee 07700").
        chunks = _ADDRESS.split(words)
    return any(_joined_in(value_words, [w for w, _, _ in _words(chunk)]) for chunk in chunks)


def _email_holds(value: str, words: str) -> bool:
    address = re.escape(_fold(value).strip())
    closed_up = re.sub(r"\s*([@.])\s*", r"\1", _fold(words))  # "jo @ example.com"
    return re.search(rf"(?<![\w.+-]){address}(?![\w-]|\.\w)", closed_up) is not None


def _choice_holds(kind: ValueKind, value: Any, words: str) -> bool:
    hay = [w for w, _, _ in _words(words)]
    for stored, label in kind.labels:
        if stored == str(value):
            return any(_joined_in([w for w, _, _ in _words(name)], hay) for name in {stored, label})
    return False


# numbers: "£1,204.50", "1 204,50", "1.204,50", "-3", "1204.5", "12k" is not one (a reading)
_NUMBER = re.compile(
    r"(?<![\w.,])[-−]?\s?[£$€¥]?\s?"
    r"(\d{1,3}(?:[,\u00a0\u202f '’]\d{3})+(?:[.,]\d+)?|\d{1,3}(?:\.\d{3})+(?:,\d+)?|\d+(?:[.,]\d+)?)"
    r"(?![\w])"
)


def _numbers(words: str) -> list[Decimal]:
    """Every number written in ``words``, each read every way its separators allow."""
    out: list[Decimal] = []
    for m in _NUMBER.finditer(words):
        body = m.group(1)
        negative = m.group(0).lstrip()[:1] in ("-", "−")
        readings = set()
        if re.fullmatch(r"\d{1,3}(?:\.\d{3})+(?:,\d+)?", body):  # 1.204,50: dots group, comma is the point
            readings.add(body.replace(".", "").replace(",", "."))
        plain = re.sub(r"[,\u00a0\u202f \'’](?=\d{3}\b)", "", body)
        if re.fullmatch(r"\d+,\d{1,2}", plain):  # 12,5 or 1204,50: a decimal comma
            readings.add(plain.replace(",", "."))
        elif "," not in plain:
            readings.add(plain)
        if re.search(r"\s", body):  # "between 1 200" may be two numbers
            readings.update(p for p in re.split(r"\s", body) if p.isdigit())
        for text in readings:
            try:
                number = Decimal(text)
            except InvalidOperation:
                continue
            out.append(-number if negative else number)
    return out


def _number_holds(value: Any, words: str) -> bool:
    if type(value) is bool or not isinstance(value, (int, float, Decimal)):
        return False
    try:
        target = Decimal(str(value))
    except InvalidOperation:
        return False
    return any(n == target for n in _numbers(words))


_YES = frozenset(
    "yes yeah yep yup ya yea aye y sure correct right true affirmative ok okay absolutely "
    "definitely certainly indeed".split()
)
_NO = frozenset(
    "no nope nah n not never false negative none dont didnt havent hasnt isnt wasnt arent weren "
    "werent wont doesnt cant cannot nothing".split()
)


def _bool_holds(value: Any, words: str) -> bool:
    if type(value) is not bool:
        return False
    hay = {w for w, _, _ in _words(words)}
    yes, no = bool(hay & _YES), bool(hay & _NO)
    return yes and not no if value else no and not yes


# dates


_MONTHS = {
    name: i
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_WEEKDAYS = {
    name: i
    for i, names in enumerate(
        [
            ("monday", "mon"),
            ("tuesday", "tue", "tues"),
            ("wednesday", "wed"),
            ("thursday", "thu", "thur", "thurs"),
            ("friday", "fri"),
            ("saturday", "sat"),
            ("sunday", "sun"),
        ]
    )
    for name in names
}
_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s*(\d{4}))?"
_DAY_MONTH = re.compile(rf"\b{_DAY}\s*(?:of\s+)?{_MONTH}{_YEAR}\b", re.I)
_MONTH_DAY = re.compile(rf"\b{_MONTH}\s+(?:the\s+)?{_DAY}{_YEAR}\b", re.I)
_ISO = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_NUMERIC = re.compile(r"\b(\d{1,2})[/.](\d{1,2})(?:[/.](\d{2,4}))?\b")
_RELATIVE = re.compile(
    r"\b(today|tonight|tomorrow|yesterday|day after tomorrow|"
    r"(?:next|this|last|on|coming)\s+(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|week)|"
    r"in\s+(\d+|a|one|two|three|four|five|six|seven)\s+(days?|weeks?))\b",
    re.I,
)
_SMALL = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}


def _as_date(value: Any) -> date | None:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value.strip()[:10])
        except ValueError:
            return None
    return None


def _make(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _written_dates(words: str, year: int | None) -> list[date]:
    """The dates written out in ``words``. A date with no year takes the message's year or the
    year either side (a date in January said in December is next year's)."""
    found: list[date | None] = []
    years = [year - 1, year, year + 1] if year else []

    def add(y: str | None, m: int, d: int) -> None:
        if y:
            found.append(_make(int(y), m, d))
        else:
            found.extend(_make(yy, m, d) for yy in years)

    for m in _ISO.finditer(words):
        found.append(_make(int(m.group(1)), int(m.group(2)), int(m.group(3))))
    for m in _DAY_MONTH.finditer(words):
        add(m.group(3), _MONTHS[m.group(2).lower()], int(m.group(1)))
    for m in _MONTH_DAY.finditer(words):
        add(m.group(3), _MONTHS[m.group(1).lower()], int(m.group(2)))
    for m in _NUMERIC.finditer(words):
        a, b, y = int(m.group(1)), int(m.group(2)), m.group(3)
        if y and len(y) == 2:
            y = str(2000 + int(y))
        # 08/12 is 8 December or 12 August: said only where the two readings agree or one is impossible
        if a == b or a > 12 or b > 12:
            if a > 12 or a == b:
                add(y, b, a)
            if b > 12:
                add(y, a, b)
    return [d for d in found if d is not None]


def _message_day(at: str | date | None) -> date | None:
    if isinstance(at, datetime):
        return at.date()
    if isinstance(at, date):
        return at
    return _as_date(at) if isinstance(at, str) else None


def _relative(words: str, today: date | None) -> str | None:
    """What the first relative word in ``words`` reads as from ``today`` (ISO), or None."""
    m = _RELATIVE.search(words)
    if m is None or today is None:
        return None
    phrase = m.group(1).lower()
    if phrase in ("today", "tonight"):
        return today.isoformat()
    if phrase == "tomorrow":
        return (today + timedelta(days=1)).isoformat()
    if phrase == "yesterday":
        return (today - timedelta(days=1)).isoformat()
    if phrase == "day after tomorrow":
        return (today + timedelta(days=2)).isoformat()
    if m.group(2):
        n = int(m.group(2)) if m.group(2).isdigit() else _SMALL[m.group(2).lower()]
        days = n * (7 if m.group(3).lower().startswith("week") else 1)
        return (today + timedelta(days=days)).isoformat()
    which, _, day_word = phrase.partition(" ")
    day_word = day_word.strip()
    if day_word == "week":
        return (today + timedelta(days=7 if which != "last" else -7)).isoformat()
    target = _WEEKDAYS[day_word]
    ahead = (target - today.weekday()) % 7
    if which == "last":
        return (today - timedelta(days=(today.weekday() - target) % 7 or 7)).isoformat()
    if which == "next":  # the one in next week: "next Tuesday" said on a Monday is eight days on
        return (today + timedelta(days=7 - today.weekday() + target)).isoformat()
    return (today + timedelta(days=ahead)).isoformat()


def _date_holds(value: Any, words: str, at: str | date | None) -> tuple[bool, str | None]:
    target = _as_date(value)
    today = _message_day(at)
    reads_as = _relative(words, today)
    if target is None:
        return False, reads_as
    written = _written_dates(words, today.year if today else target.year)
    if target in written:
        return True, None
    return False, reads_as  # a relative word is always an interpretation, right or wrong


# --------------------------------------------------------------------------- a typed answer


def is_yes(text: str) -> bool:
    """A clear yes and nothing else ("yes", "yeah", "that's right"); "yes, but it is actually
    AB9999", "right, 300" and "the correct one is CD5678" are not (forms/replies.py)."""
    return confirmation(text).kind == "yes"


def is_no(text: str) -> bool:
    """A clear no ("no", "nope", "that's not it", "no, I don't have one"); "no, it's CD5678" is a correction."""
    return confirmation(text).kind == "no"


def answer_value(text: str, annotation: Any, at: str | date | None = None) -> Any:
    """What the person typed, as a value of the field's type (the person's own words, so ``said``),
    or the text itself when it cannot be read as one (the field's validation then says why).

    A date is read as written ("9 December", "2026-12-09", "tomorrow" from the message's date;
    with no year, the year that puts it nearest the message); a number from its digits, currency
    signs and separators; a boolean from yes or no words; a choice from its option or label.
    """
    words = text.strip().strip(_LEADING).rstrip(_TRAILING.replace(")", "").replace("]", "")).strip()
    kind = value_kind(annotation)
    if kind is None or not words:
        return words
    if kind.kind == "bool":
        return True if is_yes(words) else False if is_no(words) else None
    if kind.kind == "number":
        found = sorted(set(_numbers(words)))
        if len(found) != 1:
            return words
        n = found[0]
        return int(n) if n == n.to_integral_value() else float(n)
    if kind.kind == "date":
        today = _message_day(at)
        written = sorted(set(_written_dates(words, today.year if today else None)))
        if today is not None and written:
            return min(written, key=lambda d: abs((d - today).days)).isoformat()
        if written:
            return written[0].isoformat()
        return _relative(words, today) or words
    if kind.kind == "choice":
        hay = [w for w, _, _ in _words(words)]
        for stored, label in kind.labels:
            if any(_joined_in([w for w, _, _ in _words(name)], hay) for name in {stored, label}):
                return stored
        return words
    return words
