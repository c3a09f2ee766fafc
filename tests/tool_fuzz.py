"""The tool-layer fuzz, shared by ``tests/agent/test_tool_fuzz.py`` (a few hundred examples in every run)
and ``benchmarks/fuzz.py`` (ten thousand calls, counted).

Every example is one chat turn in a fresh JSON store: a model that gets every argument wrong
(missing and extra keys, wrong JSON types, nulls, huge and deeply nested values, control
characters, NUL, lone surrogates, numbers as strings, unknown and near-miss field ids,
another subject's and made-up instance ids, path-like ids) calls the tools through the chat
loop, the same path a chat takes (``ChatLoop`` with a real ``JsonFileAdapter`` and the
``ConversationStore``). Around each call, :class:`Watch` checks what the chat relies on:

- no exception escapes the loop, and the loop reports no error of its own (a conversation
  that could not be saved, say);
- the result is a well-formed envelope, and the ``tool_result`` text sent back is valid
  UTF-8 JSON that reads back as the same envelope;
- an error result leaves every store file as it was (byte for byte), so does a read that
  succeeds, and no result makes an instance's version drop or an instance disappear;
- every value a success result says it captured is in that field's log;
- no conversation is saved under an instance the chat did not begin with or start itself,
  and another subject's saved conversation is never touched.

Afterwards a fresh adapter reads every instance and the store check (what ``formctl store
check`` runs) passes. Violations are collected as :class:`Finding` rows, so the benchmark can
count them; the test fails on the first.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
import reprlib
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from formctl import FormRegistry, FormRunner, JsonFileAdapter
from formctl.agent.events import LoopError, ToolCall, ToolResult
from formctl.agent.loop import ChatLoop, tool_result_block
from formctl.agent.models.base import ModelReply
from formctl.agent.tools import _BY_NAME, TOOL_NAMES
from formctl.store.conversations import ConversationStore

SUBJECT = "dana"
OTHER = "sam"
READS = {"form_list", "form_status", "form_inspect", "form_history"}  # they never write, even on success
THEIRS_SAID = [{"role": "user", "content": [{"type": "text", "text": "sam's own words"}]}]

# --------------------------------------------------------------------------- what a model sends

# The example forms' fields, labels and near misses of them: most names should mean something.
FIELD_IDS = [
    "full_name",
    "staff_id",
    "email",
    "destination",
    "departure_date",
    "return_date",
    "purpose",
    "mode",
    "mileage",
    "mileage_cost",
    "ticket_reference",
    "accommodation",
    "meals",
    "total",
    "client_type",
    "age",
    "phone",
    "referral",
    "needs",
    "client_number",
    "details_changed",
]
NEAR_MISSES = [
    "Full name",
    "FULL_NAME",
    "fullname",
    "full-name",
    "full_nam",
    "fulname",
    "staffid",
    "Staff ID",
    "e-mail",
    "emial",
    "Work email",
    "totl",
    "Total claimed",
    "return date",
    "milage",
    "full_name ",
    " staff_id",
    "full\udce9name",
    "staff_id\x00",
    "email\u200b",
    "ｆｕｌｌ＿ｎａｍｅ",
]
STEP_IDS = ["claimant", "trip", "travel", "costs", "Claimant", "triage", "contact", "nope", "step 2", "2"]
GOOD_VALUES = [
    "Dana Reeve",
    "AB1234",
    "dana@example.org",
    "Leeds",
    "2025-03-01",
    "2025-03-04",
    "Conference",
    "car",
    "rail",
    "air",
    120,
    54.0,
    "TR1234",
    812.5,
    0,
    "new",
    "returning",
    34,
    "0123456789",
    "web",
    "help with forms",
    "C12345",
    True,
    False,
    "812.50",
    "34",
    "1e3",
]
PATH_LIKE = [
    "../instances/x",
    "..",
    ".",
    "/etc/passwd",
    "form_x/../../y",
    "instances",
    "index.jsonl",
    "lock",
    "form_\x00",
    "form_\udce9",
    "C:\\x",
    "con",
    "form_" + "a" * 300,
    "",
    " ",
    "\n",
]
# Text a person or a model gets wrong: controls, NUL, lone surrogates, direction marks, huge.
NASTY_TEXT = [
    "\x00",
    "a\x00b",
    "\udc80",
    "Jos\udce9",
    "\ud800",
    "\udfff\ud800",
    "\x1b[31mred",
    "\r\n",
    "\t",
    "\u202egnp.exe",
    "\ufeff",
    "\u0301",
    "💥",
    "\U0010ffff",
    "x" * 5_000,
    "y" * 100_001,
    "NaN",
    "null",
    "true",
    "[]",
    "{}",
]

# Characters st.text() never draws: lone surrogates (an undecodable byte) and C0 controls.
odd_characters = st.one_of(st.integers(0xD800, 0xDFFF), st.integers(0, 0x1F)).map(chr)
texts = st.one_of(
    st.text(max_size=30),
    st.lists(st.one_of(st.characters(), odd_characters), max_size=30).map("".join),
    st.sampled_from(NASTY_TEXT),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([2**63, -(2**63) - 1, 10**40, -1]),
    st.floats(allow_nan=True, allow_infinity=True),
    texts,
    st.sampled_from(GOOD_VALUES),
)


def _deep(depth: int, leaf: Any = 1) -> Any:
    value: Any = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"a": value}
    return value


class Huge:
    """A huge or deeply nested value, drawn by name and built only when the example is played:
    hypothesis prints every example it draws, and a value 1,000 levels deep cannot be printed."""

    BUILD = {
        "deep-1000": lambda: _deep(1000),
        "deep-70": lambda: _deep(70, "Dana\udce9"),
        "wide-list": lambda: list(range(20_000)),
        "wide-dict": lambda: {f"k{i}": i for i in range(5_000)},
        "long-key": lambda: {"k" * 50_000: "v"},
    }

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __repr__(self) -> str:
        return f"Huge({self.kind!r})"

    def build(self) -> Any:
        return self.BUILD[self.kind]()


huge = st.sampled_from(sorted(Huge.BUILD)).map(Huge)
json_values = st.one_of(
    scalars,
    st.recursive(
        scalars,
        lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(texts, inner, max_size=4)),
        max_leaves=8,
    ),
    huge,
)


# A value each example field takes, so that many calls do land and their captures can be checked.
GOOD_BY_FIELD: dict[str, list[Any]] = {
    "full_name": ["Dana Reeve", "José García"],
    "staff_id": ["AB1234"],
    "email": ["dana@example.org"],
    "destination": ["Leeds"],
    "departure_date": ["2025-03-01"],
    "return_date": ["2025-03-04"],
    "purpose": ["Conference"],
    "mode": ["car", "rail", "air"],
    "mileage": [120],
    "mileage_cost": [54.0],
    "ticket_reference": ["TR1234"],
    "accommodation": [180.0],
    "meals": [24.5],
    "total": [812.5, 300, 1204.5],
    "client_type": ["new", "returning"],
    "age": [34, 16],
    "phone": ["0123456789"],
    "referral": ["web"],
    "needs": ["help with forms"],
    "client_number": ["C12345"],
    "details_changed": [True, False],
}


def weighted(draw: st.DrawFn, *choices: tuple[int, st.SearchStrategy[Any]]) -> Any:
    """Draw from one of ``choices``, picked with the given weights (most calls are nearly right)."""
    pick = draw(st.integers(0, sum(w for w, _ in choices) - 1))
    for weight, strategy in choices:
        if pick < weight:
            return draw(strategy)
        pick -= weight
    raise AssertionError("unreachable")


@dataclass
class Ids:
    """The instance ids an example knows: the subject's own, another subject's."""

    mine: list[str] = field(default_factory=list)
    theirs: list[str] = field(default_factory=list)


# Strategies are made once, here or in the caches below, never inside a draw: hypothesis checks
# and measures a strategy it has not met before each time it draws from it, and strategies made
# afresh at every draw took a tenth of an example's CPU. The same strategies, drawn in the same
# order, draw the same examples.
_MADE_UP_IDS = st.sampled_from(["form_zzzzzzzz_000000", "form_mx0000aa_aaaaaa", "FORM_MINE"])
_PATH_LIKE = st.sampled_from(PATH_LIKE)


@st.composite
def instance_ids(draw: st.DrawFn, ids: Ids) -> Any:
    mine, theirs = _sampled(tuple(ids.mine)), _sampled(tuple(ids.theirs))
    return weighted(draw, (6, mine), (2, theirs), (1, _MADE_UP_IDS), (2, _PATH_LIKE), (1, json_values))


@functools.cache
def _sampled(choices: tuple[Any, ...]) -> st.SearchStrategy[Any]:
    return st.sampled_from(choices)


field_names = st.one_of(st.sampled_from(FIELD_IDS), st.sampled_from(NEAR_MISSES), texts)


_GOOD_VALUES = st.sampled_from(GOOD_VALUES)


@st.composite
def field_value(draw: st.DrawFn, name: Any) -> Any:
    good = GOOD_BY_FIELD.get(name) if isinstance(name, str) else None
    return weighted(draw, (6 if good else 0, _sampled(tuple(good or [None]))), (2, _GOOD_VALUES), (3, json_values))


# field_value of a name, made once per kind of name: a field of the example forms, or any other.
_FIELD_VALUES = {name: field_value(name) for name in GOOD_BY_FIELD}
_OTHER_FIELD_VALUE = field_value(None)
_KNOWN = st.sampled_from(FIELD_IDS)
_FILL_NAMES = st.lists(st.one_of(_KNOWN, _KNOWN, _KNOWN, field_names), max_size=6)


@st.composite
def fill_values(draw: st.DrawFn) -> Any:
    """Mostly ``{field: value}`` (with a wrong name or value among the right ones); sometimes not an object."""
    if draw(st.integers(0, 9)) == 0:
        return draw(json_values)
    names = draw(_FILL_NAMES)
    return {name: draw(_FIELD_VALUES.get(name, _OTHER_FIELD_VALUE)) for name in names}


# What each named parameter wants, but an instance id (which depends on the ids an example
# knows): built once, not at every draw (building and checking them again took a tenth of an example).
PARAMETERS: dict[str, st.SearchStrategy[Any]] = {
    "form": st.sampled_from(
        [
            "travel-claim",
            "travel-claim",
            "client-intake",
            "travel_claim",
            "Travel claim",
            "nope",
            "../forms/travel_claim",
            "travel-claim\x00",
            "travel-claim\udce9",
        ]
    ),
    "values": fill_values(),
    "field": field_names,
    "id": st.one_of(field_names, st.sampled_from(STEP_IDS)),
    "scope": st.sampled_from(["outline", "step", "field", "all", "OUTLINE", ""]),
    "action": st.sampled_from(["set", "set", "retract", "undo", "redo", "delete", "SET", ""]),
    "value": st.one_of(st.sampled_from(GOOD_VALUES), json_values),
    "reason": st.one_of(st.sampled_from(["changed their mind", "duplicate", "typo"]), texts),
    "subject": st.sampled_from([SUBJECT, OTHER, "", "*", "../sam", "dana\x00"]),
    "status": st.sampled_from(["active", "awaiting", "complete", "abandoned", "stale", "ACTIVE", ""]),
    "limit": st.one_of(st.integers(-5, 60), st.sampled_from(["10", 1.5, 10**30])),
}


def _parameter(name: str, instance_id: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A value for one named parameter, of the kind it wants (``instance_id``: an instance id's)."""
    if name == "instance_id":
        return instance_id
    return PARAMETERS.get(name, json_values)


