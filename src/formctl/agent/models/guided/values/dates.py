"""Dates in a person's words: "Monday 6 April 2026", "3rd of November", "2026-11-03",
"the next day", "same day", "the 11th".

Each date-like phrase is found with one bounded pattern and read with ``dateparser``, which
knows the calendar (a 31 February is refused) and the day/month order of the locale: a numeric
``03/11/2026`` is read only when the locale says which order it is in, never guessed. A date
with no year, or only a day ("the 11th"), or a relative one ("the next day", "same day", "two
days later") is read from the date just given (``ReadingContext.previous_date``) and said back
as the date it makes. A weekday that does not match its date is asked about. "today" or
"tomorrow" are refused: the model reads no clock, so the same words always mean the same date.
"""

from __future__ import annotations

import functools
import re
from datetime import date, datetime, timedelta

from formctl.agent.models.guided.values.context import ReadingContext
from formctl.agent.models.guided.values.kinds import UnreadableAnswer
from formctl.agent.models.guided.values.reading import Reading, around

_MONTH_NAMES = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec"
)
_WEEKDAY_NAMES = "monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tues|tue|wed|thurs|thur|thu|fri|sat|sun"
_WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_NUMBERS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
# One pattern for every date-like phrase; no repetition is nested, so it reads in linear time.
_DATE = re.compile(
    rf"(?:(?P<wd>{_WEEKDAY_NAMES})\.?,?\s+(?:the\s+)?)?(?:"
    rf"(?:the\s+)?(?P<dm>{_DAY}\s+(?:of\s+)?(?:{_MONTH_NAMES})\.?(?:,?\s+\d{{4}})?)"
    rf"|(?P<md>(?:{_MONTH_NAMES})\.?\s+(?:the\s+)?{_DAY}(?:,?\s+\d{{4}})?)"
    r"|(?P<iso>\d{4}-\d{1,2}-\d{1,2})"
    r"|(?P<num>\d{1,2}[/.]\d{1,2}[/.]\d{2,4})"
    r"|(?P<rel>(?:the\s+)?(?:next|following)\s+(?:day|morning|afternoon|evening|night)|the\s+day\s+after"
    r"|(?:the\s+)?same\s+(?:day|evening|night)|that\s+(?:same\s+)?(?:day|evening|night)"
    r"|(?P<n>a|one|two|three|four|five|six|seven|\d{1,2})\s+(?P<unit>days?|nights?|weeks?)\s+(?:later|after))"
    rf"|(?P<day>(?:the\s+){_DAY}(?![\w/.-]\d))"
    r"|(?:(?:the\s+)?(?:following|next)\s+)?(?P<lone>monday|tuesday|wednesday|thursday|friday|saturday|sunday))(?![\w])",
    re.IGNORECASE,
)
LIMIT = 12  # date phrases read from one line at most
# A day said in words ("the third of November", "November the twenty-first"): read as its figure.
_ORDINAL_WORDS = (
    "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth fourteenth "
    "fifteenth sixteenth seventeenth eighteenth nineteenth twentieth"
).split()
_ORDINALS = {word: n for n, word in enumerate(_ORDINAL_WORDS, 1)} | {"thirtieth": 30}
_ORDINALS |= {  # "twenty-first" … "twenty ninth", "thirty-first", with a space or a hyphen
    f"{tens}{joint}{word}": base + n
    for tens, base, units in (("twenty", 20, 9), ("thirty", 30, 1))
    for n, word in enumerate(_ORDINAL_WORDS[:units], 1)
    for joint in (" ", "-")
}
_SAID_DAY = re.compile(r"\b(?:" + "|".join(sorted(_ORDINALS, key=len, reverse=True)) + r")\b", re.IGNORECASE)
_MONTH_AFTER = re.compile(rf"^\s+(?:of\s+)?(?:{_MONTH_NAMES})\b", re.IGNORECASE)
_MONTH_BEFORE = re.compile(rf"\b(?:{_MONTH_NAMES})\.?\s+(?:the\s+)?$", re.IGNORECASE)
_ALONE = re.compile(r"\bthe\s+$", re.IGNORECASE)
_ENDS = re.compile(r"^\s*(?:[.,!?]|$)")
_RELATIVE_WORD = re.compile(r"day|week|night|morning|afternoon|evening", re.IGNORECASE)
_NOT = re.compile(r"\b(?:not|rather than|instead of)\s*(?:on\s+)?$", re.IGNORECASE)
_CLOCK_WORDS = re.compile(r"^\W*(?:today|tonight|tomorrow|yesterday|now|next week|last week)\W*$", re.IGNORECASE)


