"""Plain words for a rejected value: each validation issue as a sentence a person can act on.

The validator reports pydantic's structured error (its ``type`` and ``ctx``, kept on each
:class:`~formctl.forms.validate.Issue`); this module turns one into a sentence built from
the field's own words: its label, its hint and the examples it gives ("A Staff ID is two
capital letters and four digits, like AB1234."), else from the constraint itself ("Staff ID
should be at most 15 characters."). It never shows a regular expression, a pydantic phrase
or an exception's text, and it never parses pydantic's message: only the error's type and
context are read. Pure functions; see docs/engine.md, 'Validation'.

Each sentence comes with a short ``code`` (``pattern``, ``too_long``, ``range``, ``email``,
``choice``, ``date``, …) so a model, a test or a host can tell the kinds apart without
reading the words.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, NamedTuple

from formctl.forms.describe import field_schema, pattern_example
from formctl.forms.validate import shape_hint

__all__ = ["Plain", "field_error", "pattern_words", "plain", "rejection", "said_by"]


class Plain(NamedTuple):
    """A rejection in words: the ``sentence`` a person reads and the ``code`` of its kind."""

    sentence: str
    code: str


# Our own issues (validate.py and staging) already speak plainly; they keep their words.
_OWN_KINDS = {
    "too_long": "too_long",
    "too_large": "too_large",
    "too_deep": "too_deep",
    "invalid_text": "invalid_text",
    "not_json": "not_json",
}

_NUMBERS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")

# First words that start a sentence or an instruction rather than a noun phrase: a hint
# beginning so cannot follow "A Staff ID is …" (it is said after "That isn't …" instead).
_NOT_A_PHRASE = frozenset(
    "the their your his her its our my it this that these those please enter give use type write "
    "send must should can may if as when only leave say we you i no not do don't include make pick "
    "choose for e.g. eg see ask copy check find".split()
)


_DETERMINERS = frozenset({"a", "an", "the", "your", "their", "our", "my", "his", "her", "its"})


def plain(field: Any, issue: Any) -> Plain:
    """The sentence (and code) for one validation ``issue`` of ``field``'s value."""
    kind = issue.kind
    ctx = issue.ctx or {}
    where = _where(issue.path)
    subject = f"{field.label}{where}"
    if kind in _OWN_KINDS and issue.ctx is None:
        return Plain(issue.message, _OWN_KINDS[kind])
    if kind == "string_pattern_mismatch":
        return Plain(_pattern_sentence(field, str(ctx.get("pattern", "")), where), "pattern")
    sized = _size_sentence(field, subject, kind, ctx)
    if sized is not None:
        return sized
    for matches, sentence, code in _SHAPES:
        if matches(kind):
            return Plain(sentence.format(subject=subject), code)
    return _other_sentence(field, issue, subject, where)


def _size_sentence(field: Any, subject: str, kind: str, ctx: dict[str, Any]) -> Plain | None:
    """A length, a count of items or a numeric range the value is outside; None for any other issue."""
    if kind == "string_too_short":
        n = ctx.get("min_length")
        if n == 1:
            return Plain(f"{subject} can't be empty.", "too_short")
        return Plain(_or_said(field, f"{subject} should be at least {_count(n, 'character')}.", n), "too_short")
    if kind == "string_too_long":
        n = ctx.get("max_length")
        return Plain(_or_said(field, f"{subject} should be at most {_count(n, 'character')}.", n), "too_long")
    if kind == "too_short":
        n = ctx.get("min_length")
        return Plain(f"{subject} needs at least {_count(n, 'item')}.", "too_short")
    if kind == "too_long":  # a list's (ours, with no context, is handled above)
        n = ctx.get("max_length")
        return Plain(f"{subject} can have at most {_count(n, 'item')}.", "too_long")
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        return Plain(_range_sentence(field, subject, kind, ctx), "range")
    if kind == "multiple_of":
        return Plain(f"{subject} should be a multiple of {_num(ctx.get('multiple_of'))}.", "range")
    if kind.startswith("date_") and "datetime" not in kind:
        return Plain(_date_sentence(subject, kind), "date")
    return None