_TOOL_NAMES = st.sampled_from(TOOL_NAMES)
_WRONG_TOOL_NAMES = st.sampled_from(
    ["form_fil", "FORM_FILL", "", "form_delete", "fill", "form_fill\udce9", "form_\x00"]
)
_USUAL, _MISSING, _EXTRA, _NOT_AN_OBJECT = (st.just(s) for s in ("usual", "missing", "extra", "not an object"))
_NOT_OBJECTS = st.one_of(st.none(), st.lists(scalars, max_size=3), texts, st.integers())
_EXTRA_KEYS = st.one_of(texts, st.sampled_from(["instanceId", "value", "id", "values", "force"]))
_EXTRA_ARGUMENTS = st.dictionaries(_EXTRA_KEYS, json_values, min_size=1, max_size=3)


@st.composite
def tool_calls(draw: st.DrawFn, ids: Ids) -> tuple[str, Any]:
    """One call a confused model might make: a tool name and its input, usually nearly right."""
    name = weighted(draw, (12, _TOOL_NAMES), (1, _WRONG_TOOL_NAMES))
    tool = _BY_NAME.get(name)
    params = list(tool.args.model_fields) if tool is not None else ["values", "instance_id"]
    required = [p for p in params if tool is not None and tool.args.model_fields[p].is_required()]
    shape = weighted(draw, (12, _USUAL), (2, _MISSING), (2, _EXTRA), (1, _NOT_AN_OBJECT))
    if shape == "not an object":
        return name, draw(_NOT_OBJECTS)
    chosen = [p for p in params if (p in required and shape != "missing") or draw(st.integers(0, 2)) == 0]
    arguments = {}
    instance_id = _instance_ids(tuple(ids.mine), tuple(ids.theirs))
    for p in chosen:
        # the right kind of value, or (one time in six) any JSON at all: a null, a number as text ...
        arguments[p] = weighted(draw, (5, _parameter(p, instance_id)), (1, json_values))
    if shape == "extra":
        arguments.update(draw(_EXTRA_ARGUMENTS))
    return name, arguments


