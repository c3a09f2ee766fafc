"""Answer parsing: the JSON value a person's words mean for one field's type.

Validation is strict (``"40"`` is not an integer), so the guided model converts here what a
person types (``£1,200``, ``40 miles``, ``yes``, ``Rail``, ``3 Nov 2026``) before it writes.
Words it cannot read raise :class:`UnreadableAnswer` and are answered locally, without a
write: sending text the engine must reject would only add an invalid revision to the log.
Day/month order is never guessed (``03/11/2026`` is 3 November in London, March 11 in New York).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import date
from typing import Any

from formctl.agent.notices import shown_value

# Said for an optional field, these mean "leave it out".
NONE_WORDS = {"none", "n/a", "na", "nothing", "-", "no", "nope", "not applicable", "leave it", "blank"}
# A refusal to give the value asked for: "I'd rather not give a phone number.", "prefer not to
# say", "I don't want to share that", "no thanks". Read only when the line gives nothing else (no
# figure, no address): "I'd rather not give my mobile, but 0113 496 0000 works" gives a number.
_DECLINES = re.compile(
    r"\b(?:(?:i'?d|i would|we'?d) (?:rather|prefer) not|(?:i )?prefer not|rather not"
    r"|(?:i )?(?:don'?t|do not|won'?t|will not) (?:want to |wish to )?(?:give|share|say|tell|provide|disclose)"
    r"|not (?:comfortable|willing|happy) (?:to |giving |sharing )|no,? thanks?\b|no thank you"
    r"|none of your business|decline to)",
    re.IGNORECASE,
)
# Said during a revisit, these mean "keep the answer you have".
SAME_WORDS = {"same", "unchanged", "no change", "keep", "keep it", "still the same", "as before"}
_TRUE = {"yes", "y", "yeah", "yep", "yup", "true", "t", "correct", "affirmative", "sure"}
_FALSE = {"no", "n", "nope", "nah", "false", "f", "negative"}
_MONTHS = {
    "jan": 1,
    "january": 1,
    "feb": 2,
    "february": 2,
    "mar": 3,
    "march": 3,
    "apr": 4,
    "april": 4,
    "may": 5,
    "jun": 6,
    "june": 6,
    "jul": 7,
    "july": 7,
    "aug": 8,
    "august": 8,
    "sep": 9,
    "sept": 9,
    "september": 9,
    "oct": 10,
    "october": 10,
    "nov": 11,
    "november": 11,
    "dec": 12,
    "december": 12,
}
# A number not glued to letters or digits on its left ("AB1234" is not 1234), with
# thousands separators allowed ("1,200") and a unit or currency around it ("£900", "40 miles").
_NUMBER = re.compile(r"(?<![A-Za-z0-9.,])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\d])")
# A number with a multiplier after it: "1.2k", "0.5K", "2m", "3bn", "1.5 thousand", "2 grand".
_SCALED = re.compile(r"\d(?:\s?k|m|mn|bn|b|\s+(?:thousand|million|billion|grand))(?![a-z])", re.IGNORECASE)
_ISO_DATE = re.compile(r"^(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})$")
_DAY_MONTH_YEAR = re.compile(r"^(\d{1,2})(?:st|nd|rd|th)?(?:\s+of)?\s+([a-z]+)\.?,?\s+(\d{4})$")
_MONTH_DAY_YEAR = re.compile(r"^([a-z]+)\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})$")
_NUMERIC_DATE = re.compile(r"^(\d{1,2})[/.-](\d{1,2})[/.-](\d{2,4})$")


@dataclass(frozen=True, slots=True)
class Kind:
    """What a field's schema wants, read once from its JSON schema."""

    name: str  # integer | number | boolean | date | datetime | email | text | choice | json
    options: tuple[Any, ...] = ()
    pattern: str | None = None  # text that must match this (a Staff ID's ^[A-Z]{2}\d{4}$)


class UnreadableAnswer(ValueError):
    """The person's words could not be turned into the field's type; the message says what is needed."""


def kind_of(schema: Any) -> Kind:
    from formctl.forms.validate import adapter_for

    try:
        node = adapter_for(schema).json_schema(mode="validation")
    except Exception:
        return Kind("text")
    defs = node.get("$defs", {}) if isinstance(node, dict) else {}
    return _kind_of_node(node, defs)


def _kind_of_node(node: Any, defs: dict[str, Any]) -> Kind:
    if not isinstance(node, dict):
        return Kind("json")
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _kind_of_node(defs.get(ref[len("#/$defs/") :], {}), defs)
    for key in ("anyOf", "oneOf"):
        branches = node.get(key)
        if isinstance(branches, list):
            rest = [b for b in branches if not (isinstance(b, dict) and b.get("type") == "null")]
            if len(rest) == 1:
                return _kind_of_node(rest[0], defs)
            return Kind("json")
    if "enum" in node:
        return Kind("choice", tuple(v for v in node["enum"] if v is not None))
    if "const" in node:
        return Kind("choice", (node["const"],))
    kind = node.get("type")
    if kind == "integer":
        return Kind("integer")
    if kind == "number":
        return Kind("number")
    if kind == "boolean":
        return Kind("boolean")
    if kind == "string":
        fmt = node.get("format")
        if fmt == "date":
            return Kind("date")
        if fmt == "date-time":
            return Kind("datetime")
        if fmt == "email":
            return Kind("email")
        pattern = node.get("pattern")
        return Kind("text", pattern=pattern if isinstance(pattern, str) else None)
    return Kind("json")


