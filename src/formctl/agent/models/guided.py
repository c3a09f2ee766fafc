"""The guided model: an offline, deterministic interviewer that needs no API key.

It speaks the same :class:`~formctl.agent.models.base.ChatModel` interface as the
Anthropic model and drives the same tools, so the chat loop, the transcripts and the
status bar cannot tell the two apart. A person's turn usually looks like this::

    user:      "Staff ID: AB1234; Work email: dana@example.org"
    assistant: [tool_use form_fill {"values": {"staff_id": "AB1234", "email": "dana@example.org"}}]
    user:      [tool_result {...}]  + the tier-0 line
    assistant: "Got it — Staff ID: AB1234; Work email: dana@example.org.\\nStep 2 of 4: Trip ..."

How it decides (all of it a function of the request and the stored instance, so the same
conversation always gives the same replies):

* **Planning** (the newest user turn holds the person's words): the words become tool
  calls. Commands are whole messages: ``undo``, ``back``, ``redo``, ``skip``, ``status``,
  ``what else``, ``help``, ``quit``/``stop``. Anything else is answers: ``Label: value``
  (or ``id: value``, ``id=value``) for any field, several per message separated by ``;``
  or new lines, and bare values for the question just asked (and, when there are
  several, the questions after it in the open step). Values are converted to the
  field's type here, because validation is strict (``"40"`` is not an integer), so a
  person can type ``£1,200``, ``40 miles``, ``yes``, ``Rail`` or ``3 Nov 2026``.
* **Speaking** (the newest user turn holds tool results): it reports what the results
  say (captured, held, rejected with the reason and hint, unknown ids with their
  did-you-mean), then reads the instance through the runner — never writing — to
  decide what to ask next, or to explain a wait, a termination or a completion.

Every write, and the first status read of a conversation, is a ``tool_use`` block;
reads done only to choose the next question go through the runner directly and leave no
trace in the transcript. The little state it keeps (fields skipped, the field just asked,
the step last announced, a counter for tool-use ids) only changes what it says, never what
it writes, and a fresh model over a restored conversation falls back to the form's own
order.

Decisions:

* **Optional fields left behind are asked for.** The engine moves to the next step as
  soon as a step's *required* fields are filled, so an optional field after them (a
  phone number, the miles driven when travelling by car) would never be asked. Before
  the open step's questions, it asks those leftovers of earlier steps once; ``skip``
  (or ``none``/``n/a``) passes over them.
* **Corrections use form_revise.** A ``Label: value`` for a field that already has an
  answer is sent as ``form_revise`` action=set (so history says "revision"), new values
  as one ``form_fill``.
* **Numbers it cannot read, dates it cannot place, options that match nothing** are
  answered locally ("I need one of car, rail or air") without a write: sending text the
  engine must reject would only add an invalid revision to the log. Values it can read
  but the form refuses (a pattern, a minimum) go to the engine, which rejects them with
  the reason it re-asks with.
* **Day/month order is never guessed.** ``03/11/2026`` is refused (it is 3 November in
  London and March 11 in New York); ISO dates and dates with a month name are accepted.
* **A terminated form is not restarted.** Once the conversation's instance is closed,
  it explains why and writes nothing more. A form that waits for Finance is never
  abandoned either; ``quit`` only says how to resume.
* **An open instance is resumed**, even a complete one, rather than starting a second
  one: ``form_start`` is called only when the subject has no open instance of the form.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field as dc_field
from datetime import date
from typing import Any

from formctl.agent.models.base import ModelError, ModelReply, ModelRequest, TextSink

__all__ = ["GuidedModel", "UnreadableAnswer", "convert_answer"]

TIER0_PREFIX = "[form: "

# Whole-message commands, after _command_key() (lower case, no punctuation, single spaces).
_COMMANDS: dict[str, str] = {
    "undo": "undo", "undo that": "undo", "undo last": "undo", "undo it": "undo",
    "back": "back", "go back": "back", "previous": "back", "back up": "back",
    "redo": "redo",
    "skip": "skip", "skip it": "skip", "skip this": "skip", "skip that": "skip", "pass": "skip",
    "next": "skip",
    "status": "status", "where are we": "status", "where am i": "status", "progress": "status",
    "what else": "what_else", "what else will you need": "what_else",
    "what else do you need": "what_else", "what else is there": "what_else",
    "whats left": "what_else", "what is left": "what_else", "whats next": "what_else",
    "what do you still need": "what_else", "what else do you need from me": "what_else",
    "help": "help", "commands": "help",
    "quit": "quit", "stop": "quit", "exit": "quit", "bye": "quit", "pause": "quit",
    "ill finish later": "quit", "later": "quit",
}
# Said for an optional field, these mean "leave it out".
_NONE_WORDS = {"none", "n/a", "na", "nothing", "-", "no", "nope", "not applicable", "leave it", "blank"}
# Said during a revisit, these mean "keep the answer you have".
_SAME_WORDS = {"same", "unchanged", "no change", "keep", "keep it", "still the same", "as before"}
_TRUE = {"yes", "y", "yeah", "yep", "yup", "true", "t", "correct", "affirmative", "sure"}
_FALSE = {"no", "n", "nope", "nah", "false", "f", "negative"}
_MONTHS = {
    "jan": 1, "january": 1, "feb": 2, "february": 2, "mar": 3, "march": 3, "apr": 4, "april": 4,
    "may": 5, "jun": 6, "june": 6, "jul": 7, "july": 7, "aug": 8, "august": 8,
    "sep": 9, "sept": 9, "september": 9, "oct": 10, "october": 10, "nov": 11, "november": 11,
    "dec": 12, "december": 12,
}
# A number not glued to letters or digits on its left ("AB1234" is not 1234), with
# thousands separators allowed ("1,200") and a unit or currency around it ("£900", "40 miles").
_NUMBER = re.compile(r"(?<![A-Za-z0-9.,])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\d])")
_LABELLED = re.compile(r"^\s*([^:=\n]{1,60}?)\s*[:=]\s*(.*?)\s*$", re.S)
_ISO_DATE = re.compile(r"^(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})$")
_DAY_MONTH_YEAR = re.compile(r"^(\d{1,2})(?:st|nd|rd|th)?(?:\s+of)?\s+([a-z]+)\.?,?\s+(\d{4})$")
_MONTH_DAY_YEAR = re.compile(r"^([a-z]+)\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})$")
_NUMERIC_DATE = re.compile(r"^(\d{1,2})[/.-](\d{1,2})[/.-](\d{2,4})$")

HELP_TEXT = (
    "Answer each question in your own words, or give any answer directly as "
    "\"Label: value\" (several at once separated by \";\"). You can also say: "
    "\"undo\" (take back your last answer), \"back\" (take it back and answer again), "
    "\"skip\" (leave out an optional question), \"status\" (where we are), "
    "\"what else\" (what's still to come) and \"quit\" (stop now and carry on later)."
)


# --------------------------------------------------------------------------- value conversion


@dataclass(frozen=True, slots=True)
class _Kind:
    """What a field's schema wants, read once from its JSON schema."""

    name: str  # integer | number | boolean | date | datetime | email | text | choice | json
    options: tuple[Any, ...] = ()