@functools.cache
def _instance_ids(mine: tuple[str, ...], theirs: tuple[str, ...]) -> st.SearchStrategy[Any]:
    return instance_ids(Ids(mine=list(mine), theirs=list(theirs)))


# --------------------------------------------------------------------------- the store and the watch


@dataclass
class Finding:
    kind: str  # crash | loop error | envelope | not utf-8 json | write on error | version drop | lost capture | ...
    call: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail} (call: {self.call})"


@dataclass
class Tally:
    calls: int = 0
    errors: int = 0
    findings: list[Finding] = field(default_factory=list)
    by_tool: dict[str, list[int]] = field(default_factory=dict)  # name: [calls, successes]

    def count(self, kind: str) -> int:
        return sum(1 for f in self.findings if f.kind == kind)


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlist, _REPR.maxdict = 4, 120, 120, 8, 8


def _short(value: Any, limit: int = 300) -> str:
    text = _REPR.repr(value)  # bounded in depth: a 1,000-deep value has no plain repr
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"


def store_files(store: Path) -> dict[str, str]:
    """Every file of the store except the conversations (saved each turn, checked on their own): hashes."""
    found = {}
    for root, dirs, names in os.walk(store):
        dirs[:] = [d for d in dirs if d != "conversations"]
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as fh:
                found[os.path.relpath(path, store)] = hashlib.sha256(fh.read()).hexdigest()
    return found


