"""Answer parsing: the JSON value a person's words mean for one field's type.

Validation is strict (``"40"`` is not an integer), so the guided model converts what a person
types (``£1,200``, ``12 pounds 40``, ``forty-one``, ``yes``, ``train``, ``Monday 6 April 2026``)
before it writes, with the value readers of :mod:`.values`. Words it cannot read raise
:class:`UnreadableAnswer` and are answered locally, without a write: sending text the engine
must reject would only add an invalid revision to the log. Day/month order is never guessed
(``03/11/2026`` is 3 November in London, March 11 in New York: the locale says which).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from formctl.agent.models.guided.values import (
    Kind,
    ReadingContext,
    UnreadableAnswer,
    convert,
    field_kind,
    kind_of,
)
from formctl.agent.models.guided.values.choices import or_list
from formctl.agent.notices import shown_value
from formctl.json_types import FieldValue, JsonValue

if TYPE_CHECKING:
    from formctl.forms.compile import CompiledForm

__all__ = [
    "NONE_WORDS",
    "SAME_WORDS",
    "Kind",
    "UnreadableAnswer",
    "convert",
    "convert_answer",
    "declines",
    "field_kind",
    "format_value",
    "jsonable",
    "kind_of",
    "or_list",
    "reading_context",
]

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


def declines(text: str) -> bool:
    """Do these words refuse to give the value asked for (and give nothing else)?"""
    text = text.replace("\u2019", "'")
    return _DECLINES.search(text) is not None and not any(ch.isdigit() for ch in text) and "@" not in text


def convert_answer(schema: object, text: str, ctx: ReadingContext | None = None) -> JsonValue:
    """The JSON value a person's words mean for a field with this schema (annotation).

    ``convert_answer(Annotated[int, Field(ge=1)] | None, "40 miles") == 40``. Raises
    :class:`UnreadableAnswer` when the words can't be read as the type; constraints (a
    pattern, a minimum) are left to the engine, which says why a value doesn't fit.
    """
    return convert(kind_of(schema), text, ctx)


def reading_context(
    locale: str | None, compiled: CompiledForm, values: dict[str, FieldValue], field_id: str, started: str | None = None
) -> ReadingContext:
    """The context a field's answer is read in: the locale, the date given just before it (the
    nearest date field before ``field_id`` in the form that has an answer), so "the next day" or
    "same day" at "Return date?" are read from the departure date, and the day the form was
    ``started`` (the instance's ``created_at``), near which a date without its year is placed."""
    from datetime import date

    previous = None
    for field in compiled.fields:
        if field.id == field_id:
            break
        value = values.get(field.id)
        if isinstance(value, date):
            previous = value
        elif isinstance(value, str) and len(value) == 10 and value[4:5] == "-":
            try:
                previous = date.fromisoformat(value)
            except ValueError:
                continue
    try:
        began = date.fromisoformat(started[:10]) if started else None
    except ValueError:
        began = None
    return ReadingContext(locale, previous, began)


format_value = shown_value  # the same words as the chat's notices use for a value


def jsonable(value: FieldValue) -> JsonValue:
    from formctl.forms.validate import to_jsonable

    return to_jsonable(value)