# Issues said by the value's shape alone: (which kinds, the sentence, the code), tried in order.
_SHAPES: tuple[tuple[Callable[[str], bool], str, str], ...] = (
    (
        lambda k: k in ("int_type", "int_parsing", "int_from_float", "int_parsing_size"),
        "{subject} should be a whole number, like 40.",
        "number",
    ),
    (
        lambda k: k.startswith(("float_", "decimal_")) or k == "finite_number",
        "{subject} should be a number, like 12.50.",
        "number",
    ),
    (lambda k: k in ("bool_type", "bool_parsing"), "{subject} should be yes or no.", "boolean"),
    (
        lambda k: k.startswith("datetime_"),
        "{subject} should be a date and time, like 2026-11-03 14:30.",
        "datetime",
    ),
    (lambda k: k.startswith("time_"), "{subject} should be a time of day, like 14:30.", "time"),
    (lambda k: k.startswith("url_"), "{subject} should be a web address, like https://example.com.", "url"),
    (
        lambda k: k.startswith("uuid_"),
        "{subject} should be a UUID, like 123e4567-e89b-12d3-a456-426614174000.",
        "uuid",
    ),
    (lambda k: k.startswith("ip_"), "{subject} should be an IP address, like 192.0.2.1.", "ip"),
)


def _other_sentence(field: Any, issue: Any, subject: str, where: str) -> Plain:
    """A choice, an email, the author's own validator, text, a missing or extra part, or the type."""
    kind, ctx, label = issue.kind, issue.ctx or {}, field.label
    if kind in ("literal_error", "enum"):
        options = [] if where else _choices(field)
        if options:
            return Plain(f"{subject} should be {_or(options)}.", "choice")
        expected = ctx.get("expected")
        if isinstance(expected, str) and expected:  # inside a structure: pydantic's own list of the choices
            return Plain(f"{subject} should be {expected.replace(chr(39), '')}.", "choice")
        return Plain(f"{subject} should be {_type_words(field)}.", "choice")
    if kind == "value_error" and (_format(field) == "email" or ("reason" in ctx and "error" not in ctx)):
        # EmailStr's error carries a "reason" (a custom validator's carries its "error"):
        # an email inside a list or a model is said as one at the top is.
        return Plain(f"{subject} should be an email address, like name@example.com.", "email")
    if kind in ("value_error", "assertion_error"):
        # A custom validator's own message: the form's author wrote it for the person.
        text = _sentence(issue.message)
        return Plain(text[:1].upper() + text[1:], "invalid")
    if kind == "string_type":
        return Plain(f"{subject} should be text.", "type")
    if kind == "missing":
        return Plain(f"{label} needs {_where_name(issue.path)}.", "missing")
    if kind == "extra_forbidden":
        return Plain(f"{label} has nothing called {_where_name(issue.path)}.", "extra")
    return Plain(f"{subject} should be {_type_words(field)}.", "type")


def rejection(field: Any, issue: Any, raw: Any) -> tuple[str, str | None, str]:
    """A fill result's ``rejected`` row for one issue: the sentence, the hint, the code.

    The hint is only what the sentence does not say: how to resend a value sent in the wrong
    JSON shape (a quoted number). The field's description is not repeated as a hint, so a
    rejection says each thing once.
    """
    sentence, code = plain(field, issue)
    return sentence, shape_hint(issue, raw), code


def field_error(field: Any, outcome: Any) -> str | None:
    """What a view says about an invalid answer: the issues' sentences, joined."""
    if not outcome.issues:
        return None
    sentences: list[str] = []
    for issue in outcome.issues:
        sentence = plain(field, issue).sentence
        if sentence not in sentences:
            sentences.append(sentence)
    return " ".join(sentences)


def said_by(sentence: str, text: str | None) -> bool:
    """Whether ``text`` (a hint, an ask) is already said in ``sentence``: then it is not said again."""
    if not text:
        return False
    core = text.strip().rstrip(".?!").strip()
    return bool(core) and core.lower() in sentence.lower()


# --------------------------------------------------------------------------- patterns