def versions(store: Path) -> dict[str, int]:
    adapter = JsonFileAdapter(store)
    try:
        return {i.id: i.version for i in adapter.find_instances()}
    finally:
        adapter.close()


def _kind(value: Any) -> type:
    for kind in (bool, int, float, str, dict):  # bool first: True is an int too; a str enum is a str
        if isinstance(value, kind):
            return kind
    return list if isinstance(value, (list, tuple)) else type(value)


def same(a: Any, b: Any) -> bool:
    """JSON equality that tells 1 from 1.0 from True, and takes NaN as itself (a tuple is a list)."""
    if _kind(a) is not _kind(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def well_formed(envelope: Any) -> str | None:
    """Why ``envelope`` is not the tools' envelope, or None."""
    if not isinstance(envelope, dict):
        return f"not a dict: {type(envelope).__name__}"
    status = envelope.get("status")
    if status == "success":
        return None if set(envelope) == {"status", "data"} else f"success keys {sorted(envelope)}"
    if status != "error":
        return f"status {status!r}"
    if set(envelope) != {"status", "message", "data"}:
        return f"error keys {sorted(envelope)}"
    if not isinstance(envelope["message"], str) or not envelope["message"].strip():
        return "an error without a message"
    data = envelope["data"]
    if data is not None and not (isinstance(data, dict) and set(data) == {"code"} and isinstance(data["code"], str)):
        return f"error data {data!r}"
    return None


class FuzzModel:
    """Answers the loop with the planned tool calls, one reply per batch, then a word of text."""

    name = "fuzz"

    def __init__(self, batches: list[list[tuple[str, Any]]]) -> None:
        self._replies = [
            ModelReply(
                content=[
                    {"type": "tool_use", "id": f"call_{b}_{i}", "name": n, "input": a} for i, (n, a) in enumerate(batch)
                ],
                stop_reason="tool_use",
            )
            for b, batch in enumerate(batches)
        ]
        self._replies.append(ModelReply(content=[{"type": "text", "text": "Noted."}]))

    def respond(self, request: Any, on_text: Any = None) -> ModelReply:
        return self._replies.pop(0) if len(self._replies) > 1 else self._replies[0]


# A claim with every answer, under the cap: ``ready`` to be read back and sent (form_submit).
READY = {
    "full_name": "Dana Reeve",
    "staff_id": "AB1234",
    "email": "dana@example.org",
    "destination": "Leeds",
    "departure_date": "2025-03-01",
    "return_date": "2025-03-04",
    "purpose": "Conference",
    "mode": "rail",
    "ticket_reference": "TR1234",
    "accommodation": 180.0,
    "meals": 24.5,
    "total": 300,
}


# The same claim over the 750 cap: ``awaiting`` Finance's approval (form_withdraw takes it back).
AWAITING = READY | {"total": 900}


class World:
    """One example's store: the subject's instances (one open, maybe: just begun, ready to send,
    or waiting for approval), another subject's instance with a saved conversation of its own.

    The first world of each kind is made through the runner; the next ones are a copy of its
    files in a fresh folder (the store holds no path of its own), with the same instance ids.
    Each example still plays on a store of its own; only making it is cheaper (it took about
    a third of an example's CPU)."""

    def __init__(self, registry_file: Path, *, open_form: bool | str, closed: bool) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="formctl-fuzz-"))
        self.store = self.root / "store"
        self.registry_file = registry_file
        self.registry = _registry(registry_file)
        try:
            kind = (registry_file, open_form, closed)
            made = _MADE.get(kind)
            if made is None:
                self._populate(open_form, closed)
                _MADE[kind] = _Made.of(self)
            else:
                made.write(self)
        except BaseException:
            self.close()  # nothing left behind in /tmp, whatever stopped the example
            raise

    def _populate(self, open_form: bool | str, closed: bool) -> None:
        self.ids = Ids()
        host = FormRunner(JsonFileAdapter(self.store), registry=self.registry, subject=OTHER)
        theirs = host.start("client-intake", seed={"full_name": "Sam Jones", "age": 40}).view.instance_id
        self.ids.theirs.append(theirs)
        ConversationStore(self.store).save(theirs, THEIRS_SAID)
        mine = FormRunner(JsonFileAdapter(self.store), registry=self.registry, subject=SUBJECT)
        if closed:
            done = mine.start("client-intake", seed={"full_name": "Dana Reeve"}).view.instance_id
            mine.abandon("moved away", instance_id=done)
            self.ids.mine.append(done)
        if open_form:
            seed = {"ready": READY, "awaiting": AWAITING}.get(str(open_form), {"full_name": "Dana Reeve"})
            self.ids.mine.append(mine.start("travel-claim", seed=seed).view.instance_id)
        self.theirs_conversation = (self.store / "conversations" / f"{theirs}.jsonl").read_bytes()

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


