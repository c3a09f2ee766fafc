"""Values whose shape says which field they belong to, found inside a sentence.

"booking ref is QX7RTA" holds a ticket reference (the token that fits the field's pattern),
"sorry, I missed a dot, the email is lina.88@example.org" an email address, "my new mobile is
07700 900555" a phone number, "I came back on 5 March 2026" a date, "£150" an amount. A value
is placed only in a field its shape fits, and only when exactly one of the fields given fits
(the field asked first); what is left of the line is the caller's to say back.
"""

from __future__ import annotations

import re

from formctl.agent.models.guided.values.context import ReadingContext
from formctl.agent.models.guided.values.kinds import Kind, UnreadableAnswer
from formctl.agent.models.guided.values.reading import Reading

_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,8}")
# A token that may be a reference: letters, digits and the joiners references are written with.
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9/_.-]{0,40}[A-Za-z0-9]|[A-Za-z0-9]")
# What a person writes a code's parts apart with: "AB 1234", "AB-1234"; and what ends a line around it.
_CODE_PARTS = re.compile(r"\s*[\s-]\s*")
_EDGE = "\"'()[]<>.,;:!? "
LIMIT = 24  # values of one shape read from one line at most
_CURRENCY = re.compile(r"[£$€]\s?\d")


def find_emails(text: str) -> list[Reading]:
    return [Reading(m.group(0).rstrip("."), m.span(), m.group(0).rstrip(".")) for m in _EMAIL.finditer(text)]


def _pattern_tokens(text: str, pattern: str) -> list[Reading]:
    """The tokens of ``text`` that fit ``pattern`` whole (a Staff ID, a ticket reference). A token
    with a figure in it may be written in the other case ("ab1234" is AB1234); a word of letters
    only counts only as written in capitals, so that "dana" is never a code."""
    try:
        compiled = re.compile(pattern)
    except re.error:
        return []
    out: list[Reading] = []
    for m in _TOKEN.finditer(text):
        if len(out) >= LIMIT:
            break
        token = m.group(0)
        value = token_fitting(token, compiled) if any(ch.isdigit() for ch in token) or token.isupper() else None
        if value is not None:
            out.append(Reading(value, m.span(), value))
    return out


def token_fitting(token: str, pattern: str | re.Pattern[str]) -> str | None:
    """``token`` as ``pattern`` takes it whole, or None: as written, or, when it has a figure in
    it, in the other case ("ab1234" is AB1234). A word of letters only is taken only as written,
    so that a name is never read as a code."""
    try:
        compiled = re.compile(pattern)
    except re.error:
        return None
    if any(ch.isdigit() for ch in token):
        return _in_either_case(token, compiled)
    return token if compiled.fullmatch(token) is not None else None


def fit_pattern(text: str, pattern: str) -> str | None:
    """A whole answer in the form ``pattern`` takes it: as written, in the other case ("ab1234" for
    ``^[A-Z]{2}\\d{4}$`` is AB1234), or, for a code a person wrote in parts at the end of the
    words, without the spaces or dashes between them ("AB 1234", "ab-1234", "my staff id is AB
    1234"); None when none of these fits (the engine then says why)."""
    try:
        compiled = re.compile(pattern)
    except re.error:
        return None
    text = text.strip()
    fitted = _in_either_case(text, compiled)
    if fitted is not None:
        return fitted
    parts = [p for p in _CODE_PARTS.split(text.strip(_EDGE)) if p]
    for size in (3, 2):  # the code at the end of the words, in parts: "my staff id is AB 1234"
        code, before = "".join(parts[-size:]), "".join(parts[:-size])
        if len(parts) >= size and any(ch.isdigit() for ch in code) and not any(ch.isdigit() for ch in before):
            fitted = _in_either_case(code, compiled)
            if fitted is not None:
                return fitted
    return None


def _in_either_case(text: str, compiled: re.Pattern[str]) -> str | None:
    for candidate in (text, text.upper(), text.lower()):
        if compiled.fullmatch(candidate) is not None:
            return candidate
    return None


def find_references(text: str) -> list[Reading]:
    """Tokens written like a reference: letters and digits together ("QX7RTA", "TR-88321"), or
    four or more capitals ("QXRTAB")."""
    out: list[Reading] = []
    for m in _TOKEN.finditer(text):
        if len(out) >= LIMIT:
            break
        token = m.group(0).rstrip(".")
        if "@" in text[max(0, m.start() - 1) : m.end() + 1]:
            continue  # a part of an email address, not a reference
        letters, digits = any(ch.isalpha() for ch in token), any(ch.isdigit() for ch in token)
        if len(token) >= 4 and ((letters and digits) or (token.isupper() and token.isalpha())):
            out.append(Reading(token, (m.start(), m.start() + len(token)), token))
    return out


