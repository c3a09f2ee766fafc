"""What a field's answer is: its kind, read once from the field (schema, label, aliases).

Validation is strict (``"40"`` is not an integer), so a person's words are read into the
field's type before they are written; the kind says which reader does it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from formctl.json_types import JsonObject, JsonValue

if TYPE_CHECKING:
    from formctl.forms.compile import CompiledField


@dataclass(frozen=True, slots=True)
class Kind:
    """What a field's schema wants, read once from its JSON schema (and the field's label).

    ``name``: integer | number | boolean | date | datetime | email | phone | text | choice | json.
    ``phone`` is text whose label or id says it is a phone number ("Phone", "Mobile");
    ``reference`` is text whose label says it is a reference ("Ticket reference", "Booking ref").
    ``aliases``: a choice's other names, (option, (alias, ...)) pairs, from the form's author.
    """

    name: str
    options: tuple[JsonValue, ...] = ()
    pattern: str | None = None  # text that must match this (a Staff ID's ^[A-Z]{2}\d{4}$)
    aliases: tuple[tuple[JsonValue, tuple[str, ...]], ...] = ()


class UnreadableAnswer(ValueError):
    """The person's words could not be turned into the field's type; the message says what is needed."""


_PHONE_WORDS = re.compile(r"\b(?:phone|mobile|cell|telephone|tel|landline)\b", re.IGNORECASE)
_REFERENCE_WORDS = re.compile(r"\b(?:ref|reference|booking|confirmation number)\b", re.IGNORECASE)


def field_kind(field: CompiledField) -> Kind:
    """The kind of a compiled field's answer: its schema's kind, a phone number when its label or
    id names one, and its author's aliases for a choice."""
    kind = kind_of(field.schema)
    aliases = getattr(field, "aliases", None) or {}
    if kind.name == "choice" and aliases:
        pairs = tuple((option, tuple(names)) for option, names in aliases.items() if option in kind.options)
        kind = Kind("choice", kind.options, aliases=pairs)
    named = f"{getattr(field, 'label', '')} {str(getattr(field, 'id', '')).replace('_', ' ')}"
    if kind.name == "text" and kind.pattern is None and _PHONE_WORDS.search(named):
        kind = Kind("phone")
    elif kind.name == "text" and kind.pattern is None and _REFERENCE_WORDS.search(named):
        kind = Kind("reference")
    return kind


def kind_of(schema: object) -> Kind:
    from formctl.forms.validate import adapter_for

    try:
        node = adapter_for(schema).json_schema(mode="validation")
    except Exception:
        return Kind("text")
    defs = node.get("$defs", {}) if isinstance(node, dict) else {}
    return _kind_of_node(node, defs)


def _kind_of_node(node: JsonValue, defs: JsonObject) -> Kind:
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
    if kind in ("integer", "number", "boolean"):
        return Kind(kind)
    if kind == "string":
        fmt = node.get("format")
        if fmt in ("date", "email"):
            return Kind(fmt)
        if fmt == "date-time":
            return Kind("datetime")
        pattern = node.get("pattern")
        return Kind("text", pattern=pattern if isinstance(pattern, str) else None)
    return Kind("json")
