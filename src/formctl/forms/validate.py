"""Strict per-field validation, and the issue and hint rules (docs/engine.md, 'Validation').

Every staged value is checked on its own against its field's annotation. Validation
is strict and JSON-like: the raw value is encoded as JSON and parsed by pydantic in
strict mode, so a value means what it would mean on the wire. ``"2"`` is not an
integer and ``"yes"`` is not a boolean (the reference's zod does not coerce, and the
tests depend on it), while an ISO date string is a ``date`` and ``3`` is a ``float``,
because that is how JSON spells those values.

Nothing here stores or prints anything: callers turn an ``Outcome`` into an entry's
``error`` (the validator's own words, for the host's record) and, through
:mod:`formctl.forms.messages`, into the plain sentences of a fill result's ``rejected`` rows.
"""

from __future__ import annotations

import functools
import json
from json.encoder import encode_basestring as _encode_str
from typing import Any, NamedTuple

from pydantic import TypeAdapter, ValidationError
from pydantic_core import to_jsonable_python

__all__ = [
    "FieldValidator",
    "Issue",
    "Outcome",
    "MAX_DEPTH",
    "MAX_TEXT",
    "adapter_for",
    "declared_max_length",
    "describe_field",
    "json_data",
    "shape_hint",
    "size_issue",
    "text_issue",
    "to_jsonable",
]

NUMBER_HINT = 'Send it as a JSON number, unquoted — 410, not "410".'
BOOLEAN_HINT = 'Send it as a JSON boolean, unquoted — true or false, not "yes".'

# pydantic error types that mean "a number was expected". In strict JSON mode a
# quoted number is reported as *_type; the *_parsing kinds come from lax paths
# (custom or non-strict sub-schemas) and mean the same thing to the sender.
_NUMBER_KINDS = frozenset({"int_type", "int_parsing", "float_type", "float_parsing"})
_BOOLEAN_KINDS = frozenset({"bool_type", "bool_parsing"})

# pydantic prefixes the message of a ValueError/AssertionError raised in a custom
# validator with these; the person reading the error wrote nothing like them.
_NOISE_PREFIXES = ("Value error, ", "Assertion failed, ")

# Raw values come from tool-call JSON, so they are JSON data already; encoding
# rejects anything that is not (sets, bytes, objects, NaN) rather than inventing
# a representation for it.
_encode_json = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode


# --------------------------------------------------------------------------- adapters


@functools.lru_cache(maxsize=4096)
def _cached_adapter(annotation: Any) -> TypeAdapter[Any]:
    return TypeAdapter(annotation)


def adapter_for(annotation: Any) -> TypeAdapter[Any]:
    """The pydantic ``TypeAdapter`` for an annotation, shared by describe and validate.

    Building an adapter costs about half a millisecond, so one is built per
    annotation and reused. Unhashable annotations cannot be cache keys; they get a
    fresh adapter (callers such as ``FieldValidator`` keep their own reference).
    """
    try:
        return _cached_adapter(annotation)
    except TypeError:  # unhashable annotation
        return TypeAdapter(annotation)


# --------------------------------------------------------------------------- outcomes


# Issue and Outcome are NamedTuples rather than frozen dataclasses for speed: the
# engine benchmark validates thousands of values, and building a NamedTuple costs
# about a third of a frozen slots dataclass (0.3 µs against 1 µs, measured on
# CPython 3.11). Both are immutable and carry no instance dict.


class Issue(NamedTuple):
    """One validator complaint: where (``path``), what (``message``), pydantic's error ``kind``
    and its ``ctx`` (the constraint: ``{"max_length": 15}``), from which
    :mod:`formctl.forms.messages` builds the sentence a person reads."""

    path: tuple[Any, ...]
    message: str
    kind: str
    ctx: dict[str, Any] | None = None

    def __str__(self) -> str:
        if self.path:
            return ".".join(str(segment) for segment in self.path) + ": " + self.message
        return self.message


class Outcome(NamedTuple):
    """The result of validating one raw value: the parsed ``value`` when ``ok``, else the ``issues``."""

    ok: bool
    value: Any = None
    issues: tuple[Issue, ...] = ()

    @property
    def error(self) -> str | None:
        """The ``error`` a revision stores: issues joined with ``"; "``, each ``path: message``."""
        if not self.issues:
            return None
        return "; ".join(str(issue) for issue in self.issues)


def _readable(message: str) -> str:
    for prefix in _NOISE_PREFIXES:
        if message.startswith(prefix) and len(message) > len(prefix):
            return message[len(prefix) :]
    return message