@functools.cache
def _registry(registry_file: Path) -> FormRegistry:
    """One registry per file for every example: it compiles each form once, when first asked."""
    return FormRegistry.from_toml(registry_file)


@dataclass(frozen=True)
class _Made:
    """A world's files (path in the store, mode, bytes; None for a folder) and ids, to make it again."""

    mode: int  # the store folder's
    files: tuple[tuple[str, int, bytes | None], ...]
    mine: tuple[str, ...]
    theirs: tuple[str, ...]
    theirs_conversation: bytes

    @classmethod
    def of(cls, world: World) -> _Made:
        files: list[tuple[str, int, bytes | None]] = []
        for root, dirs, names in os.walk(world.store):
            for name in sorted(dirs):
                path = os.path.join(root, name)
                files.append((os.path.relpath(path, world.store), os.stat(path).st_mode & 0o777, None))
            for name in sorted(names):
                path = os.path.join(root, name)
                with open(path, "rb") as fh:
                    files.append((os.path.relpath(path, world.store), os.stat(path).st_mode & 0o777, fh.read()))
        mine, theirs = tuple(world.ids.mine), tuple(world.ids.theirs)
        return cls(os.stat(world.store).st_mode & 0o777, tuple(files), mine, theirs, world.theirs_conversation)

    def write(self, world: World) -> None:
        world.store.mkdir()
        world.store.chmod(self.mode)
        for relative, mode, content in self.files:  # a folder comes before what it holds
            path = world.store / relative
            if content is None:
                path.mkdir()
            else:
                path.write_bytes(content)
            path.chmod(mode)
        world.ids = Ids(mine=list(self.mine), theirs=list(self.theirs))
        world.theirs_conversation = self.theirs_conversation


_MADE: dict[tuple[Path, bool | str, bool], _Made] = {}


