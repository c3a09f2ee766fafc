"""The value readers: what a person's words mean for one field's type, and the values of a
known shape found inside a sentence.

How to call them::

    from formctl.agent.models.guided.values import ReadingContext, read_value, find_by_shape, yes_no

    ctx = ReadingContext(locale="en-GB", previous_date=date(2026, 3, 19))
    reading = read_value(kind, "the next day, 20 March", ctx)
    reading.value    # "2026-03-20"               (the JSON value to write; None: "there is none")
    reading.span     # (0, 12)                    (where in the line it was read)
    reading.said_as  # "Friday 20 March 2026"     (how to say it back)
    reading.note     # 'I read "the next day" as Friday 20 March 2026.'  (how, when worth saying)
    reading.rest     # ()                         (what else the line said: say it back, never drop it)

- ``kind`` is the field's :class:`Kind` (``field_kind(compiled_field)``: its schema, a phone
  number when its label says so, its author's ``aliases`` for a choice).
- :func:`read_value` raises :class:`UnreadableAnswer` (its message says what is needed: "I need
  one of: car, rail or air.") when the words cannot be read as the type; nothing is guessed.
  ``Reading.value is None`` (``reading.none``) when the words say there is none ("nothing",
  "nope, no hotel", "I stayed with friends, so nothing") for a number: left out when optional.
- :func:`find_by_shape` finds values whose shape says which field they belong to (an email
  address, a phone number, a pattern such as a Staff ID or a ticket reference, a date, an
  amount with a currency sign) inside a sentence: ``[(field_id, Reading), ...]`` in the order
  they were written, only where exactly one of the fields given fits (the asked one first).
- :func:`yes_no` reads the yes or no a line opens with and returns the rest:
  ``yes_no("No, this is my first time") == (False, "this is my first time")``.
- :func:`~formctl.forms.replies.confirmation` reads the answer to "Is that right?".

Readers are pure functions (no I/O, no clock). The libraries behind them (dateparser,
price-parser, number-parser, phonenumbers, rapidfuzz) are imported on first use, so importing
formctl does not load them. Every pattern applied to the person's words is bounded (no nested
repetition); ``benchmarks/guided.py`` measures them.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace

from formctl.agent.models.guided.values.context import ReadingContext, locale_from_env, normalise_locale
from formctl.agent.models.guided.values.kinds import Kind, UnreadableAnswer, field_kind, kind_of
from formctl.agent.models.guided.values.reading import Reading, around, telling
from formctl.agent.models.guided.values.shapes import find_by_shape
from formctl.forms.replies import Confirmation, confirmation, yes_no
from formctl.json_types import JsonValue

__all__ = [
    "Confirmation",
    "Kind",
    "Reading",
    "ReadingContext",
    "UnreadableAnswer",
    "confirmation",
    "field_kind",
    "find_by_shape",
    "kind_of",
    "locale_from_env",
    "normalise_locale",
    "read_value",
    "yes_no",
]

_TRUE = frozenset({"t", "true", "affirmative"})
_FALSE = frozenset({"f", "false"})


def read_value(kind: Kind, text: str, ctx: ReadingContext | None = None) -> Reading:
    """What ``text`` means for a field of ``kind`` (see the module's docstring)."""
    reading = _read(kind, text, ctx or ReadingContext())
    # what is left beside the value is said back when it says something of its own ("for the
    # supplier audit", "to Glasgow"), not when it only goes with the answer ("got back", "sent me")
    return replace(reading, rest=telling(reading.rest)) if reading.rest else reading


def _read(kind: Kind, text: str, ctx: ReadingContext) -> Reading:
    text = _strip_quotes(text)
    whole = (0, len(text))
    if kind.name in ("integer", "number"):
        from formctl.agent.models.guided.values.numbers import read_number

        return read_number(text, ctx, integer=kind.name == "integer")
    if kind.name == "boolean":
        return _read_boolean(text)
    if kind.name == "choice":
        from formctl.agent.models.guided.values.choices import read_choice

        return read_choice(kind, text, ctx)
    if kind.name == "date":
        from formctl.agent.models.guided.values.dates import read_date

        return read_date(text, ctx)
    if kind.name == "phone":
        from formctl.agent.models.guided.values.phones import read_phone

        return read_phone(text, ctx)
    if kind.name == "email":
        return _read_email(text)
    if kind.name == "reference":
        from formctl.agent.models.guided.values.shapes import read_reference

        return read_reference(text)
    if kind.name == "json":
        try:
            return Reading(json.loads(text), whole, text)
        except ValueError:
            return Reading(text, whole, text)
    if kind.pattern:
        from formctl.agent.models.guided.values.shapes import fit_pattern

        fitted = fit_pattern(text, kind.pattern)
        if fitted is not None:
            return Reading(fitted, whole, fitted)
    return Reading(text, whole, text)


# Words that say nothing changed: a no to "Have their details changed?", though they say "changed".
_NO_CHANGE = re.compile(
    r"^\W*(?:nothing(?:'s|\s+has|\s+is)?\s+(?:changed|different|new)|no\s+changes?|not\s+changed"
    r"|(?:it\s+|they\s+)?(?:has|have|had)\s*n[o']?t\s+changed|(?:it's\s+|they're\s+)?still\s+the\s+same"
    r"|(?:the\s+)?same\s+as\s+(?:before|last\s+time|ever)|all\s+the\s+same|unchanged)\W*$",
    re.IGNORECASE,
)


def _read_boolean(text: str) -> Reading:
    answer, rest = yes_no(text)
    if answer is None:
        word = text.strip().strip(".!").lower()
        answer = True if word in _TRUE else False if word in _FALSE else None
        answer = False if answer is None and _NO_CHANGE.match(text) else answer
        rest = ""
    if answer is None:
        raise UnreadableAnswer("I need a yes or a no.")
    return Reading(answer, (0, len(text) - len(rest)), "yes" if answer else "no", around(rest, []))


# An address said aloud: "dana at example dot org", "dana dot reeve (at) example (dot) co (dot) uk".
_SAID_AT = re.compile(r"\s+[(\[]?at[)\]]?\s+", re.IGNORECASE)
_SAID_DOT = re.compile(r"\s+[(\[]?dot[)\]]?\s+", re.IGNORECASE)


def _read_email(text: str) -> Reading:
    from formctl.agent.models.guided.values.shapes import find_emails

    found = find_emails(text)
    if len(found) == 1:
        return found[0]
    if not found and len(_SAID_AT.findall(text)) == 1 and _SAID_DOT.search(text):
        written = _SAID_DOT.sub(".", _SAID_AT.sub("@", text.strip()))
        aloud = find_emails(written)
        if len(aloud) == 1:
            address = aloud[0].value
            return Reading(address, (0, len(text)), address, note=f'I read "{text.strip()}" as {address}.')
    cleaned = text.strip("<>").strip()
    cleaned = cleaned[len("mailto:") :] if cleaned.lower().startswith("mailto:") else cleaned
    return Reading(cleaned, (0, len(text)), cleaned)  # the engine says why it is not an address


def _strip_quotes(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'`":
        return text[1:-1].strip()
    return text


def convert(kind: Kind, text: str, ctx: ReadingContext | None = None) -> JsonValue:
    """``read_value(kind, text, ctx).value``: the JSON value alone."""
    return read_value(kind, text, ctx).value
