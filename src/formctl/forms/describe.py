"""The agent-facing type string: a field's annotation rendered as a few words.

``render_schema`` renders a JSON-schema dict by the rules of docs/engine.md, 'Type
strings'. ``type_string`` feeds it pydantic's validation-mode JSON schema, adapted:
``$ref``/``$defs`` resolved first (pydantic emits them for Enum classes and nested
models), ``title`` keys dropped, and ``None`` stripped from the top level, because
formctl says "optional" with ``required: false`` rather than in the type
(``Annotated[int, Field(ge=1)] | None`` reads ``integer >= 1``).

The wording is the reference's and was chosen against model behaviour: a boolean
reads "true or false" because models sent "yes" when it read "yes / no".
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any, TypeVar

from formctl.forms.validate import adapter_for

__all__ = ["accepts_none", "field_schema", "field_type_string", "pattern_example", "render_schema", "type_string"]

FALLBACK = "value"

# zod adds the JS safe-integer bounds to every int; they say nothing to the agent.
_MAX_SAFE_INTEGER = 9007199254740991

# Arrays show their item type only this deep, objects their keys only this deep:
# past that the string stops helping and starts costing tokens.
_ARRAY_ITEMS_DEPTH = 3
_OBJECT_KEYS_DEPTH = 2
_OBJECT_KEYS_SHOWN = 6

_STRING_FORMATS = {
    "email": "email address",
    "date": "date (YYYY-MM-DD)",
    "date-time": "timestamp (ISO 8601)",
    "time": "time (HH:MM:SS)",
    "duration": "duration (ISO 8601)",
    "uri": "URL",
    "url": "URL",
    "uuid": "uuid",
    "ipv4": "IPv4 address",
    "ipv6": "IPv6 address",
}

# Keys beside a $ref that do not change the rendering; a $ref carrying only these
# resolves to the shared target itself, which keeps recursive models finite.
_ANNOTATION_KEYS = frozenset({"title", "description", "default", "examples", "deprecated"})
# Keys whose values are data, not subschemas: never walked for $ref.
_DATA_KEYS = frozenset({"enum", "const", "default", "examples", "discriminator", "required"})
# Keys whose values map names to subschemas (the names themselves are data).
_SCHEMA_MAP_KEYS = frozenset({"properties", "patternProperties", "dependentSchemas"})


# --------------------------------------------------------------------------- the renderer


def render_schema(node: Any, depth: int = 0) -> str:
    """Render a ``$ref``-free JSON-schema node as the agent-facing type string.

    Any error while rendering, and an empty rendering, give ``"value"``.
    """
    try:
        rendered = _render(node, depth)
    except Exception:
        return FALLBACK
    return rendered or FALLBACK


def _render(node: Any, depth: int) -> str:
    if node is True or not isinstance(node, dict):
        return FALLBACK

    enum = node.get("enum")
    if "const" in node:
        return "exactly " + _literal(node["const"])
    if isinstance(enum, list) and len(enum) == 1:  # Literal["x"] before pydantic 2.10
        return "exactly " + _literal(enum[0])
    if isinstance(enum, list) and enum:
        return "one of: " + " | ".join(_literal(v) for v in enum)

    branches = node.get("anyOf")
    if not (isinstance(branches, list) and branches):
        branches = node.get("oneOf")
    if isinstance(branches, list) and branches:
        rest = [b for b in branches if not _is_null(b)]
        if not rest:
            return "empty"
        body = " or ".join(_render(b, depth + 1) for b in rest)
        return body + " (may be empty)" if len(rest) < len(branches) else body

    kind = node.get("type")
    if not isinstance(kind, str):
        return FALLBACK
    if kind == "string":
        return _render_string(node)
    if kind == "integer" or kind == "number":
        return _render_number(node, kind)
    if kind == "boolean":
        return "true or false"
    if kind == "null":
        return "empty"
    if kind == "array":
        return _render_array(node, depth)
    if kind == "object":
        return _render_object(node, depth)
    return FALLBACK


def _is_null(branch: Any) -> bool:
    return isinstance(branch, dict) and branch.get("type") == "null"


def _render_string(node: dict[str, Any]) -> str:
    fmt = node.get("format")
    if isinstance(fmt, str) and fmt in _STRING_FORMATS:
        return _STRING_FORMATS[fmt]  # a known format says more than its length
    base = "text"
    pattern = node.get("pattern")
    if isinstance(pattern, str) and pattern:
        example = _matching_example(pattern, node.get("examples"))
        base = f"text like {example}" if example is not None else f"text matching {pattern}"
    low, high = _number(node.get("minLength")), _number(node.get("maxLength"))
    length = _range_words(low, high, both="({low}–{high} chars)", above="(min {low} chars)", below="(max {high} chars)")
    if length is not None:
        return f"{base} {length}"
    if isinstance(fmt, str) and fmt and base == "text":
        return f"text ({fmt})"
    return base


def _matching_example(pattern: str, examples: Any) -> str | None:
    """The first of the schema's ``examples`` the pattern accepts (an example that does not fit is no example)."""
    if not isinstance(examples, list):
        return None
    for example in examples:
        if isinstance(example, str) and _fits(pattern, example):
            return example
    return None