class UnreadableAnswer(ValueError):
    """The person's words could not be turned into the field's type; the message says what is needed."""


def _kind_of(schema: Any) -> _Kind:
    from formctl.forms.validate import adapter_for

    try:
        node = adapter_for(schema).json_schema(mode="validation")
    except Exception:
        return _Kind("text")
    defs = node.get("$defs", {}) if isinstance(node, dict) else {}
    return _kind_of_node(node, defs)


def _kind_of_node(node: Any, defs: dict[str, Any]) -> _Kind:
    if not isinstance(node, dict):
        return _Kind("json")
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _kind_of_node(defs.get(ref[len("#/$defs/"):], {}), defs)
    for key in ("anyOf", "oneOf"):
        branches = node.get(key)
        if isinstance(branches, list):
            rest = [b for b in branches if not (isinstance(b, dict) and b.get("type") == "null")]
            if len(rest) == 1:
                return _kind_of_node(rest[0], defs)
            return _Kind("json")
    if "enum" in node:
        return _Kind("choice", tuple(v for v in node["enum"] if v is not None))
    if "const" in node:
        return _Kind("choice", (node["const"],))
    kind = node.get("type")
    if kind == "integer":
        return _Kind("integer")
    if kind == "number":
        return _Kind("number")
    if kind == "boolean":
        return _Kind("boolean")
    if kind == "string":
        fmt = node.get("format")
        if fmt == "date":
            return _Kind("date")
        if fmt == "date-time":
            return _Kind("datetime")
        if fmt == "email":
            return _Kind("email")
        return _Kind("text")
    return _Kind("json")