class Watch:
    """Runs one turn of planned calls through the chat loop and checks each call as it happens."""

    def __init__(self, world: World, tally: Tally) -> None:
        self.world = world
        self.tally = tally
        self.adapter = JsonFileAdapter(world.store)
        self.runner = FormRunner(self.adapter, registry=world.registry, subject=SUBJECT)
        self.conversations = ConversationStore(world.store)
        self._before: tuple[dict[str, str], dict[str, int]] | None = None
        self._read: dict[frozenset[tuple[str, str]], dict[str, int]] = {}  # store files: versions read
        self._call = ""
        self._input: Any = None

    def finding(self, kind: str, detail: str) -> None:
        self.tally.findings.append(Finding(kind, self._call, detail))

    def run(self, batches: list[list[tuple[str, Any]]], model: Any = None) -> None:
        loop = ChatLoop(
            self.runner,
            model if model is not None else FuzzModel(batches),
            conversation_store=self.conversations,
            on_event=self._event,
            max_iterations=len(batches) + 1,
        )
        self.allowed = {loop.instance_id} - {None}
        self.loop = loop
        try:
            loop.send("Hello")
        except BaseException as exc:  # noqa: BLE001 - the point: nothing may escape
            if isinstance(exc, KeyboardInterrupt):
                raise
            self.finding("crash", f"{type(exc).__name__}: {_short(str(exc))}")
        finally:
            self.adapter.close()
        self._after_turn()

    def _event(self, ev: Any) -> None:
        if isinstance(ev, ToolCall):
            self._call = f"{ev.name}({_short(ev.input, 200)})"
            self._input = ev.input
            files = store_files(self.world.store)
            self._before = (files, self._versions(files))
        elif isinstance(ev, ToolResult):
            self._check(ev)
        elif isinstance(ev, LoopError):
            self.finding("loop error", ev.message)

    def _check(self, ev: Any) -> None:
        self.tally.calls += 1
        envelope = ev.result
        counts = self.tally.by_tool.setdefault(ev.name if ev.name in TOOL_NAMES else "(no such tool)", [0, 0])
        counts[0] += 1
        counts[1] += isinstance(envelope, dict) and envelope.get("status") == "success"
        bad = well_formed(envelope)
        if bad is not None:
            self.finding("envelope", bad)
            return
        try:
            sent = tool_result_block(ev.id, envelope)["content"]
            back = json.loads(sent.encode("utf-8").decode("utf-8"))
            if not same(back, envelope):
                self.finding("not utf-8 json", "the text sent back reads as another envelope")
        except (UnicodeError, ValueError, TypeError) as exc:
            self.finding("not utf-8 json", f"{type(exc).__name__}: {_short(str(exc))}")
        files_before, versions_before = self._before or ({}, {})
        files_after = store_files(self.world.store)
        versions_after = self._versions(files_after)
        changed = sorted({path for path, _ in set(files_before.items()) ^ set(files_after.items())})
        if envelope["status"] == "error":
            self.tally.errors += 1
            if changed:
                self.finding("write on error", f"{envelope['message']} — changed {changed}")
        elif changed and ev.name in READS:
            self.finding("write on read", f"{ev.name} changed {changed}")
        for instance_id, version in versions_before.items():
            if versions_after.get(instance_id, -1) < version:
                self.finding("version drop", f"{instance_id}: {version} → {versions_after.get(instance_id)}")
        if envelope["status"] == "success":
            self._captured(ev.name, envelope["data"])
            data = envelope["data"]
            if ev.name == "form_start" and isinstance(data, dict):
                self.allowed.add(data.get("instance_id"))

    def _versions(self, files: dict[str, str]) -> dict[str, int]:
        """The instances' versions as a fresh adapter reads them from the store whose files are
        ``files``: read again only when a file has changed (most calls are refused and change
        nothing; reading every instance twice a call took a fifth of an example)."""
        key = frozenset(files.items())
        if key not in self._read:
            self._read[key] = versions(self.world.store)
        return self._read[key]

    def _captured(self, name: str, data: Any) -> None:
        """Every field a success says it captured holds, as a valid revision, a value this call sent for it."""
        if not isinstance(data, dict) or not data.get("captured"):
            return
        sent = self._input if isinstance(self._input, dict) else {}
        reader = JsonFileAdapter(self.world.store)
        try:
            instance = reader.get_instance(data.get("instance_id"))
        finally:
            reader.close()
        if instance is None:
            self.finding("lost capture", f"captured into {data.get('instance_id')!r}, which does not exist")
            return
        compiled = self.runner.compiled(instance.def_id)
        if name == "form_revise":
            offered = [(sent.get("field"), sent.get("value"))]
        else:
            values = sent.get("values")
            offered = list(values.items()) if isinstance(values, dict) else []
        for field_id in data["captured"]:
            candidates = [v for k, v in offered if compiled.resolve_field(k) == field_id]
            log = instance.entries.get(field_id)
            # the log keeps rejected values too (with their error): a capture is a value without one
            logged = [e.value for e in log.revisions if not e.retracted and e.error is None] if log else []
            if not any(same(c, v) for c in candidates for v in logged):
                self.finding("lost capture", f"{field_id}: sent {_short(candidates, 120)}, log {_short(logged, 120)}")

    def _after_turn(self) -> None:
        folder = self.world.store / "conversations"
        saved = {p.stem for p in folder.glob("*.jsonl")} if folder.exists() else set()
        theirs = set(self.world.ids.theirs)
        for stray in sorted(saved - self.allowed - theirs):
            self.finding("conversation under another id", stray)
        for instance_id in theirs:
            if (folder / f"{instance_id}.jsonl").read_bytes() != self.world.theirs_conversation:
                self.finding("conversation under another id", f"another subject's conversation {instance_id} changed")
        fresh = JsonFileAdapter(self.world.store)
        try:
            for instance in fresh.find_instances():
                if fresh.get_instance(instance.id) is None:
                    self.finding("unreadable", f"{instance.id} is listed but does not read")
            report = fresh.check()
            if not report.ok:
                self.finding("store check", "; ".join(str(p) for p in report.problems) or "the index does not match")
        except Exception as exc:  # noqa: BLE001
            self.finding("unreadable", f"{type(exc).__name__}: {_short(str(exc))}")
        finally:
            fresh.close()