def _pattern_sentence(field: Any, pattern: str, where: str) -> str:
    label = field.label
    hint = (field.hint or "").strip()
    if hint and not where:
        if _is_phrase(hint):
            if label.split(maxsplit=1)[0].lower() in _DETERMINERS:  # "Your staff ID is …", not "A Your …"
                return f"{label[:1].upper()}{label[1:]} is {_lower_first(_sentence(hint))}"
            return f"{_article(label)} {label} is {_lower_first(_sentence(hint))}"
        return f"That isn't {_article(label).lower()} {label}. {_sentence(hint)}"
    example = pattern_example(field.schema, " ".join(t for t in (field.ask, field.hint) if t))
    words = pattern_words(pattern)
    subject = f"{label}{where}"
    if words and example:
        return f"{subject} should be {words}, like {example}."
    if example:
        return f"{subject} should look like {example}."
    if words:
        return f"{subject} should be {words}."
    return f"That isn't in the form {subject} takes."


_ATOMS = {
    r"[A-Z]": ("capital letter", "capital letters"),
    r"[a-z]": ("small letter", "small letters"),
    r"[A-Za-z]": ("letter", "letters"),
    r"[a-zA-Z]": ("letter", "letters"),
    r"\d": ("digit", "digits"),
    r"[0-9]": ("digit", "digits"),
    r"[A-Z0-9]": ("capital letter or digit", "capital letters or digits"),
    r"[A-Za-z0-9]": ("letter or digit", "letters or digits"),
    r"[a-zA-Z0-9]": ("letter or digit", "letters or digits"),
}
_TOKEN = re.compile(
    r"(\[A-Z\]|\[a-z\]|\[A-Za-z\]|\[a-zA-Z\]|\\d|\[0-9\]|\[A-Z0-9\]|\[A-Za-z0-9\]|\[a-zA-Z0-9\]"
    r"|\\[-./:_ ]|[-/:_ ]|[A-Za-z0-9])"
    r"(\{\d+\}|\{\d+,\d*\}|\+|\?)?"
)
_LITERALS = {"-": "a hyphen", "/": "a slash", ".": "a full stop", ":": "a colon", "_": "an underscore", " ": "a space"}


def pattern_words(pattern: str) -> str | None:
    """A simple anchored pattern in words (``^[A-Z]{2}\\d{4}$`` → ``two capital letters and four
    digits``), or None when it is not one of the simple shapes this knows how to say."""
    if not (pattern.startswith("^") and pattern.endswith("$")) or pattern.endswith("\\$"):
        return None
    body, parts, pos = pattern[1:-1], [], 0
    while pos < len(body):
        m = _TOKEN.match(body, pos)
        if m is None:
            return None
        atom, quantifier = m.group(1), m.group(2) or ""
        pos = m.end()
        literal = atom.lstrip("\\")
        if atom not in _ATOMS and (literal in _LITERALS or literal.isalnum()):
            if quantifier:
                return None
            kind = "the digit" if literal.isdigit() else "the letter"
            parts.append(_LITERALS.get(literal) or f"{kind} {literal}")
            continue
        one, many = _ATOMS[atom]
        if not quantifier:
            parts.append(f"one {one}")
        elif quantifier == "+":
            parts.append(f"one or more {many}")
        elif quantifier == "?":
            parts.append(f"an optional {one}")
        else:
            low, _, high = quantifier[1:-1].partition(",")
            if "," not in quantifier:
                parts.append(f"{_word(int(low))} {one if int(low) == 1 else many}")
            elif not high:
                parts.append(f"at least {_word(int(low))} {many}")
            else:
                parts.append(f"{_word(int(low))} to {_word(int(high))} {many}")
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


# --------------------------------------------------------------------------- numbers and dates


