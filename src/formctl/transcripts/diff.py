"""Structural diffs of JSON values, written for a form author.

A replay compares what a tool returned now with what it returned when the transcript was
recorded. A text diff of two pretty-printed views buries the change in brackets; instead
each difference is one line with a path a form author can read: lists of rows are keyed
by what names them (``fields[mileage].status``, ``rejected[staff_id]``, ``steps[travel]``),
so the diff names the field, and a value missing on one side says so::

    fields[mileage].status: recorded "filled", now "held"
    held: recorded (absent), now ["mileage"]
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from formctl.json_types import JsonValue

_ABSENT = object()
# Keys that name a row inside a list, in the order they are tried.
_ROW_KEYS = ("id", "field", "hook")
MAX_LINES = 12


@dataclass(frozen=True, slots=True)
class Difference:
    path: str
    recorded: object  # a JSON value, or _ABSENT where that side has none
    now: object

    def render(self, labels: tuple[str, str] = ("recorded", "now")) -> str:
        where = self.path or "(whole value)"
        return f"{where}: {labels[0]} {_show(self.recorded)}, {labels[1]} {_show(self.now)}"


def _show(value: object) -> str:
    if value is _ABSENT:
        return "(absent)"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 100 else text[:97] + "…"


def _row_key(a: list[JsonValue], b: list[JsonValue]) -> str | None:
    """The key naming the rows of both lists (unique within each), if there is one."""
    for key in _ROW_KEYS:
        if all(isinstance(i, dict) and isinstance(i.get(key), str) for i in a + b):
            if all(len({i[key] for i in side}) == len(side) for side in (a, b)):
                return key
    return None


def differences(recorded: JsonValue, now: JsonValue, path: str = "") -> list[Difference]:
    """Every leaf where ``now`` differs from ``recorded``, in document order."""
    out: list[Difference] = []
    _walk(recorded, now, path, out)
    return out


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _walk(a: object, b: object, path: str, out: list[Difference]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in list(a) + [k for k in b if k not in a]:
            _walk(a.get(key, _ABSENT), b.get(key, _ABSENT), _join(path, key), out)
        return
    if isinstance(a, list) and isinstance(b, list) and a != b:
        key = _row_key(a, b) if (a or b) else None
        if key is not None:
            left = {i[key]: i for i in a}
            right = {i[key]: i for i in b}
            for name in list(left) + [n for n in right if n not in left]:
                _walk(left.get(name, _ABSENT), right.get(name, _ABSENT), f"{path}[{name}]", out)
            if [i[key] for i in a] != [i[key] for i in b] and set(left) == set(right):
                out.append(Difference(f"{path} (order)", [i[key] for i in a], [i[key] for i in b]))
            return
        if len(a) == len(b) and all(isinstance(x, (dict, list)) for x in a + b):
            for i, (x, y) in enumerate(zip(a, b)):
                _walk(x, y, f"{path}[{i}]", out)
            return
    if a == b and (type(a) is type(b) or (_number(a) and _number(b))):
        return
    out.append(Difference(path, a, b))


def _number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


RECORDED = ("recorded", "now")
EXPECTED = ("expected", "got")
"""Labels for the two sides: a recording against its replay, or a hand-written ``[expect]``
against what a live run did (the author wrote that value; nothing recorded it)."""


def render(
    diffs: list[Difference], *, indent: str = "    ", limit: int = MAX_LINES, labels: tuple[str, str] = RECORDED
) -> str:
    lines = [indent + d.render(labels) for d in diffs[:limit]]
    if len(diffs) > limit:
        lines.append(f"{indent}… and {len(diffs) - limit} more")
    return "\n".join(lines)


def text_diff(recorded: str, now: str, *, indent: str = "    ") -> str:
    """A line diff for texts (the tier-0 line, the system prompt, the model's words): only the
    changed lines, ``-`` recorded and ``+`` now."""
    import difflib

    rows = [
        line
        for line in difflib.unified_diff(recorded.splitlines(), now.splitlines(), "recorded", "now", lineterm="", n=0)
        if not line.startswith(("---", "+++", "@@"))
    ]
    return "\n".join(indent + r for r in rows)