_BATCHES = st.lists(
    st.lists(tool_calls(Ids(mine=["@mine"], theirs=["@theirs"])), min_size=1, max_size=3), min_size=1, max_size=4
)
_OPEN_FORM = st.sampled_from([False, True, "ready", "awaiting"])


@st.composite
def turns(draw: st.DrawFn) -> dict[str, Any]:
    """One example: how the store starts, and the batches of calls the model makes in one turn.

    Instance ids are drawn as placeholders (``@mine``, ``@theirs``) and made real by
    :func:`realise` once the world exists, so the same example replays against any store."""
    batches = draw(_BATCHES)
    open_form = draw(_OPEN_FORM)
    return {"open": open_form, "closed": draw(st.booleans()), "batches": batches}


def realise(node: Any, world: World) -> Any:
    """The example as played: instance-id placeholders made real, :class:`Huge` values built.
    Drawn examples are shallow (built values are never walked), so this recursion is bounded."""
    if isinstance(node, Huge):
        return node.build()
    if isinstance(node, str):
        if node == "@mine":
            return world.ids.mine[-1] if world.ids.mine else "form_gone0000_000000"
        return world.ids.theirs[0] if node == "@theirs" else node
    if isinstance(node, dict):
        return {realise(k, world): realise(v, world) for k, v in node.items()}
    if isinstance(node, list):
        return [realise(v, world) for v in node]
    return node


def play(example: dict[str, Any], registry_file: Path, tally: Tally, *, through: Any = None) -> None:
    """Run one example in a fresh store; findings go to ``tally``.

    ``through``: how the calls reach the loop. None: :class:`FuzzModel` hands them over as they
    are. Else a function of the batches giving a context manager that yields the model to use
    (:func:`through_openai`: as a Chat Completions server streams them, through the real SDK)."""
    world = World(registry_file, open_form=example["open"], closed=example["closed"])
    try:
        batches = [[(name, realise(arguments, world)) for name, arguments in batch] for batch in example["batches"]]
        if through is None:
            Watch(world, tally).run(batches)
        else:
            with through(batches) as model:
                Watch(world, tally).run(batches, model)
    finally:
        world.close()


# --------------------------------------------------------------------------- through a provider's wire