def _issues_from(exc: ValidationError) -> tuple[Issue, ...]:
    return tuple(
        Issue(path=tuple(err["loc"]), message=_readable(err["msg"]), kind=err["type"], ctx=err.get("ctx"))
        for err in exc.errors(include_url=False, include_input=False)
    )


class FieldValidator:
    """Validates raw values for one field. The pydantic adapter is built on first use.

    Compiling a form creates one of these per field, so construction does nothing
    but remember the annotation: a 300-field form should not pay for 300 adapters
    before the first answer arrives. An annotation pydantic cannot build a
    validator for raises on first ``validate`` — that is a definition bug, not an
    answer to report.
    """

    __slots__ = ("annotation", "_validate_json")

    def __init__(self, annotation: Any) -> None:
        self.annotation = annotation
        self._validate_json: Any = None

    def validate(self, raw: Any) -> Outcome:
        try:
            text = _json_text(raw)
        except (TypeError, ValueError) as exc:
            return Outcome(ok=False, issues=(_not_json_issue(exc),))
        validate_json = self._validate_json
        if validate_json is None:
            # The core validator directly: TypeAdapter.validate_json adds a layer of
            # keyword plumbing per call that the engine's hot path does not need.
            validate_json = self._validate_json = adapter_for(self.annotation).validator.validate_json
        try:
            value = validate_json(text, strict=True)
        except ValidationError as exc:
            return Outcome(ok=False, issues=_issues_from(exc))
        # pydantic matches literals (and int enums) by equality, and in Python True == 1:
        # Literal[1, 2, 3] took `true` and Literal[True] took `1`. Strict means a boolean
        # is never a number and a number never a boolean, as on the wire.
        kind = type(raw)
        if kind is bool:
            if type(value) is not bool and isinstance(value, (int, float)):
                return Outcome(
                    ok=False, issues=(Issue((), "Input should be a number, not true or false", "literal_error"),)
                )
        elif (kind is int or kind is float) and type(value) is bool:
            return Outcome(
                ok=False, issues=(Issue((), "Input should be true or false, not a number", "literal_error"),)
            )
        return Outcome(ok=True, value=value)

    def __repr__(self) -> str:
        return f"FieldValidator({self.annotation!r})"


def _json_text(raw: Any) -> str:
    """``json.dumps(raw)``, with the scalar cases done directly.

    Encoding dominated the cost of ``validate`` (1.2 µs of 1.6 µs for an int);
    scalars are most answers, and these branches produce the same text the
    encoder would.
    """
    kind = type(raw)
    if kind is str:
        return _encode_str(raw)
    if kind is int:
        return int.__repr__(raw)
    if kind is bool:
        return "true" if raw else "false"
    if raw is None:
        return "null"
    if kind is float and raw - raw == 0.0:  # finite: NaN and infinities fall through to raise
        return float.__repr__(raw)
    return _encode_json(raw)


_SAFE_INT = 2**53


def json_data(raw: Any) -> Any:
    """``raw`` as the JSON data it would be on the wire; ``ValueError`` when it has no JSON form.

    Tool calls send JSON already, but a host filling from Python, an executor's ``Patch``
    and a ``migrate`` hand over Python values, often ones they read from ``ctx.values``
    (parsed: dates, enums, models). Those are stored as JSON spells them (``date`` →
    ``"2024-03-01"``, an enum → its value, a model → its dict), which is what the
    validator parses and what a JSON store can hold. Containers come back as fresh
    copies, so a caller mutating its dict afterwards cannot change what was stored.
    Values with no JSON form (arbitrary objects, NaN) raise.
    """
    kind = type(raw)
    if kind is str or kind is bool or raw is None:
        return raw
    if kind is int:
        if -_SAFE_INT <= raw <= _SAFE_INT:
            return raw
        try:
            int.__repr__(raw)  # past sys.get_int_max_str_digits() an int cannot be written as JSON
        except ValueError as exc:
            raise ValueError(str(exc).split(";")[0]) from None
        return raw
    if kind is float and raw - raw == 0.0:
        return raw
    try:
        return json.loads(_encode_json(to_jsonable_python(raw)))
    except (TypeError, ValueError) as exc:
        raise ValueError(str(exc) or exc.__class__.__name__) from None


# --------------------------------------------------------------------------- sizes
#
# docs/engine.md, "Validation": a value has a size. Each string in it is at most the field's
# text limit (the form's ``max_text``, or the field's own declared ``max_length`` when that is
# larger), the value as a whole at most ten times that, and containers nest at most 32 deep.
# A value over a limit is refused before it is stored: unlike an ordinary invalid answer, it
# is not kept, so two million characters never reach the store, a view or a model.
#
# Text that is not text is refused the same way, string by string as the sizes are measured:
# a lone surrogate (what a terminal hands over for a byte it could not decode) has no UTF-8
# form, so no store, file or model request could hold it, and a NUL ends a string in C and
# in many of the tools that read an export.