def _range_sentence(field: Any, subject: str, kind: str, ctx: dict[str, Any]) -> str:
    schema = field_schema(field.schema)
    low = _first(schema, "minimum", "exclusiveMinimum")
    high = _first(schema, "maximum", "exclusiveMaximum")
    if low is not None and high is not None and "exclusiveMinimum" not in schema and "exclusiveMaximum" not in schema:
        return _or_said(field, f"{subject} should be between {_num(low)} and {_num(high)}.", low, high)
    if kind == "greater_than_equal":
        value = ctx.get("ge")
        if value == 0:
            return f"{subject} can't be negative."
        return _or_said(field, f"{subject} should be {_num(value)} or more.", value)
    if kind == "greater_than":
        value = ctx.get("gt")
        if value == 0:
            return f"{subject} should be more than 0."
        return _or_said(field, f"{subject} should be more than {_num(value)}.", value)
    if kind == "less_than_equal":
        value = ctx.get("le")
        return _or_said(field, f"{subject} should be {_num(value)} or less.", value)
    value = ctx.get("lt")
    return _or_said(field, f"{subject} should be less than {_num(value)}.", value)


def _date_sentence(subject: str, kind: str) -> str:
    if kind == "date_past":
        return f"{subject} should be a date in the past."
    if kind == "date_future":
        return f"{subject} should be a date in the future."
    if kind.startswith("date_from_datetime"):
        return f"{subject} should be a date without a time, like 2026-11-03."
    return f"{subject} should be a real date, written like 2026-11-03."


# --------------------------------------------------------------------------- helpers


def _or_said(field: Any, built: str, *numbers: Any) -> str:
    """The field's own hint when it already states the limit (it names each number), else ``built``."""
    hint = (field.hint or "").strip()
    if hint and numbers and all(n is not None and _num(n) in hint for n in numbers):
        return _sentence(hint)
    return built


def _choices(field: Any) -> list[str]:
    schema = field_schema(field.schema)
    if "const" in schema:
        return [_choice(schema["const"])]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return [_choice(v) for v in enum]
    branches = schema.get("anyOf") or schema.get("oneOf") or []
    options: list[str] = []
    for branch in branches:
        if isinstance(branch, dict):
            if "const" in branch:
                options.append(_choice(branch["const"]))
            elif isinstance(branch.get("enum"), list):
                options.extend(_choice(v) for v in branch["enum"])
    return options


def _choice(value: Any) -> str:
    if value is True:
        return "yes"
    if value is False:
        return "no"
    return str(value) if not isinstance(value, float) else _num(value)


def _format(field: Any) -> str | None:
    schema = field_schema(field.schema)
    fmt = schema.get("format")
    return fmt if isinstance(fmt, str) else None


def _type_words(field: Any) -> str:
    """The field's type string as the model reads it (our own words, never pydantic's)."""
    text = field.type
    return "a value of the right kind" if text == "value" else text


def _first(schema: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if isinstance(schema.get(key), (int, float)) and not isinstance(schema.get(key), bool):
            return schema[key]
    return None


def _where(path: tuple[Any, ...]) -> str:
    """Where in a structured value the issue is, as words: `` (item 2, name)``; empty at the top."""
    if not path:
        return ""
    words = [f"item {p + 1}" if isinstance(p, int) else str(p).replace("_", " ") for p in path]
    return " (" + ", ".join(words) + ")"


def _where_name(path: tuple[Any, ...]) -> str:
    if not path:
        return "a value"
    last = path[-1]
    return f"item {last + 1}" if isinstance(last, int) else f'"{str(last).replace("_", " ")}"'


def _is_phrase(hint: str) -> bool:
    first = hint.split(maxsplit=1)[0].lower().strip(",:;") if hint.split() else ""
    return not hint.rstrip().endswith("?") and first not in _NOT_A_PHRASE


def _article(label: str) -> str:
    return "An" if label[:1].lower() in "aeiou" else "A"


def _lower_first(text: str) -> str:
    # "Two capital letters" → "two capital letters", but "AB1234 style" and "ISO dates" stay.
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "?", "!")) else text + "."


def _or(options: list[str]) -> str:
    return options[0] if len(options) == 1 else ", ".join(options[:-1]) + " or " + options[-1]


def _word(n: int) -> str:
    return _NUMBERS[n] if 0 <= n < len(_NUMBERS) else str(n)


def _count(n: Any, noun: str) -> str:
    return f"{_num(n)} {noun}" + ("" if n == 1 else "s")


def _num(value: Any) -> str:
    """A number as a person writes it: ``1``, not ``1.0``; ``1,000`` for big whole numbers."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}" if abs(value) >= 10_000 else str(value)
    return str(value)
