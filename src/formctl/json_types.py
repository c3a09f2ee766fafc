"""The names formctl gives to data whose shape no one fixes: the one module allowed to say ``Any``.

The layers above the engine (goals, agent, transcripts, eval, cli) are checked by mypy with
``disallow_any_explicit``: a runner, a model, a store or a person is always its own class or
protocol there. What is left is data that really has no fixed shape, and it is named here so a
reader can tell which kind it is:

- :data:`JsonValue` / :data:`JsonObject`: decoded JSON or TOML as it arrived — a model's tool
  arguments, a tool's result, a stored document, a transcript, an MCP message. Code that reads
  one checks what it finds (``isinstance``) before it trusts it.
- :data:`FieldValue`: a form field's value, whatever its type's parser made of the person's words
  (``str``, ``int``, ``Decimal``, ``date``, a list of them, ``None``…). The form definition decides
  its type, not formctl.

It also holds :func:`present`, how a record whose optional fields may be unset writes its JSON
object: an unset field is left out, not written as ``null``.

This module is a leaf: it imports nothing from formctl, and every layer may import it.
"""

from __future__ import annotations

from typing import Any, TypeAlias

JsonValue: TypeAlias = Any
JsonObject: TypeAlias = dict[str, JsonValue]
FieldValue: TypeAlias = Any

__all__ = ["FieldValue", "JsonObject", "JsonValue", "present"]


def present(**values: JsonValue) -> JsonObject:
    """The values given that are not None, under their names, in the order given: the optional
    part of a record's JSON object (``{"at": at, **present(reason=reason)}``)."""
    return {key: value for key, value in values.items() if value is not None}