def _fits(pattern: str, text: str) -> bool:
    try:
        return re.search(pattern, text) is not None  # JSON schema's (and pydantic's) pattern: a search
    except re.error:
        return False


def _render_number(node: dict[str, Any], base: str) -> str:
    low, low_exclusive = _bound(node, "exclusiveMinimum", "minimum", -_MAX_SAFE_INTEGER)
    high, high_exclusive = _bound(node, "exclusiveMaximum", "maximum", _MAX_SAFE_INTEGER)
    above = (">" if low_exclusive else ">=") + " {low}"
    below = ("<" if high_exclusive else "<=") + " {high}"
    value = _range_words(low, high, both="between {low} and {high}", above=above, below=below)
    return f"{base} {value}" if value is not None else base


def _range_words(low: int | float | None, high: int | float | None, *, both: str, above: str, below: str) -> str | None:
    """A range in words, either end of it open: ``both`` when it has two ends, ``above`` when it
    has only a lower one, ``below`` when only an upper one (templates naming ``{low}`` and
    ``{high}``). None when it has neither."""
    if low is None and high is None:
        return None
    template = both if low is not None and high is not None else above if low is not None else below
    return template.format(
        low=_js_number(low) if low is not None else "", high=_js_number(high) if high is not None else ""
    )


def _bound(
    node: dict[str, Any], exclusive_key: str, inclusive_key: str, uninformative: int
) -> tuple[int | float | None, bool]:
    exclusive = _number(node.get(exclusive_key))
    if exclusive is not None and exclusive != uninformative:
        return exclusive, True
    inclusive = _number(node.get(inclusive_key))
    if inclusive is not None and inclusive != uninformative:
        return inclusive, False
    return None, False


def _render_array(node: dict[str, Any], depth: int) -> str:
    if "items" in node and depth < _ARRAY_ITEMS_DEPTH:
        base = "list of " + _render(node["items"], depth + 1)
    else:
        base = "list of " + FALLBACK  # also tuples, which describe items by prefixItems
    low, high = _number(node.get("minItems")), _number(node.get("maxItems"))
    if low is not None and high is not None:
        return f"{base} ({_js_number(low)}–{_js_number(high)})"
    if low:  # minItems: 0 alone says nothing
        return f"{base} (at least {_js_number(low)})"
    if high is not None:
        return f"{base} (at most {_js_number(high)})"
    return base


def _render_object(node: dict[str, Any], depth: int) -> str:
    properties = node.get("properties")
    if not isinstance(properties, dict) or depth >= _OBJECT_KEYS_DEPTH or not properties:
        return "object"
    keys = list(properties)
    shown = ", ".join(keys[:_OBJECT_KEYS_SHOWN])
    return "object with: " + (shown + ", …" if len(keys) > _OBJECT_KEYS_SHOWN else shown)


# --------------------------------------------------------------------------- JS-style literals