def declines(text: str) -> bool:
    """Do these words refuse to give the value asked for (and give nothing else)?"""
    text = text.replace("\u2019", "'")
    return _DECLINES.search(text) is not None and not any(ch.isdigit() for ch in text) and "@" not in text


def or_list(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " or " + items[-1]


def _parse_number(text: str, integer: bool) -> int | float:
    if _SCALED.search(text):
        # "1.2k", "2m", "1.5 thousand": not read as 1.2, nor multiplied out (a reading of the
        # person's words, not their words): refused, as "twelve hundred" is.
        raise UnreadableAnswer("please write the amount in full, in figures, like 1,200.")
    found = _NUMBER.findall(text)
    if len(found) != 1:
        whole = " (a whole number)" if integer else ""
        raise UnreadableAnswer(f"I need a single number{whole}, like 40 or 1,200.")
    raw = found[0].replace(",", "")
    if len(raw) > 300:  # longer than any real answer, and past what int() and JSON will take
        raise UnreadableAnswer("That number is far too long; I need the number itself, like 40 or 1,200.")
    if "." in raw:
        value = float(raw)
        # A whole number written "40.0" is still a whole number; "40.5" is sent as it is,
        # and the engine's rejection says why it doesn't fit.
        return int(value) if integer and value.is_integer() else value
    return int(raw)


def _parse_date(text: str) -> str:
    t = " ".join(text.lower().replace(",", " ").split())
    if t in ("today", "tomorrow", "yesterday", "now"):
        # The model reads no clock, so the same words always mean the same date.
        raise UnreadableAnswer("Please give the date itself, like 2026-11-03 or 3 Nov 2026.")
    for pattern, order in ((_ISO_DATE, "ymd"), (_DAY_MONTH_YEAR, "dmy"), (_MONTH_DAY_YEAR, "mdy")):
        m = pattern.match(t)
        if not m:
            continue
        parts = dict(zip(order, m.groups()))
        month = parts["m"]
        month_number = int(month) if month.isdigit() else _MONTHS.get(month)
        if month_number is None:
            break
        try:
            return date(int(parts["y"]), month_number, int(parts["d"])).isoformat()
        except ValueError:
            raise UnreadableAnswer(f'"{text}" is not a real date.') from None
    if _NUMERIC_DATE.match(t):
        raise UnreadableAnswer(
            f'I can\'t tell whether "{text}" is day/month or month/day: please write it like 2026-11-03 or 3 Nov 2026.'
        )
    raise UnreadableAnswer("I need a date, like 2026-11-03 or 3 Nov 2026.")


def _parse_choice(text: str, options: tuple[Any, ...]) -> Any:
    shown = [str(o) for o in options]
    wanted = text.strip().lower()
    exact = [o for o, s in zip(options, shown) if s.lower() == wanted]
    if exact:
        return exact[0]
    prefixed = [o for o, s in zip(options, shown) if wanted and s.lower().startswith(wanted)]
    if len(prefixed) == 1:
        return prefixed[0]
    # "by car", "rail, I think": exactly one option named as a word.
    words = set(re.findall(r"[a-z0-9]+", wanted))
    named = [o for o, s in zip(options, shown) if s.lower() in words]
    if len(named) == 1:
        return named[0]
    raise UnreadableAnswer(f"I need one of: {or_list(shown)}.")


def _parse_boolean(text: str) -> bool:
    words = re.findall(r"[a-z]+", text.lower())
    if words and words[0] in _TRUE:
        return True
    if words and words[0] in _FALSE:
        return False
    raise UnreadableAnswer("I need a yes or a no.")


def _strip_quotes(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'`":
        return text[1:-1].strip()
    return text


def convert_answer(schema: Any, text: str) -> Any:
    """The JSON value a person's words mean for a field with this schema (annotation).

    ``convert_answer(Annotated[int, Field(ge=1)] | None, "40 miles") == 40``. Raises
    :class:`UnreadableAnswer` when the words can't be read as the type; constraints (a
    pattern, a minimum) are left to the engine, which says why a value doesn't fit.
    """
    return convert(kind_of(schema), text)


def convert(kind: Kind, text: str) -> Any:
    text = _strip_quotes(text)
    if kind.name == "integer":
        return _parse_number(text, integer=True)
    if kind.name == "number":
        return _parse_number(text, integer=False)
    if kind.name == "boolean":
        return _parse_boolean(text)
    if kind.name == "choice":
        return _parse_choice(text, kind.options)
    if kind.name == "date":
        return _parse_date(text)
    if kind.name == "email":
        cleaned = text.strip("<>").strip()
        return cleaned[len("mailto:") :] if cleaned.lower().startswith("mailto:") else cleaned
    if kind.name == "json":
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


format_value = shown_value  # the same words as the chat's notices use for a value


def jsonable(value: Any) -> Any:
    from formctl.forms.validate import to_jsonable

    return to_jsonable(value)