def _or_list(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " or " + items[-1]


def _parse_number(text: str, integer: bool) -> int | float:
    found = _NUMBER.findall(text)
    if len(found) != 1:
        whole = " (a whole number)" if integer else ""
        raise UnreadableAnswer(f"I need a single number{whole}, like 40 or 1,200.")
    raw = found[0].replace(",", "")
    if len(raw) > 300:  # longer than any real answer, and past what int() and JSON will take
        raise UnreadableAnswer("That number is far too long; I need the number itself, like 40 or 1,200.")
    if "." in raw:
        value = float(raw)
        # A whole number written "40.0" is still a whole number; "40.5" is sent as it is,
        # and the engine's rejection says why it doesn't fit.
        return int(value) if integer and value.is_integer() else value
    return int(raw)


def _parse_date(text: str) -> str:
    t = " ".join(text.lower().replace(",", " ").split())
    if t in ("today", "tomorrow", "yesterday", "now"):
        # The model reads no clock, so the same words always mean the same date.
        raise UnreadableAnswer("Please give the date itself, like 2026-11-03 or 3 Nov 2026.")
    for pattern, order in ((_ISO_DATE, "ymd"), (_DAY_MONTH_YEAR, "dmy"), (_MONTH_DAY_YEAR, "mdy")):
        m = pattern.match(t)
        if not m:
            continue
        parts = dict(zip(order, m.groups()))
        month = parts["m"]
        month_number = int(month) if month.isdigit() else _MONTHS.get(month)
        if month_number is None:
            break
        try:
            return date(int(parts["y"]), month_number, int(parts["d"])).isoformat()
        except ValueError:
            raise UnreadableAnswer(f'"{text}" is not a real date.') from None
    if _NUMERIC_DATE.match(t):
        raise UnreadableAnswer(
            f'I can\'t tell whether "{text}" is day/month or month/day: '
            "please write it like 2026-11-03 or 3 Nov 2026."
        )
    raise UnreadableAnswer("I need a date, like 2026-11-03 or 3 Nov 2026.")


def _parse_choice(text: str, options: tuple[Any, ...]) -> Any:
    shown = [str(o) for o in options]
    wanted = text.strip().lower()
    exact = [o for o, s in zip(options, shown) if s.lower() == wanted]
    if exact:
        return exact[0]
    prefixed = [o for o, s in zip(options, shown) if wanted and s.lower().startswith(wanted)]
    if len(prefixed) == 1:
        return prefixed[0]
    # "by car", "rail, I think": exactly one option named as a word.
    words = set(re.findall(r"[a-z0-9]+", wanted))
    named = [o for o, s in zip(options, shown) if s.lower() in words]
    if len(named) == 1:
        return named[0]
    raise UnreadableAnswer(f"I need one of: {_or_list(shown)}.")


def _parse_boolean(text: str) -> bool:
    words = re.findall(r"[a-z]+", text.lower())
    if words and words[0] in _TRUE:
        return True
    if words and words[0] in _FALSE:
        return False
    raise UnreadableAnswer("I need a yes or a no.")


def _strip_quotes(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'`":
        return text[1:-1].strip()
    return text


def convert_answer(schema: Any, text: str) -> Any:
    """The JSON value a person's words mean for a field with this schema (annotation).

    ``convert_answer(Annotated[int, Field(ge=1)] | None, "40 miles") == 40``. Raises
    :class:`UnreadableAnswer` when the words can't be read as the type; constraints (a
    pattern, a minimum) are left to the engine, which says why a value doesn't fit.
    """
    return _convert(_kind_of(schema), text)


def _convert(kind: _Kind, text: str) -> Any:
    text = _strip_quotes(text)
    if kind.name == "integer":
        return _parse_number(text, integer=True)
    if kind.name == "number":
        return _parse_number(text, integer=False)
    if kind.name == "boolean":
        return _parse_boolean(text)
    if kind.name == "choice":
        return _parse_choice(text, kind.options)
    if kind.name == "date":
        return _parse_date(text)
    if kind.name == "email":
        cleaned = text.strip("<>").strip()
        return cleaned[len("mailto:"):] if cleaned.lower().startswith("mailto:") else cleaned
    if kind.name == "json":
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def _format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


# --------------------------------------------------------------------------- reading the request


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def _person_words(message: dict[str, Any]) -> str | None:
    """The person's words in a user turn, or None for a turn of tool results.

    The loop appends tier 0 (``[form: ...``) as the last text block of the newest user
    turn, so that block is not the person's. Normally one block is left: the words. After
    a failed model call the loop joins the next message onto the unanswered turn, so the
    newest words are the last block left, and those are the ones answered.
    """
    blocks = _blocks(message)
    has_results = any(b.get("type") == "tool_result" for b in blocks)
    texts = [b.get("text", "") for b in blocks if b.get("type") == "text"]
    if texts and texts[-1].startswith(TIER0_PREFIX):
        texts = texts[:-1]
    if has_results:
        # A turn of tool results is the person's only when words were joined onto it: a
        # turn cancelled (Ctrl-C) after its tools ran leaves their results unanswered, and
        # the person's next message lands in the same turn. Those words are answered.
        return texts[-1] if texts else None
    return texts[-1] if texts else ""


@dataclass(slots=True)
class _Result:
    ok: bool
    data: Any = None
    message: str = ""
    code: str | None = None


@dataclass(slots=True)
class _Turn:
    """The newest person turn of a request and the tool calls and results since."""

    words: str | None
    calls: list[dict[str, Any]]
    results: dict[str, _Result]
    conversation_started: bool  # an assistant turn came before the person's words
    instance_id: str | None  # the newest instance id any tool result named


def _parse_result(block: dict[str, Any]) -> _Result:
    content = block.get("content")
    if isinstance(content, list):  # Anthropic also allows a list of text blocks
        content = "".join(b.get("text", "") for b in content if isinstance(b, dict))
    try:
        envelope = json.loads(content) if isinstance(content, str) else content
    except ValueError:
        return _Result(False, message=str(content))
    if not isinstance(envelope, dict):
        return _Result(False, message=str(content))
    data = envelope.get("data")
    if envelope.get("status") == "success" and not block.get("is_error"):
        return _Result(True, data=data)
    code = data.get("code") if isinstance(data, dict) else None
    return _Result(False, data=data, message=str(envelope.get("message") or ""), code=code)


def _read_turn(messages: list[dict[str, Any]]) -> _Turn:
    start = None
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user" and _person_words(messages[i]) is not None:
            start = i
            break
    words = _person_words(messages[start]) if start is not None else None
    calls: list[dict[str, Any]] = []
    results: dict[str, _Result] = {}
    for message in messages[(start + 1) if start is not None else 0:]:
        for block in _blocks(message):
            if message.get("role") == "assistant" and block.get("type") == "tool_use":
                calls.append(block)
            elif block.get("type") == "tool_result":
                results[str(block.get("tool_use_id"))] = _parse_result(block)
    started = start is not None and any(m.get("role") == "assistant" for m in messages[:start])
    # The conversation's instance is the newest one a tool result named (form_history can
    # name other instances, so it doesn't count).
    names: dict[str, str] = {}
    instance_id = None
    for message in messages:
        for block in _blocks(message):
            if block.get("type") == "tool_use":
                names[str(block.get("id"))] = str(block.get("name"))
            elif block.get("type") == "tool_result" and names.get(str(block.get("tool_use_id"))) != "form_history":
                data = _parse_result(block).data
                if isinstance(data, dict) and isinstance(data.get("instance_id"), str):
                    instance_id = data["instance_id"]
    return _Turn(words, calls, results, started, instance_id)


def _command_key(words: str) -> str:
    text = words.strip().lower().lstrip("/")
    text = text.replace("'", "").replace("\u2019", "")
    text = re.sub(r"[^a-z0-9 ]+", " ", text)
    return " ".join(text.split())


# --------------------------------------------------------------------------- the model


@dataclass(slots=True)
class _Snapshot:
    """The instance as stored, read without writing: compiled form, instance, evaluation, open-step view."""

    compiled: Any
    instance: Any
    ev: Any
    view: Any
    stale: bool = False


@dataclass(slots=True)
class _Plan:
    """What the person asked for this turn, kept between the tool calls and the reply about them."""

    kind: str  # start | list | answers | undo | back | redo | skip | status | what_else | greet
    call_ids: tuple[str, ...] = ()
    problems: list[tuple[str, str, str]] = dc_field(default_factory=list)  # (field id, words, reason)
    unplaced: list[str] = dc_field(default_factory=list)
    unknown: list[str] = dc_field(default_factory=list)  # labels that name no question
    target: Any = None  # undo/back/redo: the MoveTarget; skip: the field id
    notes: list[str] = dc_field(default_factory=list)


class GuidedModel:
    """The offline interviewer. ``GuidedModel(runner, form_id="travel-claim")``."""

    name = "guided"

    def __init__(self, runner: Any, *, form_id: str | None = None) -> None:
        self.runner = runner
        self.form_id = form_id
        self._calls = 0
        self._plan: _Plan | None = None
        self._asked: str | None = None  # the field the last reply asked for
        self._asked_at: tuple[str, int] | None = None  # (instance id, version) when it was asked
        self._asked_known = False  # False until this model has replied once (a restored conversation)
        self._focus: str | None = None  # a field to ask before the form's own order (back, rejected)
        self._skipped: set[str] = set()
        self._announced: str | None = None  # the step last announced with "Step i of n"
        self._shown_failures: set[tuple[str, str]] = set()
        self._kinds: dict[tuple[str, int, str], _Kind] = {}
        self._summarised: tuple[str, int] | None = None  # the instance version last read back in full

    # ------------------------------------------------------------------ the interface

    def respond(self, request: ModelRequest, on_text: TextSink | None = None) -> ModelReply:
        try:
            reply = self._respond(request)
        except ModelError:
            raise
        except Exception as exc:  # the interface allows ModelError only
            raise ModelError(f"The guided model could not answer: {exc}") from exc
        if on_text is not None and reply.text:
            on_text(reply.text)
        return reply

    def _respond(self, request: ModelRequest) -> ModelReply:
        turn = _read_turn(request.messages)
        if not turn.calls:
            self._plan = None
            return self._plan_turn(turn)
        plan = self._plan
        if plan is None or plan.call_ids != tuple(str(c.get("id")) for c in turn.calls):
            # A conversation this model did not plan (restored from disk): report what the
            # results say and carry on in the form's own order.
            plan = _Plan(_generic_kind(turn.calls))
        self._plan = None
        return self._speak(turn, plan)

    # ------------------------------------------------------------------ replies

    def _tool_reply(self, plan: _Plan, calls: list[tuple[str, dict[str, Any]]]) -> ModelReply:
        blocks = []
        for name, tool_input in calls:
            self._calls += 1
            call_id = f"toolu_guided_{self._calls:04d}"
            blocks.append({"type": "tool_use", "id": call_id, "name": name, "input": tool_input})
        plan.call_ids = tuple(b["id"] for b in blocks)
        self._plan = plan
        return ModelReply(content=blocks, stop_reason="tool_use")

    def _text_reply(self, paragraphs: list[str]) -> ModelReply:
        self._asked_known = True
        text = "\n".join(p for p in paragraphs if p)
        return ModelReply(content=[{"type": "text", "text": text}], stop_reason="end_turn")

    # ------------------------------------------------------------------ reading the store

    def _read(self, instance_id: str | None) -> _Snapshot | None:
        from formctl.forms.evaluate import evaluate
        from formctl.forms.project import step_view

        instance = self.runner.open_instance(instance_id)
        if instance is None:
            return None
        compiled = self.runner.registry.load(instance.def_id)
        ev = evaluate(compiled, instance)
        stale = instance.status == "stale" or (
            instance.def_version != compiled.version and compiled.migrate is None
        )
        return _Snapshot(compiled, instance, ev, step_view(compiled, ev, instance), stale)

    def _kind(self, compiled: Any, field_id: str) -> _Kind:
        key = (compiled.id, compiled.version, field_id)
        if key not in self._kinds:
            self._kinds[key] = _kind_of(compiled.field_by_id[field_id].schema)
        return self._kinds[key]

    # ------------------------------------------------------------------ planning

    def _plan_turn(self, turn: _Turn) -> ModelReply:
        words = (turn.words or "").strip()
        snap = self._read(turn.instance_id)
        if snap is not None and turn.instance_id is None and self.form_id and snap.instance.def_id != self.form_id:
            snap = None  # the subject's open form is another form: start ours
        if snap is None:
            if turn.instance_id is not None:
                return self._text_reply(["I can't find this form any more, so there is nothing more to fill in here."])
            return self._plan_start(words)
        command = _COMMANDS.get(_command_key(words)) if words else None
        if command == "help":
            return self._text_reply([HELP_TEXT])
        if command == "quit":
            return self._text_reply([self._quit_text(snap)])
        if snap.instance.status == "abandoned":
            return self._text_reply([self._closed_text(snap)])
        if snap.stale:
            return self._text_reply([_STALE_TEXT])
        if not turn.conversation_started and command is None:
            # The first words of a conversation: read the status (the initial status read a
            # model makes), and write whatever labelled answers came with the greeting.
            values, corrections, plan = self._answers(snap, words, bare_allowed=False)
            if values or corrections:
                return self._plan_answers(plan, values, corrections)
            return self._tool_reply(_Plan("greet"), [("form_status", {})])
        if command == "status":
            return self._tool_reply(_Plan("status"), [("form_status", {})])
        if command == "what_else":
            return self._tool_reply(_Plan("what_else"), [("form_inspect", {"scope": "outline"})])
        if command in ("undo", "back", "redo"):
            return self._plan_move(snap, command)
        if command == "skip":
            return self._plan_skip(snap)
        asked = self._current_question(snap)
        values, corrections, plan = self._answers(snap, words, bare_allowed=asked is not None)
        if values or corrections:
            return self._plan_answers(plan, values, corrections)
        if plan.problems or plan.unplaced or plan.unknown:
            return self._text_reply(self._problem_paragraphs(snap, plan) + self._state_paragraphs(snap))
        # Nothing to write ("none" for an optional question, a greeting, "thanks", a message
        # while waiting): read the state again.
        return self._tool_reply(_Plan("check", notes=plan.notes), [("form_status", {})])

    def _plan_start(self, words: str) -> ModelReply:
        form_id = self.form_id
        if form_id is None:
            form_id = self._form_named(words)
            if form_id is None:
                return self._tool_reply(_Plan("list"), [("form_list", {})])
        tool_input: dict[str, Any] = {"form": form_id}
        plan = _Plan("start")
        try:
            compiled = self.runner.registry.load(form_id)
        except Exception:
            compiled = None
        if compiled is not None and words:
            values, corrections, plan = self._answers(_Snapshot(compiled, None, None, None), words, bare_allowed=False)
            plan.kind = "start"
            values.update(corrections)
            if values:
                tool_input["values"] = values
        return self._tool_reply(plan, [("form_start", tool_input)])

    def _form_named(self, words: str) -> str | None:
        from formctl.forms.compile import normalise

        if not words:
            return None
        wanted = normalise(words)
        for row in self.runner.list():
            if wanted in (normalise(row.get("id", "")), normalise(row.get("name", ""))):
                return row["id"]
        return None

    def _plan_move(self, snap: _Snapshot, command: str) -> ModelReply:
        if snap.instance.status == "awaiting":
            return self._tool_reply(
                _Plan("check", notes=["I can't change anything while the form is waiting."]), [("form_status", {})]
            )
        target = snap.view.redo if command == "redo" else snap.view.undo
        if target is None:
            what = "redo" if command == "redo" else "undo"
            return self._text_reply([f"There's nothing to {what}."] + self._state_paragraphs(snap))
        action = "redo" if command == "redo" else "undo"
        return self._tool_reply(
            _Plan(command, target=target), [("form_revise", {"action": action, "field": target.field})]
        )

    def _plan_skip(self, snap: _Snapshot) -> ModelReply:
        field_id = self._current_question(snap)
        if field_id is None:
            return self._text_reply(["There's no question to skip right now."] + self._state_paragraphs(snap))
        field = snap.compiled.field_by_id[field_id]
        if field.required:
            return self._text_reply(
                [f"{field.label} is required, so I can't skip it."] + self._state_paragraphs(snap, repeat=True)
            )
        self._skipped.add(field_id)
        if self._focus == field_id:
            self._focus = None
        return self._tool_reply(_Plan("skip", target=field_id), [("form_status", {})])

    def _plan_answers(self, plan: _Plan, values: dict[str, Any], corrections: dict[str, Any]) -> ModelReply:
        calls: list[tuple[str, dict[str, Any]]] = []
        if values:
            calls.append(("form_fill", {"values": values}))
        for field_id, value in corrections.items():
            calls.append(
                ("form_revise", {"action": "set", "field": field_id, "value": value, "reason": "corrected by the person"})
            )
        plan.kind = "answers"
        return self._tool_reply(plan, calls)

    def _answers(
        self, snap: _Snapshot, words: str, *, bare_allowed: bool
    ) -> tuple[dict[str, Any], dict[str, Any], _Plan]:
        """Split the person's words into new values, corrections of answered fields, and problems."""
        compiled = snap.compiled
        plan = _Plan("answers")
        first = self._current_question(snap) if bare_allowed and snap.instance is not None else None
        first_kind = self._kind(compiled, first).name if first is not None else "text"
        # (segment index, field id or unknown key, words, sent key); bare segments get their field below.
        labelled: list[tuple[int, str, str, str]] = []
        bare: list[tuple[int, str]] = []
        for index, segment in enumerate(_segments(words)):
            m = _LABELLED.match(segment)
            if m:
                key, value = m.group(1).strip(), m.group(2)
                field_id = compiled.resolve_field(key)
                if field_id is not None:
                    labelled.append((index, field_id, value, key))
                    continue
                if not any(ch.isdigit() for ch in key) and compiled.did_you_mean(key):
                    labelled.append((index, "", value, key))  # let the engine report it, with its suggestions
                    continue
                if first_kind not in ("text", "json") and re.fullmatch(r"[A-Za-z][A-Za-z _-]{0,40}", key):
                    # "Emial: x@y.org" is not an email address: it names a question that doesn't exist.
                    plan.unknown.append(key)
                    continue
            bare.append((index, segment))
        named = {fid for _, fid, _, _ in labelled if fid}
        targets: list[str] = []
        if bare and first is not None:
            if first not in named:
                targets.append(first)
            if compiled.field_by_id[first].step_id == (snap.view.step.id if snap.view.step else None):
                # Several bare answers fill the open step's questions in order; a leftover
                # question from an earlier step takes one answer.
                for row in snap.view.fields:
                    if row.ask and row.id not in named and row.id not in targets and row.id not in self._skipped:
                        targets.append(row.id)
        pairs = [(i, fid, text, key) for i, fid, text, key in labelled]
        for n, (index, segment) in enumerate(bare):
            if n < len(targets):
                pairs.append((index, targets[n], segment, ""))
            elif bare_allowed:
                plan.unplaced.append(segment)
        pairs.sort(key=lambda p: p[0])
        pairs = [(fid, text, key) for _, fid, text, key in pairs]
        values: dict[str, Any] = {}
        corrections: dict[str, Any] = {}
        for field_id, text, key in pairs:
            if not field_id:
                values[key] = text.strip()
                continue
            field = compiled.field_by_id[field_id]
            cleaned = text.strip()
            if not cleaned:
                continue  # "Phone:" with nothing after it: nothing to write
            status = snap.ev.status[field.order] if snap.ev is not None else "empty"
            if _command_key(cleaned) in _SAME_WORDS and status == "filled" and snap.ev is not None:
                corrections[field_id] = _jsonable(snap.ev.values[field_id])
                continue
            kind = self._kind(compiled, field_id)
            means_none = cleaned.lower() in _NONE_WORDS or _command_key(cleaned) in _NONE_WORDS | {"n a"}
            if means_none and kind.name == "choice" and any(str(o).lower() == cleaned.lower() for o in kind.options):
                means_none = False  # "none" can be an option of its own
            if not field.required and kind.name != "boolean" and means_none:
                self._skipped.add(field_id)
                plan.notes.append(f"Left out {field.label}.")
                continue
            try:
                if kind.name in ("text", "email") and not any(ch.isalnum() for ch in cleaned):
                    # "...", "?", "!!!": no letters or digits is not an answer to write (and a
                    # rejection would only add an invalid revision to the log).
                    raise UnreadableAnswer('that has no letters or numbers in it. Say "help" if you\'re stuck.')
                value = _convert(kind, cleaned)
            except UnreadableAnswer as exc:
                plan.problems.append((field_id, cleaned, str(exc)))
                self._focus = field_id
                continue
            if status in ("filled", "held"):
                corrections[field_id] = value  # a change to an answer given: a revision
            else:
                values[field_id] = value
        return values, corrections, plan

    # ------------------------------------------------------------------ choosing the question

    def _current_question(self, snap: _Snapshot) -> str | None:
        """The field the person is answering: the one last asked if it is still open, else the next one.

        If the form changed since the question was asked, by someone other than this model (the
        person's own ``/undo`` at the keyboard, or a host in another terminal), the question
        asked is no longer what the person sees as next: the answer goes to the next question.
        """
        if self._asked_known:
            changed = self._asked_at != (snap.instance.id, snap.instance.version)
            if self._asked is not None and changed and self._asked != self._next_question(snap):
                return self._next_question(snap)
            if self._asked is not None and self._askable(snap, self._asked):
                return self._asked
            if self._asked is None:
                return None
        return self._next_question(snap)

    def _askable(self, snap: _Snapshot, field_id: str) -> bool:
        field = snap.compiled.field_by_id.get(field_id)
        if field is None or snap.instance.status in ("abandoned", "awaiting"):
            return False
        row = next((r for r in snap.view.fields if r.id == field_id), None)
        if row is not None and row.ask:
            return True
        status = snap.ev.status[field.order]
        return bool(snap.ev.applicable[field.order]) and status in ("empty", "invalid")

    def _next_question(self, snap: _Snapshot) -> str | None:
        if snap.instance.status in ("abandoned", "awaiting") or snap.stale:
            return None
        if self._focus is not None:
            if self._askable(snap, self._focus):
                return self._focus
            self._focus = None
        ev, compiled = snap.ev, snap.compiled
        open_k = ev.open_step
        if open_k is not None and not ev.complete and not ev.revisiting:
            for field in compiled.fields:
                if field.step_index >= open_k:
                    break
                if (
                    not field.required
                    and field.id not in self._skipped
                    and ev.applicable[field.order]
                    and ev.status[field.order] in ("empty", "invalid")
                    and ev.step_complete[field.step_index]
                ):
                    return field.id
        for row in snap.view.fields:
            if row.ask and row.id not in self._skipped:
                return row.id
        return None

    # ------------------------------------------------------------------ speaking

    def _speak(self, turn: _Turn, plan: _Plan) -> ModelReply:
        paragraphs: list[str] = []
        errors = [turn.results[str(c.get("id"))] for c in turn.calls if str(c.get("id")) in turn.results]
        errors = [r for r in errors if not r.ok]
        if plan.kind == "list":
            return self._text_reply([self._list_text(turn)])
        if plan.kind == "start" and errors:
            return self._text_reply([f"I couldn't start the form: {errors[0].message}"])
        snap = self._read(turn.instance_id)
        if snap is None:
            message = errors[0].message if errors else "No form is open."
            return self._text_reply([f"I couldn't open the form: {message}"])
        compiled = snap.compiled
        labels = {f.id: f.label for f in compiled.fields}
        if plan.kind == "start":
            paragraphs.append(self._welcome(compiled, new=True))
        elif plan.kind == "greet":
            paragraphs.append(self._welcome(compiled, new=False, snap=snap))
        for call in turn.calls:
            result = turn.results.get(str(call.get("id")))
            if result is None:
                continue
            if not result.ok:
                paragraphs.append(self._error_text(result, snap))
                continue
            if call.get("name") in ("form_fill", "form_start", "form_revise") and isinstance(result.data, dict):
                if plan.kind in ("undo", "back", "redo") and plan.target is not None:
                    paragraphs.append(_move_text(plan.kind, plan.target, _sensitive(snap, plan.target.field)))
                    if plan.kind == "back":
                        self._focus = plan.target.field
                        self._skipped.discard(plan.target.field)
                paragraphs.extend(self._fill_report(result.data, labels, snap))
        paragraphs.extend(plan.notes)
        if plan.kind == "skip" and plan.target is not None:
            paragraphs.append(f"Skipped {labels.get(plan.target, plan.target)}.")
        paragraphs.extend(self._problem_paragraphs(snap, plan))
        if plan.kind == "what_else":
            paragraphs.append(self._what_else_text(turn, snap))
        if plan.kind == "status":
            paragraphs.append(self._status_text(snap))
        blocked = any(r.code == "form_blocked" for r in errors)
        paragraphs.extend(self._state_paragraphs(snap, repeat=plan.kind in ("what_else", "status"), waited=blocked))
        return self._text_reply(paragraphs)

    def _fill_report(self, data: dict[str, Any], labels: dict[str, str], snap: _Snapshot) -> list[str]:
        out = []
        values = {row.get("id"): row.get("value") for row in data.get("fields", []) if isinstance(row, dict)}
        captured = data.get("captured") or []
        if captured:
            parts = []
            for field_id in captured:
                value = values.get(field_id)
                if field_id not in values:
                    value = snap.ev.values.get(field_id) if snap.ev is not None else None
                shown = "(hidden)" if _sensitive(snap, field_id) else _format_value(_jsonable(value))
                parts.append(f"{labels.get(field_id, field_id)}: {shown}")
            out.append("Got it — " + "; ".join(parts) + ".")
        held = data.get("held") or []
        if held:
            names = _or_list([labels.get(f, f) for f in held]).replace(" or ", " and ")
            out.append(f"I've kept {names} for now, but it doesn't apply given the answers so far.")
        for row in data.get("rejected") or []:
            field_id = row.get("field", "")
            label = labels.get(field_id, field_id)
            reason = str(row.get("message", "")).rstrip(".")
            hint = row.get("hint")
            text = f"That {label} wasn't accepted: {reason}."
            if hint and hint not in text:
                text += f" {hint}"
            out.append(text)
            if field_id in labels:
                self._focus = field_id
        for row in data.get("unknown_fields") or []:
            sent = row.get("field", "")
            guesses = [labels.get(g, g) for g in row.get("did_you_mean") or []]
            text = f'There is no question called "{sent}"'
            text += f" — did you mean {_or_list(guesses)}?" if guesses else "."
            out.append(text)
        return out

    def _problem_paragraphs(self, snap: _Snapshot, plan: _Plan) -> list[str]:
        out = []
        for field_id, words, reason in plan.problems:
            field = snap.compiled.field_by_id[field_id]
            shown = "that" if field.sensitive else f'"{words}"'  # a near-miss of a secret is still secret
            out.append(f"I couldn't use {shown} for {field.label}: {reason}")
        for key in plan.unknown:
            out.append(f'There is no question called "{key}".')
        if plan.unplaced:
            out.append("I wasn't sure which question this answers: " + "; ".join(f'"{w}"' for w in plan.unplaced)
                       + '. You can say "Label: value".')
        return out

    def _state_paragraphs(self, snap: _Snapshot, *, repeat: bool = False, waited: bool = False) -> list[str]:
        """What happens now: a closure, a wait, the next question, or the summary of a finished form."""
        instance, compiled, ev = snap.instance, snap.compiled, snap.ev
        self._asked = None
        if instance.status == "abandoned":
            return [self._closed_text(snap)]
        if snap.stale:
            return [_STALE_TEXT]
        if instance.status == "awaiting":
            return [self._wait_text(snap)]
        out = []
        fresh = [f for f in snap.view.failures if (f.hook_id, f.message) not in self._shown_failures]
        for failure in (snap.view.failures if repeat else fresh):
            out.append(f"{_hook_name(failure.hook_id)} did not pass: {_sentence(failure.message)}")
            self._shown_failures.add((failure.hook_id, failure.message))
        field_id = self._next_question(snap)
        if field_id is not None:
            out.extend(self._question(snap, field_id))
            return out
        # A rejected blocking checkpoint keeps a fully answered form "active": only the
        # stored status says the form is really complete.
        if instance.status == "complete":
            if self._summarised == (instance.id, instance.version):
                out.append(f'The {compiled.name} is complete; nothing more is needed. '
                           'If anything is wrong, tell me as "Label: value".')
            else:
                out.append(self._summary(snap))
                self._summarised = (instance.id, instance.version)
            return out
        if snap.view.failures:
            out.append('To go on, change an answer with "Label: value" (or say "undo").')
            return out
        pending = [
            f.label for f in compiled.fields
            if f.required and ev.applicable[f.order] and ev.status[f.order] != "filled"
        ]
        if pending:
            out.append("Still needed: " + ", ".join(pending) + '. Give them as "Label: value".')
        else:
            out.append("There's nothing more to ask right now.")
        return out

    def _question(self, snap: _Snapshot, field_id: str) -> list[str]:
        compiled, ev = snap.compiled, snap.ev
        field = compiled.field_by_id[field_id]
        out = []
        step = compiled.steps[field.step_index]
        if ev.revisiting and ev.open_step == field.step_index and self._announced != f"revisit:{step.id}":
            out.append(f"We need to go back over {step.title}: please confirm or correct these answers.")
            self._announced = f"revisit:{step.id}"
        elif ev.open_step == field.step_index and self._announced not in (step.id, f"revisit:{step.id}"):
            heading = f"Step {step.index} of {len(compiled.steps)}: {step.title}."
            if step.ask:
                heading += f" {step.ask}"
            out.append(heading)
            self._announced = step.id
        kind = self._kind(compiled, field_id)
        choices = ""
        if kind.name == "choice":
            choices = " — " + _or_list([str(o) for o in kind.options])
        elif kind.name == "boolean":
            choices = " — yes or no"
        line = f"{field.label}{choices}?"
        helps = [h for h in (field.ask, field.hint) if h]
        if kind.name == "date" and not helps:
            helps.append("A date, like 2026-11-03.")
        if ev.status[field.order] == "filled" and field_id in ev.values:
            if field.sensitive:
                helps.append('It has an answer (hidden); say "same" to keep it.')
            else:
                helps.append(f'It is {_format_value(_jsonable(ev.values[field_id]))} now; say "same" to keep it.')
        elif not field.required:
            helps.append('Optional: say "skip" to leave it out.')
        if helps:
            line += " " + " ".join(_sentence(h) for h in helps)
        out.append(line)
        self._asked = field_id
        self._asked_at = (snap.instance.id, snap.instance.version)
        return out

    # ------------------------------------------------------------------ texts

    def _welcome(self, compiled: Any, *, new: bool, snap: _Snapshot | None = None) -> str:
        if new:
            text = f"Let's fill in the {compiled.name}."
            if compiled.description:
                text += f" It covers: {_lower_first(compiled.description)}"
                text = text if text.endswith(".") else text + "."
            return text + ' I\'ll ask one thing at a time. Say "help" at any point to see what else you can say.'
        answered = sum(1 for f in compiled.fields if snap is not None and snap.ev.status[f.order] == "filled")
        if answered:
            saved = "Your answer so far is saved." if answered == 1 else f"Your {answered} answers so far are saved."
            return f"Welcome back to the {compiled.name}. {saved}"
        return f"Let's carry on with the {compiled.name}."

    def _status_text(self, snap: _Snapshot) -> str:
        compiled, ev, instance = snap.compiled, snap.ev, snap.instance
        if instance.status in ("abandoned", "awaiting") or snap.stale:
            return ""
        if ev.open_step is None:
            return ""  # the summary of the finished form says it all
        step = compiled.steps[ev.open_step]
        rows = snap.view.fields
        done = [r.label for r in rows if r.status == "filled" and not r.ask]
        pending = [r.label for r in rows if r.ask and r.id not in self._skipped]
        text = f"We're on step {step.index} of {len(compiled.steps)}: {step.title}."
        if done:
            text += " Answered: " + ", ".join(done) + "."
        if pending:
            text += " Still to answer: " + ", ".join(pending) + "."
        return text

    def _what_else_text(self, turn: _Turn, snap: _Snapshot) -> str:
        outline = None
        for call in turn.calls:
            result = turn.results.get(str(call.get("id")))
            if call.get("name") == "form_inspect" and result is not None and result.ok:
                outline = result.data if isinstance(result.data, dict) else outline
        if outline is None:
            return "I couldn't read the outline just now."
        ev, compiled = snap.ev, snap.compiled
        open_k = ev.open_step
        parts = []
        if open_k is not None:
            step = compiled.steps[open_k]
            pending = [
                f.label for f in step.fields
                if ev.applicable[f.order] and ev.status[f.order] != "filled" and f.id not in self._skipped
            ]
            if pending:
                parts.append(f"In this step ({step.title}) I still need: {', '.join(pending)}.")
        later, omitted = [], False
        for summary in outline.get("steps") or []:
            step = compiled.step_by_id.get(summary.get("id"))
            if step is None or summary.get("complete"):
                continue
            k = step.index - 1
            if open_k is not None and k <= open_k:
                continue
            # Don't promise a step none of whose questions apply given the answers so far.
            if not any(ev.applicable[f.order] for f in step.fields):
                omitted = True
                continue
            collects = summary.get("collects")
            later.append(f"{summary.get('title')} ({collects})" if collects else str(summary.get("title")))
        if later:
            parts.append("After that: " + "; ".join(later) + ".")
        if omitted:
            parts.append("Depending on your answers there may be a little more.")
        if not parts:
            parts.append("Nothing else — this is the last of it.")
        return " ".join(parts)

    def _wait_text(self, snap: _Snapshot) -> str:
        instance, compiled = snap.instance, snap.compiled
        checkpoint = compiled.checkpoint_by_id.get(instance.blocked_on or "")
        message = checkpoint.wait_message if checkpoint is not None and checkpoint.wait_message else (
            f'The form is waiting on the "{instance.blocked_on}" check.'
        )
        # The wait message names who decides ("waiting for Finance to approve"); the
        # command is the same for every form, so say it.
        return (
            f"{_sentence(message)} Your answers are saved, but nothing can change until it is resolved: "
            f"the approver runs `formctl resolve {instance.id}` (or `formctl resolve {instance.id} --fail REASON` "
            "to turn it down). Message me again once that's done and we'll carry on."
        )

    def _closed_text(self, snap: _Snapshot) -> str:
        reason = snap.instance.closed_reason
        if reason:
            return (
                f"I'm sorry, we have to stop here: {_sentence(reason)} "
                "Your answers so far are kept, but there's nothing more to fill in."
            )
        return "This form has been closed, so there's nothing more to fill in. Your answers are kept."

    def _quit_text(self, snap: _Snapshot) -> str:
        instance = snap.instance
        if instance.status == "abandoned":
            return self._closed_text(snap)
        return (
            "No problem — everything you've answered is saved. "
            f"You can pick this up later with `formctl resume {instance.id}`."
        )

    def _summary(self, snap: _Snapshot) -> str:
        compiled, ev = snap.compiled, snap.ev
        lines = [f"That's everything — the {compiled.name} is complete. Here's what I have:"]
        for field in compiled.fields:
            if ev.applicable[field.order] and ev.status[field.order] == "filled" and field.id in ev.values:
                shown = "(hidden)" if field.sensitive else _format_value(_jsonable(ev.values[field.id]))
                lines.append(f"- {field.label}: {shown}")
        lines.append('If anything is wrong, tell me as "Label: value".')
        return "\n".join(lines)

    def _error_text(self, result: _Result, snap: _Snapshot) -> str:
        if result.code == "form_blocked":
            return "I can't change anything while the form is waiting."
        if result.code == "form_stale":
            return _STALE_TEXT
        return f"That didn't go through: {result.message}"

    def _list_text(self, turn: _Turn) -> str:
        rows = []
        for result in turn.results.values():
            if result.ok and isinstance(result.data, dict):
                rows = result.data.get("forms") or []
        if not rows:
            return "There are no forms to fill in."
        lines = ["Which form would you like to fill in? Reply with its name:"]
        for row in rows:
            lines.append(f"- {row.get('id')}: {row.get('name')}")
        return "\n".join(lines)


_STALE_TEXT = (
    "This form's definition changed since it was started, so it can't be continued here. "
    "Its answers are kept: `formctl export ID` shows them, and `formctl abandon ID --reason REASON` closes it."
)


def _generic_kind(calls: list[dict[str, Any]]) -> str:
    names = {c.get("name") for c in calls}
    if "form_start" in names:
        return "start"
    if "form_list" in names:
        return "list"
    if "form_inspect" in names:
        return "what_else"
    if names == {"form_status"}:
        return "status"
    return "answers"


def _segments(words: str) -> list[str]:
    return [s.strip() for s in re.split(r"[;\n]", words) if s.strip()]


def _move_text(kind: str, target: Any, sensitive: bool = False) -> str:
    verb = "Redone" if kind == "redo" else "Undone"
    if target.empties:
        return f"{verb}: {target.label} is empty again."
    if sensitive:  # as "Got it — PIN: (hidden)": a sensitive value is never shown
        which = "the answer you took back" if kind == "redo" else "its previous answer"
        return f"{verb}: {target.label} has {which} again (hidden)."
    return f"{verb}: {target.label} is back to {_format_value(_jsonable(target.value))}."


def _jsonable(value: Any) -> Any:
    from formctl.forms.validate import to_jsonable

    return to_jsonable(value)


def _sensitive(snap: _Snapshot, field_id: str) -> bool:
    field = snap.compiled.field_by_id.get(field_id)
    return bool(field is not None and field.sensitive)


def _hook_name(hook_id: str) -> str:
    kind, _, name = hook_id.partition(":")
    return f'The "{name}" check' if kind == "checkpoint" and name else f'"{hook_id}"'


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "?", "!")) else text + "."


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text