def _number(value: Any) -> int | float | None:
    """``value`` if it is a JSON number (not a bool), else None: JS ``typeof v === "number"``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return None


def _literal(value: Any) -> str:
    """An enum/const member as the reference prints it: strings raw, the rest as JSON."""
    return value if isinstance(value, str) else _js_json(value)


def _js_json(value: Any) -> str:
    """``JSON.stringify``: compact, with numbers in JS form (``1``, not ``1.0``)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return "null"
        return _js_number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_js_json(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{" + ",".join(json.dumps(str(k), ensure_ascii=False) + ":" + _js_json(v) for k, v in value.items()) + "}"
        )
    return json.dumps(value, ensure_ascii=False)


def _js_number(value: int | float) -> str:
    """JavaScript's Number-to-String (ECMA-262 Number::toString): ``1``, ``0.5``, ``1e+21``.

    Python's ``repr`` already gives the shortest round-tripping digits, as JS does;
    only the placement of the point and the switch to exponent form differ.
    """
    if isinstance(value, int) and abs(value) < 10**21:
        return str(value)
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"  # also -0
    sign = "-" if value < 0 else ""
    _, digit_tuple, exponent = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    k = len(digits)
    n = int(exponent) + k  # value = 0.digits × 10^n (the exponent of a finite number is an int)
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * -n + digits
    else:
        mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
        text = f"{mantissa}e{'+' if n - 1 >= 0 else '-'}{abs(n - 1)}"
    return sign + text


# --------------------------------------------------------------------------- pydantic adaptation


_R = TypeVar("_R")


def _per_annotation(fn: Callable[[Any], _R]) -> Callable[[Any], _R]:
    """``fn`` remembered per annotation (the last 4096); an unhashable annotation, which nothing
    can be remembered by, is worked out on every call."""
    remembered = functools.lru_cache(maxsize=4096)(fn)

    @functools.wraps(fn)
    def call(annotation: Any) -> _R:
        try:
            return remembered(annotation)
        except TypeError:  # unhashable annotation: nothing to cache on
            return fn(annotation)

    return call


@_per_annotation
def type_string(annotation: Any) -> str:
    """The type string for a field annotation, rendered from its non-``None`` part."""
    try:
        schema = adapter_for(annotation).json_schema(mode="validation")
        return render_schema(_without_top_level_null(_resolve_refs(schema)))
    except Exception:
        return FALLBACK


def field_schema(annotation: Any) -> dict[str, Any]:
    """The field's JSON schema as the type string reads it (refs inlined, the top-level "or None"
    dropped), or ``{}`` when there is none."""
    try:
        return _cached_field_schema(annotation)
    except TypeError:  # unhashable annotation
        return _field_schema(annotation)


@functools.lru_cache(maxsize=4096)
def _cached_field_schema(annotation: Any) -> dict[str, Any]:
    return _field_schema(annotation)


def _field_schema(annotation: Any) -> dict[str, Any]:
    try:
        schema = _without_top_level_null(_resolve_refs(adapter_for(annotation).json_schema(mode="validation")))
    except Exception:
        return {}
    return schema if isinstance(schema, dict) else {}


_WORD = re.compile(r"[^\s,;()\"'«»“”]+")


def pattern_example(annotation: Any, words: str | None) -> str | None:
    """An example of a pattern-constrained text field: the first of its schema's ``examples``
    that fits, else a word of the field's own ask or hint that fits ("like AB1234"), else None."""
    schema = field_schema(annotation)
    pattern = schema.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        return None
    example = _matching_example(pattern, schema.get("examples"))
    if example is not None or not words:
        return example
    word: str
    for word in _WORD.findall(words):
        for candidate in (word, word.rstrip(".:!?")):
            if candidate and _fits(pattern, candidate):
                return candidate
    return None


def field_type_string(annotation: Any, words: str | None = None) -> str:
    """A field's type string: :func:`type_string`, with a pattern's example taken from the
    field's own words when the schema gives none (``text like AB1234``)."""
    text = type_string(annotation)
    if words and text.startswith("text matching "):
        example = pattern_example(annotation, words)
        if example is not None:
            pattern = field_schema(annotation).get("pattern")
            return text.replace(f"text matching {pattern}", f"text like {example}", 1)
    return text


