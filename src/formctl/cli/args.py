"""Values typed on the command line: ``field=value`` pairs.

A value is JSON when it parses as JSON, and text otherwise, so the common cases need no
quoting: ``total=812.5`` is a number, ``mode=car`` and ``staff_id=AB1234`` are text,
``details_changed=true`` is a boolean, ``tags='["a","b"]'`` is a list. To send text that
happens to look like JSON, quote it as a JSON string: ``staff_id='"123456"'`` (given the
form, :func:`parse_assignments` does this itself when the field rejects the JSON).
Leading zeros are not JSON, so ``phone=0123456`` stays text.

An empty value (``phone=``) is sent as ``""``, which the engine ignores (blanks never
overwrite); withdrawing an answer is ``formctl retract``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Iterable, NoReturn

from formctl.errors import InvalidArgumentError
from formctl.json_types import JsonObject, JsonValue

if TYPE_CHECKING:
    from formctl.forms.compile import CompiledForm


def check_text(text: str | None, what: str) -> None:
    """Refuse an argument that is not text: bytes that are not UTF-8, or a NUL.

    Python hands a command-line byte it cannot decode over as a lone surrogate (U+DC80 +
    the byte); no store could hold it, so it is named here, before anything is opened.
    """
    if text is None or (text.isascii() and "\x00" not in text):
        return
    for position, char in enumerate(text, 1):
        if char == "\x00":
            raise InvalidArgumentError(f"{what} contains a NUL character at position {position}; give it without.")
        if "\udc80" <= char <= "\udcff":
            raise InvalidArgumentError(
                f"{what} is not valid UTF-8 (the byte 0x{ord(char) - 0xDC00:02X} at position "
                f"{position} could not be read); type it again as UTF-8 text."
            )
        if "\ud800" <= char <= "\udfff":
            raise InvalidArgumentError(
                f"{what} contains a lone surrogate (U+{ord(char):04X}) at position {position}, "
                "which is not text; give it without."
            )


def parse_value(text: str) -> JsonValue:
    """JSON when ``text`` parses as JSON, the text itself otherwise."""
    try:
        return json.loads(text, parse_constant=_not_json)
    except ValueError:
        return text


def _not_json(name: str) -> NoReturn:
    # json.loads accepts NaN and Infinity, which no form means; they stay text.
    raise ValueError(name)


def parse_assignments(pairs: Iterable[str], compiled: CompiledForm | None = None) -> JsonObject:
    """``["a=1", "b=x"]`` → ``{"a": 1, "b": "x"}``. A later pair for the same key wins.

    With the instance's ``compiled`` form, a value that parsed as JSON but that its field
    rejects is sent as the text typed when the field accepts that: ``purpose=2026`` or
    ``ticket_reference=12345`` on a text field meant the digits, and "Input should be a
    valid string" for them read as a bug. Values the field takes as JSON are unchanged.
    """
    values: JsonObject = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InvalidArgumentError(
                f'Expected field=value, got "{pair.encode("utf-8", "backslashreplace").decode()}".'
            )
        check_text(key, "A field name")
        check_text(raw, f"The value for {key}")
        value = parse_value(raw)
        if compiled is not None and not isinstance(value, str):
            field_id = compiled.resolve_field(key)
            if field_id is not None:
                check = compiled.field_by_id[field_id].validator.validate
                if not check(value).ok and check(raw).ok:
                    value = raw
        values[key] = value
    return values