def arguments_text(arguments: Any, garble: int = 0) -> str:
    """A call's arguments as the text a Chat Completions server sends: their JSON, or (``garble``
    1-3, and for a value JSON cannot spell) text that is not valid JSON at all."""
    try:
        encoded = json.dumps(arguments)
    except (ValueError, TypeError, RecursionError):
        return '{"values": {'  # cut off, as a model that ran out of tokens mid-call sends it
    if garble == 1:
        return encoded[: max(1, len(encoded) // 2)]  # cut in half
    if garble == 2:
        return encoded.replace('"', "'")  # Python's quotes, not JSON's
    if garble == 3:
        return "```json\n" + encoded + "\n```"  # wrapped in a code fence
    return encoded


class OpenAIWire:
    """A loopback Chat Completions server and an ``OpenAIChatModel`` on it, for example after
    example: :meth:`through` scripts one example's batches as the server's replies and yields the
    model. Built once per test rather than per example: the SDK's HTTP client loads the system's
    CA certificates when it is made (about 0.1 s of CPU, more than the rest of an example).

    One call in four (by position) has its arguments garbled into text that is not JSON."""

    def __init__(self) -> None:
        from fake_openai import FakeOpenAI
        from formctl.agent.models.openai import OpenAIChatModel

        self.api = FakeOpenAI()
        self.model = OpenAIChatModel(
            "gpt-fuzz", api_key="sk-fuzz-0123456789", base_url=self.api.base_url, max_retries=0
        )

    @contextlib.contextmanager
    def through(self, batches: list[list[tuple[str, Any]]]) -> Iterator[Any]:
        from fake_openai import text, tool_use

        self.api.reset()  # replies an earlier example's turn did not get to are not this one's
        for b, batch in enumerate(batches):
            self.api.reply(
                *[
                    tool_use(name, id=f"call_{b}_{i}", arguments=arguments_text(arguments, (b + i) % 4 if i else 0))
                    for i, (name, arguments) in enumerate(batch)
                ]
            )
        self.api.reply(text("Noted."))
        yield self.model
        if self.api.rejected:
            raise AssertionError(f"the server refused a request: {self.api.rejected[0][1]}")

    def close(self) -> None:
        self.api.close()

    def __enter__(self) -> OpenAIWire:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


@contextlib.contextmanager
def through_openai(batches: list[list[tuple[str, Any]]]) -> Iterator[Any]:
    """:meth:`OpenAIWire.through` on a wire of its own, for one example."""
    with OpenAIWire() as wire, wire.through(batches) as model:
        yield model


# --------------------------------------------------------------------------- through the MCP server

OTHERS_WORDS = "Sam Jones"  # the other subject's name: no success result through the server may hold it
WIRE_DEPTH = 100  # levels of nesting an MCP client serialises (the SDK's serialiser stops well before 1,000)


def _nesting(value: Any) -> int:
    """How deeply ``value`` nests (lists and objects), counted without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            node = list(node.values())
        if isinstance(node, list):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in node)
    return deepest


def play_mcp(example: dict[str, Any], registry_file: Path, tally: Tally) -> None:
    """The example's calls made by an MCP client (the ``mcp`` SDK's own, in process) to ``formctl mcp``'s
    server for the subject, each checked as :class:`Watch` checks a chat's: no crash, a well-formed
    envelope, nothing written on an error, and no read across subjects (no success result holds the
    other subject's instance id or words). A call whose arguments are not an object is left out:
    MCP's ``arguments`` is an object by the protocol, and the client refuses anything else; so is
    one nested deeper than :data:`WIRE_DEPTH` levels, which the client cannot serialise to send. A
    lone surrogate (in a tool name or a value) is sent as U+FFFD, as the wire (UTF-8 JSON) cannot
    carry one."""
    import anyio

    world = World(registry_file, open_form=example["open"], closed=example["closed"])
    try:
        batches = [[(name, realise(arguments, world)) for name, arguments in batch] for batch in example["batches"]]
        anyio.run(_mcp_turn, world, batches, tally)
    finally:
        world.close()


async def _mcp_turn(world: World, batches: list[list[tuple[str, Any]]], tally: Tally) -> None:
    from mcp import Client

    from formctl.agent.models._sdk import sendable
    from formctl.cli.mcp import open_service
    from formctl.cli.mcp.server import build_server

    watch = Watch(world, tally)
    watch.allowed = set()
    service = open_service(SUBJECT, store=str(world.store), forms=str(world.registry_file))
    theirs = set(world.ids.theirs)
    try:
        async with Client(build_server(service)) as client:
            for b, batch in enumerate(batches):
                for i, (name, arguments) in enumerate(batch):
                    if not isinstance(arguments, dict) or _nesting(arguments) > WIRE_DEPTH:
                        continue
                    name, arguments = sendable(name), sendable(arguments)
                    call_id = f"mcp_{b}_{i}"
                    watch._event(ToolCall(call_id, name, arguments))
                    try:
                        result = await client.call_tool(name, arguments)
                        envelope = json.loads(result.content[0].text)
                    except Exception as exc:  # noqa: BLE001 - the point: nothing may escape
                        watch.finding("crash", f"{type(exc).__name__}: {_short(str(exc))}")
                        continue
                    watch._event(ToolResult(call_id, name, envelope, bool(result.is_error)))
                    if envelope.get("status") == "success":
                        text = result.content[0].text
                        leaked = [t for t in [*theirs, OTHERS_WORDS] if t in text]
                        if leaked:
                            watch.finding("read across subjects", f"{name} returned {leaked}")
    finally:
        service.runner.adapter.close()
        watch.adapter.close()
    watch._after_turn()