@_per_annotation
def accepts_none(annotation: Any) -> bool:
    """True iff the annotation accepts JSON ``null`` under strict validation: the field is optional.

    This is the only source of requiredness (there is no ``required=`` flag); see
    docs/engine.md, 'What a form is'.
    """
    try:
        adapter_for(annotation).validate_json("null", strict=True)
    except Exception:
        return False
    return True


def _without_top_level_null(schema: Any) -> Any:
    """Drop what says "or None" at the top: ``required: false`` says it instead.

    ``X | None`` arrives as ``anyOf [X, null]`` and renders as ``X`` alone;
    ``Literal["a", "b", None]`` arrives as ``enum [a, b, null]`` and renders as
    ``Literal["a", "b"]`` would. A schema that is nothing but null keeps saying so.
    """
    if not isinstance(schema, dict):
        return schema
    enum = schema.get("enum")
    if isinstance(enum, list) and None in enum:
        rest = [v for v in enum if v is not None]
        if not rest:
            return schema
        stripped = {k: v for k, v in schema.items() if k != "enum"}
        if len(rest) == 1:  # what Literal["a"] itself emits
            stripped["const"] = rest[0]
        else:
            stripped["enum"] = rest
        return stripped
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            rest = [b for b in branches if not _is_null(b)]
            if not rest or len(rest) == len(branches):
                return schema
            if len(rest) == 1:
                return rest[0]
            return {**schema, key: rest}
    return schema


def _resolve_refs(schema: dict[str, Any]) -> Any:
    """Inline every local ``$ref``, sharing one resolved dict per definition.

    A recursive model becomes a cyclic dict, which the renderer's depth limits
    cut short. Also undoes two pydantic habits the renderer would misread:

    * ``allOf: [{$ref}]`` (older pydantic's way to hang a description on a ref)
      is a reference, not an intersection;
    * a tuple's ``minItems``/``maxItems`` are dropped, as zod emits none for
      tuples: the reference renders ``tuple([...])`` as plain ``list of value``.
    """
    return _Refs(schema).walk(schema)


class _Refs:
    """One schema's local references, each resolved once (a recursive one refers to itself)."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self.resolved: dict[str, Any] = {}

    def deref(self, ref: str) -> Any:
        if ref in self.resolved:
            return self.resolved[ref]
        if not ref.startswith("#/"):
            return {"$ref": ref}  # not ours to fetch; renders as "value"
        target: Any = self.schema
        for part in ref[2:].split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        placeholder: dict[str, Any] = {}
        self.resolved[ref] = placeholder
        body = self.walk(target)
        if isinstance(body, dict):
            placeholder.update(body)
            return placeholder
        self.resolved[ref] = body
        return body

    def walk(self, node: Any) -> Any:
        if isinstance(node, list):
            return [self.walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        ref, node = _reference(node)
        if isinstance(ref, str):
            target = self.deref(ref)
            extra = {k: v for k, v in node.items() if k != "$ref" and k != "$defs" and k not in _ANNOTATION_KEYS}
            if not extra or not isinstance(target, dict):
                return target
            return {**target, **self.walk(extra)}
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "title" or key == "$defs" or key == "definitions":
                continue
            if key in _DATA_KEYS:
                out[key] = value
            elif key in _SCHEMA_MAP_KEYS and isinstance(value, dict):
                out[key] = {name: self.walk(sub) for name, sub in value.items()}
            else:
                out[key] = self.walk(value)
        if "prefixItems" in out:
            out.pop("minItems", None)
            out.pop("maxItems", None)
        return out


def _reference(node: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The node's ``$ref``, reading ``allOf: [{$ref}]`` as one (and leaving that ``allOf`` out)."""
    ref = node.get("$ref")
    all_of = node.get("allOf")
    if (
        ref is None
        and isinstance(all_of, list)
        and len(all_of) == 1
        and isinstance(all_of[0], dict)
        and set(all_of[0]) == {"$ref"}
    ):
        return all_of[0]["$ref"], {k: v for k, v in node.items() if k != "allOf"}
    return ref, node