MAX_TEXT = 10_000
MAX_DEPTH = 32
WHOLE_VALUE_FACTOR = 10


def size_issue(raw: Any, text_limit: int = MAX_TEXT, depth_limit: int = MAX_DEPTH) -> Issue | None:
    """Why ``raw`` cannot be stored (a string too long, too much in all, nested too deep, a
    string or key that is not text), or None.

    Iterative, so a value nested ten thousand deep is measured without recursing; it stops
    at the first limit passed, so measuring a huge value costs no more than the limit.
    """
    kind = type(raw)
    if kind is str:  # most answers: one length check
        if len(raw) > text_limit:
            return _too_long(len(raw), text_limit)
        return text_issue(raw)
    if kind is not dict and kind is not list and kind is not tuple:
        return None
    whole_limit = text_limit * WHOLE_VALUE_FACTOR
    total = 0
    stack: list[tuple[Any, int]] = [(raw, 0)]
    while stack:
        node, depth = stack.pop()
        kind = type(node)
        if kind is str:
            if len(node) > text_limit:
                return _too_long(len(node), text_limit)
            bad = text_issue(node)
            if bad is not None:
                return bad
            total += len(node) + 2
        elif isinstance(node, (dict, list, tuple)):
            if depth >= depth_limit:
                return Issue((), f"Nested deeper than {depth_limit} levels.", "too_deep")
            total += 2
            if isinstance(node, dict):
                for key, item in node.items():
                    stack.append((key, depth + 1))
                    stack.append((item, depth + 1))
            else:
                stack.extend((item, depth + 1) for item in node)
        else:
            total += 8  # a number, true, false or null, as JSON spells it (about)
        if total > whole_limit:
            return Issue((), f"Too large: more than {whole_limit:,} characters in all.", "too_large")
    return None


def text_issue(text: str) -> Issue | None:
    """Why ``text`` is not text that can be stored (a lone surrogate, a NUL), or None."""
    if "\x00" in text:
        return Issue(
            (),
            f"Contains a NUL character (U+0000) at position {text.index(chr(0)) + 1}; send the text without it.",
            "invalid_text",
        )
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return Issue(
            (),
            f"Contains a character that is not valid text (U+{ord(text[exc.start]):04X}, a lone "
            f"surrogate, at position {exc.start + 1}): some bytes could not be read as UTF-8; "
            "send the text again as the person typed it.",
            "invalid_text",
        )
    return None


def _too_long(length: int, limit: int) -> Issue:
    return Issue((), f"Too long: {length:,} characters; at most {limit:,}.", "too_long")


def declared_max_length(annotation: Any) -> int | None:
    """The largest ``max_length`` the annotation declares for a string anywhere in it, or None."""
    try:
        schema = adapter_for(annotation).core_schema
    except Exception:  # an annotation pydantic cannot build is reported when a value is validated
        return None
    found: int | None = None
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("type") == "str" and isinstance(node.get("max_length"), int):
                found = max(found or 0, node["max_length"])
            stack.extend(v for v in node.values() if isinstance(v, (dict, list)))
        elif isinstance(node, list):
            stack.extend(v for v in node if isinstance(v, (dict, list)))
    return found


def _not_json_issue(exc: Exception) -> Issue:
    return Issue(path=(), message=f"Value is not JSON data ({exc})", kind="not_json")


# --------------------------------------------------------------------------- hints


def shape_hint(issue: Issue, raw: Any) -> str | None:
    """The hint for a value sent with the right content in the wrong JSON shape.

    Only a string can be "the right number, quoted", so only strings get one. A
    ``Literal[5]`` given ``"5"`` reports ``literal_error`` and gets none, as in the
    reference.
    """
    if not isinstance(raw, str):
        return None
    if issue.kind in _NUMBER_KINDS:
        return NUMBER_HINT
    if issue.kind in _BOOLEAN_KINDS:
        return BOOLEAN_HINT
    return None


def describe_field(ask: str | None, hint: str | None) -> str | None:
    """A field's ``description``: ``ask + " " + hint`` when both are truthy, else ``ask ?? hint``.

    An empty-string ``ask`` with a hint yields ``""``: the reference uses JS
    nullish coalescing, which only falls through on ``None``.
    """
    if ask and hint:
        return ask + " " + hint
    return ask if ask is not None else hint


def to_jsonable(value: Any) -> Any:
    """A parsed value as plain JSON data (dates as ISO strings, models as dicts), for views."""
    return to_jsonable_python(value)