# Four or more digits, with the capitals written before them ("TR 88321", "88321").
_DIGIT_REFERENCE = re.compile(r"(?<![\w-])(?:[A-Z]{1,4}[ -])?\d{4,}(?![\w-])")
# What leads up to a reference written in parts ("booking ref is TR 88321"): the words up to it.
_REFERENCE_LEAD = re.compile(
    r"^.*?\b(?:is|was|it's|its|ref|reference|number|no\.?|code)\s*[:=-]?\s+(?=\S)", re.IGNORECASE
)


def read_reference(text: str) -> Reading:
    """The one reference ``text`` gives: the token written like one ("booking ref is QX7RTA"
    gives QX7RTA), else four or more digits ("ref 88321", "TR 88321" with its capitals), else a
    short answer with a figure as it is written (after its lead-in); raises UnreadableAnswer when
    there is none, or several."""
    from formctl.agent.models.guided.values.reading import around

    found = (
        find_references(text)
        or [Reading(m.group(0), m.span(), m.group(0)) for m in _DIGIT_REFERENCE.finditer(text)][:LIMIT]
    )
    if len({r.value for r in found}) == 1:
        return Reading(found[0].value, found[0].span, found[0].said_as, around(text, [r.span for r in found]))
    if found:
        raise UnreadableAnswer(f"I can't tell which reference you mean: {' or '.join(r.value for r in found)}?")
    lead = _REFERENCE_LEAD.match(text) if len(text) <= 200 else None
    start = lead.end() if lead else 0
    token = text[start:].strip().strip("\"'.,;:!?()")
    if token and len(token.split()) <= 3 and any(ch.isdigit() for ch in token):
        return Reading(token, (start, len(text)), token)
    raise UnreadableAnswer("I need the reference itself, as it is written on the booking, like TR-20931.")


def _found(kind: Kind, text: str, ctx: ReadingContext) -> list[Reading]:
    """The values of ``kind``'s shape in ``text`` (none for a kind without a telling shape)."""
    if kind.name == "email":
        return find_emails(text)
    if kind.pattern:
        return _pattern_tokens(text, kind.pattern)
    if kind.name == "reference":
        return find_references(text)
    if kind.name == "phone":
        from formctl.agent.models.guided.values.phones import find_phones

        return find_phones(text, ctx)
    if kind.name == "date":
        from formctl.agent.models.guided.values.dates import find_dates

        try:
            return find_dates(text, ctx)
        except UnreadableAnswer:
            return []
    if kind.name in ("number", "integer") and _CURRENCY.search(text):
        from formctl.agent.models.guided.values.numbers import figures

        return [Reading(_json(f.value), f.span, f.text) for f in figures(text, ctx) if f.currency]
    return []


def _json(value: object) -> int | float:
    from decimal import Decimal

    assert isinstance(value, Decimal)
    return int(value) if value == value.to_integral_value() else float(value)


def find_by_shape(
    text: str, kinds: dict[str, Kind], ctx: ReadingContext | None = None, *, asked: str | None = None
) -> list[tuple[str, Reading]]:
    """The values in ``text`` whose shape places them: ``[(field id, Reading), ...]`` in the order
    written. ``kinds``: the open fields (id → kind). A value goes to ``asked`` when it fits it,
    else to the one other field it fits; a value that fits several, or a field two values fit,
    is not placed (the caller asks)."""
    ctx = ctx or ReadingContext()
    by_span: dict[tuple[int, int], list[tuple[str, Reading]]] = {}
    for field_id, kind in kinds.items():
        for reading in _found(kind, text, ctx)[:LIMIT]:
            by_span.setdefault(reading.span, []).append((field_id, reading))
    placed: list[tuple[str, Reading]] = []
    for span in sorted(by_span, key=lambda s: (s[0], -s[1])):  # the longer of two at one place first
        fits = by_span[span]
        if any(_overlaps(span, r.span) for _, r in placed):
            continue
        # a field's own pattern is more telling than the look of a reference
        specific = [f for f in fits if kinds[f[0]].name != "reference"] or fits
        chosen = [f for f in specific if f[0] == asked] or specific
        if len(chosen) == 1:
            placed.append(chosen[0])
    counts: dict[str, int] = {}
    for field_id, _ in placed:
        counts[field_id] = counts.get(field_id, 0) + 1
    return [(f, r) for f, r in placed if counts[f] == 1]


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]