def find_dates(text: str, ctx: ReadingContext) -> list[Reading]:
    """Every date ``text`` gives, in order, each read from the one before it (or the context's
    date): "went down on 9 March 2026 and came back on the 11th" gives 9 and 11 March 2026.
    Phrases that cannot be placed (no year known, an ambiguous 03/11/2026) raise UnreadableAnswer;
    a date after "not" ("5 March, not the 4th") is not one given."""
    out: list[Reading] = []
    if not any(ch.isdigit() for ch in text) and _RELATIVE_WORD.search(text) is None:
        return out  # every date phrase has a figure or a "day"/"week"/"night": none here
    for m in _DATE.finditer(text):
        if len(out) >= LIMIT:
            break  # more dates than any answer gives: the first ones decide (and bound the work)
        if _NOT.search(text[max(0, m.start() - 16) : m.start()]):
            continue
        day, note = _read(m, ctx)
        out.append(Reading(day.isoformat(), m.span(), spoken(day), (), note))
        ctx = ctx.after(day)
    return out


def said_in_figures(text: str) -> tuple[str, dict[str, str]]:
    """``text`` with a day said in words written as its figure ("the third of November" is "the 3rd
    of November", "November the twenty-first" "November the 21st", "the fifth." "the 5th."), and
    each figure's words, to quote the person back. An ordinal not beside a month (nor "the ..." on
    its own) is left alone ("my first trip")."""
    said: dict[str, str] = {}

    def figure(m: re.Match[str]) -> str:
        before, after = text[max(0, m.start() - 16) : m.start()], text[m.end() : m.end() + 16]
        if _MONTH_AFTER.match(after) or _MONTH_BEFORE.search(before) or (_ALONE.search(before) and _ENDS.match(after)):
            n = _ORDINALS[" ".join(m.group(0).lower().split())]
            written = f"{n}{'th' if 10 < n % 100 < 14 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"
            said[written] = m.group(0)
            return written
        return m.group(0)

    return (_SAID_DAY.sub(figure, text), said) if len(text) <= 400 else (text, said)


def read_date(text: str, ctx: ReadingContext) -> Reading:
    """The one date ``text`` gives; phrases that agree ("the next day, 20 March") count once. A
    day said in words is read as its figure (:func:`said_in_figures`)."""
    text, said = said_in_figures(text)
    if _CLOCK_WORDS.match(text):
        raise UnreadableAnswer("Please give the date itself, like 2026-11-03 or 3 Nov 2026.")
    found = find_dates(text, ctx)
    if not found:
        raise UnreadableAnswer("I need a date, like 2026-11-03 or 3 Nov 2026.")
    days = {r.value for r in found}
    if len(days) > 1:
        shown = " or ".join(r.said_as for r in found)
        raise UnreadableAnswer(f"I can't tell which date you mean: {shown}?")
    spans = [r.span for r in found]
    notes = [r.note for r in found if r.note]
    for written, words in said.items():  # 'I read "the third of November" as …', in the person's words
        notes = [note.replace(written, words) for note in notes]
    first = found[0]
    return Reading(first.value, first.span, first.said_as, around(text, spans), notes[0] if notes else None)


def spoken(day: date) -> str:
    return f"{day:%A} {day.day} {day:%B %Y}"


def _read_as(words: str, day: date) -> str:
    """How a date read from the one before it is said back: 'I read "the next day" as ...'."""
    return f'I read "{" ".join(words.split())}" as {spoken(day)}.'


def _read(m: re.Match[str], ctx: ReadingContext) -> tuple[date, str | None]:
    words = m.group(0)
    if m.group("rel"):
        day = _relative(m, ctx)
        return day, _read_as(m.group("rel"), day)
    if m.group("lone"):
        day = _weekday_after(m, ctx)
        return day, _read_as(m.group(0), day)
    if m.group("day"):
        day = _day_only(m, ctx)
        return day, _read_as(m.group("day"), day)
    body = m.group("dm") or m.group("md") or m.group("iso") or m.group("num")
    weekday = m.group("wd")
    wanted = _WEEKDAYS.index(weekday[:3].lower()) if weekday else None
    day, guessed_year = _parse(body, ctx, wanted)
    if wanted is not None and wanted != day.weekday():
        raise UnreadableAnswer(f'"{" ".join(words.split())}": {day.day} {day:%B %Y} is a {day:%A}. Which did you mean?')
    return day, (_read_as(body, day) if guessed_year else None)


