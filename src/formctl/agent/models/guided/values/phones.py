"""Phone numbers inside a person's sentence: "My mobile is 07700 900982 if that helps".

Found with ``phonenumbers`` (Google's libphonenumber), whose region comes from the locale, so
a number written the national way (07700 900982 in the UK) is known as a number there, and one
with its country code (+44 7700 900555) anywhere. With no locale known, a run of 7 to 15 digits
(spaces, dashes, brackets and a leading + allowed) is taken as written. The number is stored as
the person wrote it; the rest of the sentence is said back.
"""

from __future__ import annotations

import re

from formctl.agent.models.guided.values.context import ReadingContext
from formctl.agent.models.guided.values.kinds import UnreadableAnswer
from formctl.agent.models.guided.values.reading import Reading, around

# A run of digits with the separators phone numbers are written with; bounded, no nesting.
_DIGITS = re.compile(r"(?<![\w+])\+?\(?\d[\d\s().-]{5,22}\d(?![\w])")


def find_phones(text: str, ctx: ReadingContext) -> list[Reading]:
    """Every phone number in ``text``, in order, as written."""
    out = []
    for start, end in _spans(text, ctx):
        raw = text[start:end]
        out.append(Reading(raw, (start, end), raw))
    return out


def _spans(text: str, ctx: ReadingContext) -> list[tuple[int, int]]:
    import phonenumbers

    if len(text) > 2000:  # far longer than a line with a phone number in it: the digit runs only
        return _digit_runs(text)
    region = ctx.region
    if region is None and "+" not in text:
        return _digit_runs(text)
    matcher = phonenumbers.PhoneNumberMatcher(text, region or "ZZ", leniency=phonenumbers.Leniency.POSSIBLE)
    found = [(m.start, m.end) for m in matcher]
    return found or _digit_runs(text)


def _digit_runs(text: str) -> list[tuple[int, int]]:
    out = []
    for m in _DIGITS.finditer(text):
        digits = sum(ch.isdigit() for ch in m.group(0))
        if 7 <= digits <= 15:
            out.append(m.span())
    return out


def read_phone(text: str, ctx: ReadingContext) -> Reading:
    """The one phone number ``text`` gives; raises UnreadableAnswer for none or several."""
    found = find_phones(text, ctx)
    if not found:
        raise UnreadableAnswer("I need a phone number, like 07700 900123.")
    if len({re.sub(r"\D", "", r.value) for r in found}) > 1:
        shown = " or ".join(r.value for r in found)
        raise UnreadableAnswer(f"I can't tell which number you mean: {shown}?")
    first = found[0]
    return Reading(first.value, first.span, first.said_as, around(text, [r.span for r in found]))
