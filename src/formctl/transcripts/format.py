"""The transcript file: TOML, ``format = 1``. Read with ``tomllib``, written with ``tomlkit``.

docs/transcripts.md ('The file') shows a whole file and says why it is laid out so: tool
results are kept as the JSON text the model saw (as TOML they would be unreadable), values
TOML cannot hold (``null``) go under a ``_json`` name, and errors name the file and line
(:class:`TranscriptError`, never a traceback).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from formctl.errors import TranscriptError  # defined with every other formctl error
from formctl.files import replace_text
from formctl.json_types import JsonObject, JsonValue

if TYPE_CHECKING:
    from tomlkit.items import AoT, Item, Table
    from tomlkit.toml_document import TOMLDocument

    _Table = TypeVar("_Table", TOMLDocument, Table)

_PathLike = str | os.PathLike[str]

FORMAT = 1
PROGRAM_FORMAT = 2  # a goal program's walk (docs/transcripts.md, "A program's walk"); format 1 reads as before
HOST_ACTIONS = ("resolve", "fill", "revise", "retract", "undo", "redo", "abandon", "reopen", "withdraw")


# --------------------------------------------------------------------------- the model


@dataclass(slots=True)
class Call:
    """One tool call of a model iteration and the result the tools returned (None: not recorded yet)."""

    id: str
    name: str
    input: JsonValue
    result: JsonValue = None
    is_error: bool = False


@dataclass(slots=True)
class Iteration:
    """One model call: the tier-0 line it was sent, then its reply (text and tool calls)."""

    tier0: str | None = None
    text: str = ""
    stop_reason: str = "end_turn"
    calls: list[Call] = field(default_factory=list)


@dataclass(slots=True)
class Turn:
    """A person's message (with the model iterations answering it) or a host action."""

    kind: str  # "person" | "host"
    text: str = ""
    iterations: list[Iteration] = field(default_factory=list)
    error: str | None = None
    action: str | None = None
    args: JsonObject = field(default_factory=dict)
    result: JsonValue = None  # host actions: the fill result, as JSON
    # a person turn: their answers to formctl's own questions during it (a value their words did
    # not hold), in order; a replay gives them again when formctl asks again
    answers: list[str] = field(default_factory=list)
    # a program's walk: which chat the turn belongs to, "goals" or the form id (None in format 1)
    segment: str | None = None

    def label(self) -> str:
        if self.kind == "host":
            return f"host: {self.action}"
        text = self.text if len(self.text) <= 60 else self.text[:57] + "…"
        return f"person: {json.dumps(text, ensure_ascii=False)}"


@dataclass(slots=True)
class Transcript:
    form: str
    form_version: int | None = None
    model: str = "scripted"
    turns: list[Turn] = field(default_factory=list)
    expect: JsonObject | None = None
    system: str | None = None
    tools_digest: str | None = None
    masked: list[str] = field(default_factory=list)
    resumed: bool = False  # recorded over an instance that already had answers (formctl resume)
    usage: dict[str, int] = field(default_factory=dict)  # the recorded conversation's tokens (agent.usage)
    path: str | None = None
    # a program's walk (format 2): the program's key, and its state when the walk began (as stored)
    program: str | None = None
    program_state: JsonObject | None = None

    @property
    def name(self) -> str:
        return Path(self.path).stem if self.path else self.form

    @property
    def recorded(self) -> bool:
        """True when the file holds model turns (an exact replay is possible)."""
        return any(t.iterations for t in self.turns if t.kind == "person")


# --------------------------------------------------------------------------- values