def _parse(body: str, ctx: ReadingContext, weekday: int | None = None) -> tuple[date, bool]:
    """A written date, read by dateparser. A date written without its year takes the year that
    puts it nearest the date just given, or else the year the form was started in; with a weekday
    ("Monday 9 March"), the nearest year in which it falls on that day."""
    if re.fullmatch(r"\d{1,2}[/.]\d{1,2}[/.]\d{2,4}", body):
        a, b = (int(x) for x in re.split(r"[/.]", body)[:2])
        if ctx.date_order is None and a != b and a <= 12 and b <= 12:
            raise UnreadableAnswer(
                f'I can\'t tell whether "{body}" is day/month or month/day: please write it like 2026-11-03 or 3 Nov 2026.'
            )
    has_year = re.search(r"\d{4}|[/.]\d{2,4}$", body) is not None
    near = ctx.previous_date or ctx.started
    if not has_year and near is None:
        raise UnreadableAnswer(
            f'Which year is "{body}"? Please give the date with its year, like 2026-11-03 or 3 Nov 2026.'
        )
    base = near or date(2000, 1, 1)
    found = _dateparser(body, ctx, base)
    if found is None:
        raise UnreadableAnswer(f'"{body}" is not a real date.')
    if not has_year and (ctx.previous_date is not None or weekday is not None):
        found = _nearest_year(found, base, weekday)
    elif not has_year and _real(found, base.year):
        found = found.replace(year=base.year)
    return found, not has_year


def _real(day: date, year: int) -> bool:
    try:
        day.replace(year=year)
    except ValueError:
        return False  # 29 February
    return True


def _dateparser(body: str, ctx: ReadingContext, base: date) -> date | None:
    # an ISO date is year, month, day whatever the locale (older dateparsers read it by the locale's order)
    order = "YMD" if re.fullmatch(r"\d{4}-\d{1,2}-\d{1,2}", body) else ctx.date_order
    return _parsed(" ".join(body.lower().split()), order, ctx.language, base)


@functools.lru_cache(maxsize=512)
def _parsed(body: str, order: str | None, language: str, base: date) -> date | None:
    """``body`` read by dateparser (each phrase once: a line that repeats one costs nothing more)."""
    import dateparser

    cleaned = re.sub(r"(?<=\d)(?:st|nd|rd|th)\b", "", body, flags=re.IGNORECASE)
    settings: dict[str, object] = {
        "DATE_ORDER": order or "DMY",
        "RELATIVE_BASE": datetime(base.year, base.month, base.day),
        "REQUIRE_PARTS": ["day", "month"],
        "PREFER_DAY_OF_MONTH": "first",
    }
    languages = list(dict.fromkeys([language, "en"]))
    try:
        found = dateparser.parse(cleaned, languages=languages, settings=settings)
    except (ValueError, OverflowError):
        return None
    return found.date() if found is not None else None


def _nearest_year(day: date, base: date, weekday: int | None = None) -> date:
    """``day``'s month and day in the year that puts it nearest ``base`` (December then January);
    with ``weekday``, the nearest of the years around it in which it falls on that day."""
    options = []
    for year in range(base.year - 6, base.year + 7):
        try:
            options.append(day.replace(year=year))
        except ValueError:
            continue
    on_the_day = [d for d in options if weekday is None or d.weekday() == weekday]
    return min(on_the_day or options, key=lambda d: abs((d - base).days)) if options else day


def _relative(m: re.Match[str], ctx: ReadingContext) -> date:
    phrase = " ".join(m.group("rel").lower().split())
    if ctx.previous_date is None:
        raise UnreadableAnswer(
            f'"{phrase}" after which date? Please give the date itself, like 2026-11-03 or 3 Nov 2026.'
        )
    if "same" in phrase or phrase.startswith("that"):
        return ctx.previous_date
    if m.group("unit"):
        count = m.group("n").lower()
        n = int(count) if count.isdigit() else _NUMBERS[count]
        return ctx.previous_date + timedelta(days=n * (7 if m.group("unit").lower().startswith("week") else 1))
    return ctx.previous_date + timedelta(days=1)


def _weekday_after(m: re.Match[str], ctx: ReadingContext) -> date:
    """ "Wednesday", "the following Monday": the first such day after the date just given."""
    name = m.group("lone")
    if ctx.previous_date is None:
        raise UnreadableAnswer(
            f"Which {name.capitalize()}? Please give the date itself, like 2026-11-03 or 3 Nov 2026."
        )
    ahead = (_WEEKDAYS.index(name[:3].lower()) - ctx.previous_date.weekday()) % 7
    return ctx.previous_date + timedelta(days=ahead or 7)


def _day_only(m: re.Match[str], ctx: ReadingContext) -> date:
    """ "the 11th": that day of the month of the date just given, or of the month after."""
    number = int(re.sub(r"\D", "", m.group("day")))
    base = ctx.previous_date
    if base is None:
        raise UnreadableAnswer(
            f'Which month is "{m.group("day")}"? Please give the whole date, like 2026-11-03 or 3 Nov 2026.'
        )
    for months_on in (0, 1):
        month = (base.month - 1 + months_on) % 12 + 1
        year = base.year + (base.month - 1 + months_on) // 12
        try:
            day = date(year, month, number)
        except ValueError:
            continue
        if day >= base:
            return day
    raise UnreadableAnswer(f'"{m.group("day")}" is not a real date after {spoken(base)}.')