def toml_safe(value: JsonValue) -> bool:
    """Can TOML hold this JSON value as it is? (No null anywhere; keys are strings.)"""
    if value is None:
        return False
    if isinstance(value, dict):
        return all(isinstance(k, str) and toml_safe(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(toml_safe(v) for v in value)
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, (str, int, bool))


def put_value(table: JsonObject, key: str, value: JsonValue) -> None:
    """``table[key] = value`` if TOML can hold it, else ``table[key + "_json"]`` = its JSON text."""
    if toml_safe(value):
        table[key] = value
    else:
        table[f"{key}_json"] = json.dumps(value, ensure_ascii=False)


def get_value(table: JsonObject, key: str, default: JsonValue = None, *, where: str = "") -> JsonValue:
    """Read a value written by :func:`put_value` (either spelling)."""
    if key in table:
        return plain(table[key])
    text = table.get(f"{key}_json")
    if text is None:
        return default
    if not isinstance(text, str):
        raise TranscriptError(f"{where}{key}_json must be a string of JSON text")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TranscriptError(f"{where}{key}_json is not valid JSON ({exc.msg}, JSON line {exc.lineno})") from exc


def plain(value: JsonValue) -> JsonValue:
    """TOML dates and times as the ISO strings the model sees; everything else as is."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, (_dt.date, _dt.time)):
        return value.isoformat()
    return value


def result_text(value: JsonValue) -> str:
    """A tool result as pretty JSON: one key per line, so a file diff points at the change."""
    return json.dumps(value, ensure_ascii=False, indent=1) + "\n"


# --------------------------------------------------------------------------- reading

_AT_LINE = re.compile(r"\(at line (\d+), column (\d+)\)")


def loads(text: str, *, path: _PathLike | None = None) -> Transcript:
    """Parse transcript text. Malformed TOML and missing keys raise :class:`TranscriptError`."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _decode_error(exc, text, path) from None
    return _from_doc(doc, text, path)


def load(path: _PathLike) -> Transcript:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise TranscriptError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", path=path) from None
    except OSError as exc:
        raise TranscriptError(exc.strerror or str(exc), path=path) from None
    return loads(text, path=path)


def _decode_error(exc: tomllib.TOMLDecodeError, text: str, path: _PathLike | None) -> TranscriptError:
    message = str(exc)
    match = _AT_LINE.search(message)
    if match:
        line = int(match.group(1))
        reason = message[: match.start()].strip()
        return TranscriptError(f"{reason} (column {match.group(2)}) — not valid TOML", path=path, line=line)
    # tomllib reports some errors "at end of document", without a line: that is a file cut
    # short (a crash mid-write, a bad copy). Name the last line, which is where it stops.
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    reason = re.sub(r"\s*\(at end of document\)", "", message)
    return TranscriptError(
        f"{reason} at the end of the file — the transcript looks truncated", path=path, line=max(lines, 1)
    )


def _turn_lines(text: str) -> list[int]:
    """The line number of each ``[[turns]]`` header, so errors about turn N can name its line."""
    return [i + 1 for i, line in enumerate(text.splitlines()) if line.strip().startswith("[[turns]]")]


@dataclass(frozen=True)
class _Source:
    """Where a transcript being read came from, so an error can name its file and a turn's line."""

    text: str
    path: _PathLike | None

    def error(self, message: str, turn_no: int | None = None) -> TranscriptError:
        line = None
        turn_lines = _turn_lines(self.text) if turn_no is not None else []  # only on the error path
        if turn_no is not None and turn_no - 1 < len(turn_lines):
            line = turn_lines[turn_no - 1]
        return TranscriptError(message, path=self.path, line=line)


def _from_doc(doc: JsonObject, text: str, path: _PathLike | None) -> Transcript:
    source = _Source(text, path)
    form = _checked_header(doc, path)
    raw_turns = doc.get("turns", [])
    if not isinstance(raw_turns, list):
        raise TranscriptError("`turns` must be an array of tables ([[turns]])", path=path)
    turns = [_turn_from(raw, n, source) for n, raw in enumerate(raw_turns, 1)]
    request = doc.get("request", {})
    return Transcript(
        form=form,
        form_version=doc.get("form_version"),
        model=str(doc.get("model", "scripted")),
        turns=turns,
        expect=_expect_from(doc, path),
        system=request.get("system"),
        tools_digest=request.get("tools_digest"),
        masked=list(doc.get("masked", [])),
        resumed=bool(doc.get("resumed", False)),
        usage={k: v for k, v in usage.items() if isinstance(v, int)}
        if isinstance(usage := doc.get("usage"), dict)
        else {},
        path=str(path) if path is not None else None,
        program=doc.get("program") if doc.get("format") == PROGRAM_FORMAT else None,
        program_state=get_value(doc, "program_state", where="") if doc.get("format") == PROGRAM_FORMAT else None,
    )


def _checked_header(doc: JsonObject, path: _PathLike | None) -> str:
    """The transcript's form id, once its format is one this formctl reads."""
    version = doc.get("format")
    if version is None:
        raise TranscriptError("missing `format = 1` at the top — is this a formctl transcript?", path=path, line=1)
    if version == PROGRAM_FORMAT:
        program = doc.get("program")
        if not isinstance(program, str) or not program:
            raise TranscriptError('a program\'s walk (format 2) needs `program = "<program key>"`', path=path)
    elif version != FORMAT:
        raise TranscriptError(
            f"format {version!r} is not one this formctl reads (it reads formats {FORMAT} and {PROGRAM_FORMAT})",
            path=path,
        )
    form = doc.get("form")
    if not isinstance(form, str) or not form:
        raise TranscriptError('missing `form = "<form id>"`', path=path)
    return form


def _turn_from(raw: JsonValue, n: int, source: _Source) -> Turn:
    """Turn ``n`` as read: the person's (with the model's iterations after it) or a host's act."""
    where = f"turn {n}: "
    if not isinstance(raw, dict):
        raise source.error(f"{where}must be a table", n)
    kind = raw.get("kind", "person")
    if kind == "host":
        action = raw.get("action")
        if action not in HOST_ACTIONS:
            raise source.error(f"{where}host action must be one of {', '.join(HOST_ACTIONS)}, not {action!r}", n)
        args = get_value(raw, "args", {}, where=where)
        if not isinstance(args, dict):
            raise source.error(f"{where}`args` must be a table", n)
        turn = Turn("host", action=action, args=args, result=get_value(raw, "result", where=where))
        turn.error = raw.get("error")
        return turn
    if kind != "person":
        raise source.error(f'{where}kind must be "person" or "host", not {kind!r}', n)
    text_value = raw.get("text")
    if not isinstance(text_value, str):
        raise source.error(f'{where}a person turn needs `text = "..."`', n)
    turn = Turn("person", text=text_value, error=raw.get("error"))
    answers = raw.get("answers", [])
    if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
        raise source.error(f"{where}`answers` must be a list of the person's lines", n)
    turn.answers = list(answers)
    segment = raw.get("segment")
    if segment is not None and not isinstance(segment, str):
        raise source.error(f"{where}`segment` must be the chat's name", n)
    turn.segment = segment
    for k, it in enumerate(raw.get("iterations", []), 1):
        turn.iterations.append(_iteration(it, f"{where}iteration {k}: ", source, n))
    return turn


def _expect_from(doc: JsonObject, path: _PathLike | None) -> JsonObject | None:
    expect = doc.get("expect")
    if expect is None:
        return None
    if not isinstance(expect, dict):
        raise TranscriptError("`[expect]` must be a table", path=path)
    return {
        key: get_value(expect, key, where="expect: ")
        for key in ("status", "values", "held", "checkpoints", "provenance", "program")
        if key in expect or f"{key}_json" in expect
    }


def _iteration(raw: JsonValue, where: str, source: _Source, turn_no: int) -> Iteration:
    if not isinstance(raw, dict):
        raise source.error(f"{where}must be a table", turn_no)
    it = Iteration(tier0=raw.get("tier0"), text=raw.get("text", ""), stop_reason=raw.get("stop_reason", ""))
    for j, call in enumerate(raw.get("calls", []), 1):
        w = f"{where}call {j}: "
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise source.error(f"{w}a tool call needs `name`", turn_no)
        it.calls.append(
            Call(
                id=str(call.get("id") or f"call_{turn_no}_{j}"),
                name=call["name"],
                input=get_value(call, "input", {}, where=w),
                result=get_value(call, "result", where=w),
                is_error=bool(call.get("is_error", False)),
            )
        )
    if not it.stop_reason:
        it.stop_reason = "tool_use" if it.calls else "end_turn"
    return it


# --------------------------------------------------------------------------- writing


def to_doc(t: Transcript) -> JsonObject:
    doc: JsonObject = {"format": FORMAT if t.program is None else PROGRAM_FORMAT, "form": t.form}
    if t.program is not None:
        doc["program"] = t.program
        if t.program_state is not None:
            put_value(doc, "program_state", t.program_state)
    if t.form_version is not None:
        doc["form_version"] = t.form_version
    doc["model"] = t.model
    if t.masked:
        doc["masked"] = list(t.masked)
    if t.resumed:
        doc["resumed"] = True
    if any(t.usage.values()):
        doc["usage"] = dict(t.usage)
    doc["turns"] = [_host_row(turn) if turn.kind == "host" else _person_row(turn) for turn in t.turns]
    if t.expect is not None:
        expect: JsonObject = {}
        for key in ("status", "values", "held", "checkpoints", "provenance", "program"):
            if key in t.expect:
                put_value(expect, key, t.expect[key])
        doc["expect"] = expect
    if t.system is not None or t.tools_digest is not None:
        request: JsonObject = {}
        if t.system is not None:
            request["system"] = t.system
        if t.tools_digest is not None:
            request["tools_digest"] = t.tools_digest
        doc["request"] = request
    return doc


def _host_row(turn: Turn) -> JsonObject:
    row: JsonObject = {"kind": "host", "action": turn.action}
    if turn.args:
        put_value(row, "args", turn.args)
    if turn.error:
        row["error"] = turn.error
    if turn.result is not None:
        row["result_json"] = result_text(turn.result)
    return row


def _person_row(turn: Turn) -> JsonObject:
    row: JsonObject = {"kind": "person", "text": turn.text}
    if turn.segment is not None:
        row["segment"] = turn.segment
    if turn.answers:
        row["answers"] = list(turn.answers)
    if turn.error:
        row["error"] = turn.error
    its = [_iteration_row(it) for it in turn.iterations]
    if its:
        row["iterations"] = its
    return row


def _iteration_row(it: Iteration) -> JsonObject:
    r: JsonObject = {}
    if it.tier0 is not None:
        r["tier0"] = it.tier0
    if it.text:
        r["text"] = it.text
    if it.stop_reason != ("tool_use" if it.calls else "end_turn"):
        r["stop_reason"] = it.stop_reason  # only when it is not what the calls imply
    calls = []
    for c in it.calls:
        cr: JsonObject = {"id": c.id, "name": c.name}
        put_value(cr, "input", c.input if c.input is not None else {})
        if c.is_error:
            cr["is_error"] = True
        if c.result is not None:
            cr["result_json"] = result_text(c.result)
        calls.append(cr)
    if calls:
        r["calls"] = calls
    return r


DEFAULT_HEADER = "# formctl transcript — replay with `formctl replay`; refresh with `formctl replay --update`.\n"


def leading_comments(text: str) -> str:
    """The comment block at the top of a file (kept when ``--update`` rewrites it)."""
    lines = []
    for line in text.splitlines(keepends=True):
        if line.startswith("#"):
            lines.append(line)
        elif line.strip():
            break
    return "".join(lines)


def dumps(t: Transcript, *, header: str | None = None) -> str:
    """The transcript as TOML text, laid out for people.

    ``header`` is the comment block written first (default: a line saying how to replay it).

    Written with tomlkit, which (unlike tomli-w, whose only choices are basic strings and a
    ``[header]`` for every nested table) lets each value say how it is written:

    * a string holding quotes, backslashes or newlines is a *literal* string (``'...'``, or
      ``'''...'''`` over several lines) when it can be one, so the JSON of a tool result
      and the tier-0 lines read without a ``\\"`` on every key;
    * a tool call's ``input``, a host action's ``args`` and the ``usage`` figures are one inline
      table beside the call's name, and a list of plain values (``checkpoints``, ``masked``)
      is one line;
    * any other table is a ``[header]`` of its own, after its table's plain keys.
    """
    doc = to_doc(t)
    # Each [[turns]] entry and each other table is rendered on its own (a blank line before
    # it, as tomlkit lays out the whole document) and kept: a recorder rewrites its file after
    # every turn, and rendering every earlier turn again made writing a conversation of n
    # turns cost n² (two thirds of the CPU of `formctl eval scenarios/ --runs 3`).
    text = _rendered({key: value for key, value in doc.items() if not _is_table(key, value)})
    for key, value in doc.items():
        if _is_table(key, value):
            for part in [{key: [row]} for row in value] if isinstance(value, list) else [{key: value}]:
                text += "\n" + _rendered(part)
    return (header or DEFAULT_HEADER) + text


_INLINE_KEYS = ("input", "args", "usage")
_RENDERED: dict[str, str] = {}  # repr of a part of a document → its TOML (see dumps)


def _rendered(part: JsonObject) -> str:
    """``part`` as tomlkit writes it, from :data:`_RENDERED` when the same part was written before.
    The key is the part's ``repr``: its keys in order and its values with their types."""
    import tomlkit

    key = repr(part)
    text = _RENDERED.get(key)
    if text is None:
        if len(_RENDERED) >= 2048:  # a long-lived process (eval, a host) never holds more
            _RENDERED.clear()
        text = _RENDERED[key] = tomlkit.dumps(_table(tomlkit.document(), part))
    return text


def _is_table(key: str, value: JsonValue) -> bool:
    """Whether ``value`` is written as a ``[header]`` table (or ``[[header]]`` tables) of its own."""
    if isinstance(value, dict):
        return key not in _INLINE_KEYS
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


# The control characters a literal string cannot hold: all below 32 but tab and newline, and DEL.
# (One search, not a test per character: a recorder rewrites its file after every turn.)
_NO_LITERAL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")


def _table(table: _Table, data: JsonObject) -> _Table:
    """Fill a tomlkit table: plain and inline values first (TOML puts them before sub-tables)."""
    import tomlkit

    later: list[tuple[str, Table | AoT]] = []
    for key, value in data.items():
        if isinstance(value, dict) and _is_table(key, value):
            later.append((key, _table(tomlkit.table(), value)))
        elif _is_table(key, value):
            rows = tomlkit.aot()
            for row in value:
                rows.append(_table(tomlkit.table(), row))
            later.append((key, rows))
        else:
            table.add(key, _value(value))
    for key, item in later:
        table.add(key, item)
    return table


def _value(value: JsonValue) -> Item:
    """A value written on its key's line: inline tables and arrays, literal strings where they can be."""
    import tomlkit

    if isinstance(value, dict):
        inline = tomlkit.inline_table()
        for key, item in value.items():
            inline.append(key, _value(item))
        return inline
    if isinstance(value, list):
        array = tomlkit.array()
        for item in value:
            array.append(_value(item))
        return array
    if isinstance(value, str):
        if _can_be_literal(value):
            return tomlkit.string(value, literal=True, multiline="\n" in value)
        return tomlkit.string(value)
    return tomlkit.item(value)


def _can_be_literal(text: str) -> bool:
    """Whether ``text`` reads better as a TOML literal string, and can be one.

    Only text with a quote, a backslash or a newline gains from it; a literal string has no
    escapes, so it cannot hold control characters, a one-line one cannot hold ``'``, and a
    multi-line one cannot hold ``'''``, end in ``'`` or start with a newline (TOML drops a
    newline right after the opening quotes).
    """
    if '"' not in text and "\n" not in text and "\\" not in text:
        return False
    if _NO_LITERAL.search(text):
        return False
    if "\n" in text:
        return "'''" not in text and not text.endswith("'") and not text.startswith(("\n", "\r"))
    return "'" not in text


def dump(t: Transcript, path: _PathLike, *, header: str | None = None) -> None:
    """Write atomically (:func:`formctl.files.replace_text`): a crash leaves the previous complete file."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    replace_text(target, dumps(t, header=header))
