"""Planning: what to do with the person's words this turn, as tool calls (or a local reply).

Commands are whole messages; anything else is answers, ``Label: value`` for any field or bare
values for the question just asked (and the open step's questions after it). A ``Label: value``
for a field that already has an answer is sent as ``form_revise`` action=set, so history says
"revision"; new values go as one ``form_fill``. Optional fields the engine moved past (it opens
the next step as soon as a step's required fields are filled) are asked once before the open
step's questions. An open instance is resumed rather than a second one started.

Functions of the model's state, the instance as stored and the person's turn, returning a
:class:`~formctl.agent.models.guided.state.Plan`: the tool calls to make, or a reply made
without tools. They record in the state only what decides the next question (a field skipped,
a field to ask first, a revisit's answers kept).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from formctl.agent.models.guided.answers import (
    NONE_WORDS,
    SAME_WORDS,
    Kind,
    UnreadableAnswer,
    declines,
    format_value,
    jsonable,
    reading_context,
)
from formctl.agent.models.guided.held import held_by_check
from formctl.agent.models.guided.natural import split_labels
from formctl.agent.models.guided.phrasing import HELP_TEXT, closed_text, quit_text, sentence, stale_text
from formctl.agent.models.guided.questions import (
    asked_moved_on,
    current_question,
    failed_step_check,
    revisit_now,
)
from formctl.agent.models.guided.revisit import SKIPPED, Revisit
from formctl.agent.models.guided.state import GuidedState, Plan, Snapshot, ToolCall
from formctl.agent.models.guided.understand import Bare, names_a_field, read_bare, reads_as
from formctl.agent.models.guided.values import Reading, ReadingContext, read_value
from formctl.agent.models.guided.values.numbers import says_none
from formctl.agent.models.guided.words import COMMANDS, LABELLED, Turn, command_key, segments
from formctl.agent.notices import read_notice
from formctl.forms.evaluate import EMPTY, FILLED, HELD, INVALID
from formctl.forms.lifecycle import Status, is_closed
from formctl.json_types import JsonObject, JsonValue

if TYPE_CHECKING:
    from formctl.forms.compile import CompiledField, CompiledForm

# At the read-back of a form ready to send: the words that send it, and those that hold it back.
_SEND_WORDS = {
    "yes",
    "y",
    "yes please",
    "yes send it",
    "send",
    "send it",
    "please send it",
    "submit",
    "submit it",
    "confirm",
    "confirmed",
    "correct",
    "all correct",
    "thats right",
    "thats correct",
    "looks good",
    "looks right",
    "go ahead",
    "ok",
    "okay",
    "sure",
    "yep",
    "yeah",
    "yes thats right",
    "yes all correct",
}
_CHANGE_WORDS = {"no", "n", "nope", "not yet", "wait", "hold on", "change", "change something", "not quite"}


def say(lead: list[str], *, problems: bool = False, then_state: bool = False, repeat: bool = False) -> Plan:
    """A reply made without tools: ``lead``, then the plan's problems, then what happens now."""
    return Plan("say", lead=lead, say_problems=problems, say_state=then_state, repeat=repeat)


def calling(plan: Plan, calls: list[ToolCall]) -> Plan:
    plan.calls = calls
    return plan


_GREETINGS = frozenset({"hello", "hi", "hey"})


def _greeting(words: str) -> bool:
    """Whether the message's first line is only a greeting ("Hello.", the chat's opening line)."""
    return words.split("\n", 1)[0].strip().rstrip(".!").lower() in _GREETINGS


def plan_turn(state: GuidedState, snap: Snapshot, turn: Turn) -> Plan:
    """What to do with the person's words in ``turn``, over the conversation's instance ``snap``."""
    words = (turn.words or "").strip()
    notice = read_notice(words)
    if notice is not None:
        # Not the person's words: the chat says the form changed under the conversation. Say
        # what changed, then answer the line that crossed the change (a bare answer to a
        # question that moved on is not used) or ask the question open now.
        state.preface = [sentence(notice.what)] if notice.what else []
        if notice.words is None:
            return say([], then_state=True)
        words = notice.words
    command = COMMANDS.get(command_key(words)) if words else None
    plan = _plan_command(state, snap, turn, words, command)
    if plan is not None:
        return plan
    return _plan_words(state, snap, words, command)


def _plan_command(state: GuidedState, snap: Snapshot, turn: Turn, words: str, command: str | None) -> Plan | None:
    """A command (help, status, undo, skip …), a greeting, or words that cannot be answers now
    (a closed form, a question that moved on); None when the words are answers to read."""
    if command == "help":
        return say([HELP_TEXT])
    if command == "quit":
        return say([quit_text(snap)])
    if is_closed(snap.instance):
        return say([closed_text(snap)])
    if snap.stale:
        return say([stale_text(snap.instance.id)])
    if (not turn.conversation_started or _greeting(words)) and command is None:
        # The first words of a conversation, or a greeting later on (a continued chat opens
        # with one, the host's seeds under it): read the status (the initial status read a
        # model makes), and write whatever labelled answers came with the greeting; a greeting
        # is never a bare answer to the question shown last.
        values, corrections, plan = read_answers(state, snap, words, bare_allowed=False)
        if values or corrections or plan.retract:
            return plan_answers(plan, values, corrections, words)
        return calling(Plan("greet"), [("form_status", {})])
    if command == "status":
        return calling(Plan("status"), [("form_status", {})])
    if command == "what_else":
        return calling(Plan("what_else"), [("form_inspect", {"scope": "outline"})])
    if command in ("undo", "back", "redo"):
        return plan_move(snap, command)
    if command == "withdraw":
        return plan_withdraw(snap)
    kept = plan_keep(state, snap, words)
    if kept is not None:
        return kept
    if command == "skip":
        return plan_skip(state, snap)
    if asked_moved_on(state, snap):
        return plan_moved_on(state, snap, words)
    return None


def _plan_words(state: GuidedState, snap: Snapshot, words: str, command: str | None) -> Plan:
    """The person's words as answers: the read-back's yes or no, then the answers read and written."""
    asked = current_question(state, snap)
    if snap.instance.status == Status.READY and asked is None and command is None:
        review = plan_review(state, snap, words)
        if review is not None:
            return review
    values, corrections, plan = read_answers(state, snap, words, bare_allowed=asked is not None)
    if (
        asked is None
        and not (values or corrections or plan.retract or plan.problems or plan.unknown)
        and (failed_step_check(snap.view) is not None or held_by_check(snap.view))
    ):
        # Held on a failed check ("Which answer should change?"): a bare line names
        # no answer, so it is said back as not used rather than passed over in silence.
        plan.unplaced.extend(s for s in segments(words) if not LABELLED.match(s))
    if plan.revisited:
        return plan_revisit(state, plan, values, corrections, words)
    if values or corrections or plan.retract:
        return plan_answers(plan, values, corrections, words)
    if plan.problems or plan.unplaced or plan.unknown or plan.asked_back or plan.needed:
        return _local(plan, [])
    # Nothing to write ("none" for an optional question, a greeting, "thanks", a message
    # while waiting): read the state again.
    return calling(Plan("check", notes=plan.notes), [("form_status", {})])


def _local(plan: Plan, lead: list[str]) -> Plan:
    """``plan`` (its problems found) as a reply without tools: ``lead``, the problems, what happens now."""
    plan.kind, plan.lead, plan.say_problems, plan.say_state = "say", lead, True, True
    return plan


def plan_moved_on(state: GuidedState, snap: Snapshot, words: str) -> Plan:
    """The form changed since the last question (not by this model) and that question is no
    longer the open one: a bare answer was given to a question that has moved on, so it is
    not used for any other. ``Label: value`` answers name their field and are taken."""
    values, corrections, plan = read_answers(state, snap, words, bare_allowed=False, gathering=False)
    bare = [s for s in segments(words) if not LABELLED.match(s)]
    if bare:
        shown = "; ".join(f'"{w}"' for w in bare)
        plan.notes.append(f"The form changed since I asked that, so I haven't used {shown}.")
    if values or corrections or plan.retract:
        return plan_answers(plan, values, corrections)
    return _local(plan, plan.notes)


def plan_start(state: GuidedState, words: str, form_id: str | None, compiled: CompiledForm | None) -> Plan:
    """Start the form (``form_id``, its ``compiled`` form when it could be read; None when the
    words named no form: list them), with the labelled answers that came with the first words."""
    if form_id is None:
        return calling(Plan("list"), [("form_list", {})])
    tool_input: JsonObject = {"form": form_id}
    plan = Plan("start")
    if compiled is not None and words:
        values, corrections, plan = read_answers(state, Snapshot(compiled, None, None, None), words, bare_allowed=False)
        plan.kind = "start"
        values.update(corrections)
        # A field only the person may give goes in a quoted form_fill after the start (a seed
        # carries no quotes, so formctl would have to ask about it).
        quoted = (
            {k: values.pop(k) for k in list(values) if compiled.field_by_id[k].source == "person"}
            if all(k in compiled.field_by_id for k in values)
            else {}
        )
        if values:
            tool_input["values"] = values
        if quoted:
            fill = {"values": quoted, "quotes": dict.fromkeys(quoted, words)}
            return calling(plan, [("form_start", tool_input), ("form_fill", fill)])
    return calling(plan, [("form_start", tool_input)])


def form_named(words: str, forms: list[JsonObject]) -> str | None:
    """The id of the form among ``forms`` (the runner's listing) that ``words`` name, or None."""
    from formctl.forms.compile import normalise

    if not words:
        return None
    wanted = normalise(words)
    for row in forms:
        if wanted in (normalise(row.get("id", "")), normalise(row.get("name", ""))):
            return str(row["id"])
    return None


def plan_review(state: GuidedState, snap: Snapshot, words: str) -> Plan | None:
    """At the read-back of a ready form: "yes" sends what was read back, "no" asks what to
    change; anything else (a "Label: value" correction) is an answer like any other.

    A "yes" sends only if nothing changed since the read-back (the person's own correction,
    a host's write): otherwise it reads back again, so what is sent is what was confirmed.
    """
    key = command_key(words)
    if key in _SEND_WORDS:
        if state.read_back == (snap.instance.id, snap.instance.version):
            return calling(Plan("submit"), [("form_submit", {})])
        changed = state.read_back is not None and state.read_back[0] == snap.instance.id
        lead = ["The answers changed since I read them back, so here they are again."] if changed else []
        return say(lead, then_state=True)
    if key in _CHANGE_WORDS:
        return say(
            [
                'What would you like to change? Tell me as "Label: value" '
                '(for example "Meals cost: 45"), then I\'ll read it all back again.'
            ]
        )
    return None


def plan_move(snap: Snapshot, command: str) -> Plan:
    """``undo``, ``back`` or ``redo``: the move the runner's view previews, or why there is none."""
    if snap.instance.status == Status.AWAITING:
        return calling(
            Plan("check", notes=["I can't change anything while the form is waiting."]), [("form_status", {})]
        )
    target = snap.view.redo if command == "redo" else snap.view.undo
    if target is None:
        what = "redo" if command == "redo" else "undo"
        return say([f"There's nothing to {what}."], then_state=True)
    action = "redo" if command == "redo" else "undo"
    return calling(Plan(command, target=target), [("form_revise", {"action": action, "field": target.field})])


def plan_withdraw(snap: Snapshot) -> Plan:
    """ "withdraw": the person takes back the request the form waits on (form_withdraw), so the
    answers can be corrected; the approval is asked again for the new ones."""
    if snap.instance.status != Status.AWAITING:
        return say(["There's no request waiting for approval to withdraw."], then_state=True)
    return calling(Plan("withdraw"), [("form_withdraw", {})])


def plan_keep(state: GuidedState, snap: Snapshot, words: str) -> Plan | None:
    """ "keep" after a refused correction of a good answer: the earlier answer back in force (the
    undo of the refused one). None when no such offer stands for this instance's field."""
    offer, state.keep_offer = state.keep_offer, None
    if offer is None or command_key(words) not in SAME_WORDS or offer[0] != snap.instance.id:
        return None
    field = snap.compiled.field_by_id.get(offer[1])
    target = snap.view.undo
    if field is None or snap.ev.status[field.order] != INVALID or target is None or target.field != field.id:
        return None
    return calling(Plan("undo", target=target), [("form_revise", {"action": "undo", "field": field.id})])


def plan_skip(state: GuidedState, snap: Snapshot) -> Plan:
    """``skip``: leave out the optional question asked (a required one is asked again)."""
    field_id = current_question(state, snap)
    if field_id is None:
        return say(["There's no question to skip right now."], then_state=True)
    field = snap.compiled.field_by_id[field_id]
    if field.required:
        return say([f"{field.label} is required, so I can't skip it."], then_state=True, repeat=True)
    revisit = revisit_now(state, snap)
    if revisit is not None and field_id in revisit.fields:
        plan = Plan("answers", revisited=True)
        if snap.ev.status[field.order] == FILLED and field_id in snap.ev.values:
            # Passing over a question that has an answer leaves the answer as it is ("same");
            # "none" is how it is left out.
            _keep(plan, revisit, field, jsonable(snap.ev.values[field_id]), "skip")
        else:
            revisit.answers[field_id] = SKIPPED
            plan.notes.append(f"Left out {field.label}.")
        return plan_revisit(state, plan, {}, {})
    state.skipped.add(field_id)
    if state.focus == field_id:
        state.focus = None
    return calling(Plan("skip", skipped=field_id), [("form_status", {})])


def plan_revisit(state: GuidedState, plan: Plan, values: JsonObject, corrections: JsonObject, words: str = "") -> Plan:
    """An answer for the step being gone over is written as it is given (read_answers); the
    answers kept ("same") are written only when nothing else was, after the step's last field,
    to end the engine's revisit, each quoted with the line it was read from (revisit.py)."""
    revisit = state.revisit
    quotes: dict[str, str] = {}
    if revisit is not None and revisit.next() is None:
        values = {**values, **revisit.values()}
        quotes = {f: q for f, q in revisit.quotes.items() if f in values}
        if not revisit.wrote:
            plan.notes = [n for n in plan.notes if not n.startswith("Kept")]  # the write's report says them
        state.revisit = None
    if values or corrections or plan.retract:
        return plan_answers(plan, values, corrections, words, quotes)
    return _local(plan, plan.notes)


def plan_answers(
    plan: Plan,
    values: JsonObject,
    corrections: JsonObject,
    words: str = "",
    quotes: dict[str, str] | None = None,
) -> Plan:
    """Write the answers read: new values in one ``form_fill``, corrections as ``form_revise``."""
    # Each value is quoted with the person's line it was read from, so its provenance is "said"
    # when the line holds it (and formctl asks the person when it does not).
    calls: list[ToolCall] = []
    if values:
        fill: JsonObject = {"values": values}
        if words or quotes:
            fill["quotes"] = {f: (quotes or {}).get(f, words) for f in values}
        calls.append(("form_fill", fill))
    for field_id, value in corrections.items():
        revise = {"action": "set", "field": field_id, "value": value, "reason": "corrected by the person"}
        if words:
            revise["quotes"] = {field_id: words}
        calls.append(("form_revise", revise))
    for field_id in plan.retract:
        calls.append(("form_revise", {"action": "retract", "field": field_id, "reason": "left out by the person"}))
    plan.kind = "answers"
    return calling(plan, calls)


def read_answers(
    state: GuidedState, snap: Snapshot, words: str, *, bare_allowed: bool, gathering: bool = True
) -> tuple[JsonObject, JsonObject, Plan]:
    """Split the person's words into new values, corrections of answered fields, and problems."""
    return _AnswerReader(state, snap, words, bare_allowed=bare_allowed, gathering=gathering).read()


# A part of the line that names its field: (part index, field id or "" for an unknown key, its
# words, the key as sent). Bare parts are (part index, words) until they are given a field.
_Labelled = tuple[int, str, str, str]
_Bare = tuple[int, str]


class _AnswerReader:
    """One reading of one line: which part answers which field, then each answer read in its
    field's type, into ``values`` (new answers), ``corrections`` (answers given before) and
    ``plan`` (problems, notes, fields left out). The steps share the line and what it found."""

    def __init__(self, state: GuidedState, snap: Snapshot, words: str, *, bare_allowed: bool, gathering: bool) -> None:
        self.state, self.snap, self.words = state, snap, words
        self.bare_allowed, self.gathering = bare_allowed, gathering
        self.compiled = snap.compiled
        self.plan = Plan("answers")
        self.first = current_question(state, snap) if bare_allowed and snap.maybe_instance is not None else None
        self.first_kind = state.kind(self.compiled, self.first).name if self.first is not None else "text"
        self.revisit: Revisit | None = None
        self.values: JsonObject = {}
        self.corrections: JsonObject = {}

    def read(self) -> tuple[JsonObject, JsonObject, Plan]:
        labelled, bare = self._parts()
        named = {fid for _, fid, _, _ in labelled if fid}
        if bare:
            # What the person is doing (a question back, "I don't know"), then the answers the line
            # gives, each to the field it is about (understand.py).
            found = Bare(self.first, bare, labelled, named, self.plan, self.gathering, self.words)
            bare = read_bare(self.state, self.snap, found)
        self.revisit = revisit_now(self.state, self.snap) if self.snap.maybe_instance is not None else None
        pairs = self._placed(labelled, bare, self._targets(bare, named))
        dates = _dates_given(self.state, self.snap, [(fid, text) for _, fid, text, _ in pairs if fid])
        for _, field_id, text, key in pairs:
            if not field_id:
                self.values[key] = text.strip()  # let the engine report it, with its suggestions
            elif text.strip():  # "Phone:" with nothing after it: nothing to write
                self._answer(self.compiled.field_by_id[field_id], text.strip(), dates)
        return self.values, self.corrections, self.plan

    # ------------------------------------------------------------ which part answers which field

    def _parts(self) -> tuple[list[_Labelled], list[_Bare]]:
        """The line's parts: those a label names (a field, or a key the engine will report), and
        the bare ones (their field is found next)."""
        compiled = self.compiled
        labelled: list[_Labelled] = []
        bare: list[_Bare] = []
        names = {name.lower(): f.id for f in compiled.fields for name in (f.id, f.label)}
        pieces = [piece for segment in segments(self.words) for piece in split_labels(segment, names)]
        for index, segment in enumerate(pieces):
            m = LABELLED.match(segment)
            if m is None:
                bare.append((index, segment))
                continue
            key, value = m.group(1).strip(), m.group(2)
            field_id = compiled.resolve_field(key)
            if field_id is not None:
                labelled.append((index, field_id, value, key))
            elif names_a_field(self.state, self.snap, key) and (len(key.split()) > 2 or not compiled.did_you_mean(key)):
                # "Wait, the return date's wrong: I came back on …", "FLIGHT REF: ZX91QP": a field
                # named in everyday words, read as the person's words (understand.py), not as a label.
                bare.append((index, segment))
            elif not any(ch.isdigit() for ch in key) and compiled.did_you_mean(key):
                labelled.append((index, "", value, key))  # let the engine report it, with its suggestions
            elif self.first_kind not in ("text", "json") and re.fullmatch(r"[A-Za-z][A-Za-z _-]{0,40}", key):
                # "Emial: x@y.org" is not an email address: it names a question that doesn't exist.
                self.plan.unknown.append(key)
            else:
                bare.append((index, segment))
        return labelled, bare

    def _targets(self, bare: list[_Bare], named: set[str]) -> list[str]:
        """The fields the bare parts answer, in order: the question asked, then the rest of the
        step gone over, or the open step's other questions."""
        first, revisit, snap = self.first, self.revisit, self.snap
        if not bare or first is None:
            return []
        if revisit is not None and first in revisit.fields:
            return [f for f in [first, *revisit.rest(first)] if f not in named]
        targets = [first] if first not in named else []
        if self.compiled.field_by_id[first].step_id == (snap.view.step.id if snap.view.step else None):
            # Several bare answers fill the open step's questions in order; a leftover
            # question from an earlier step takes one answer.
            for row in snap.view.fields:
                if row.ask and row.id not in named and row.id not in targets and row.id not in self.state.skipped:
                    targets.append(row.id)
        return targets

    def _placed(self, labelled: list[_Labelled], bare: list[_Bare], targets: list[str]) -> list[_Labelled]:
        """Every part with its field, in the line's order; a bare part no field is left for is said back."""
        pairs = list(labelled)
        for n, (index, segment) in enumerate(bare):
            if n < len(targets):
                pairs.append((index, targets[n], segment, ""))
            elif self.bare_allowed:
                self.plan.unplaced.append(segment)
        pairs.sort(key=lambda p: p[0])
        return pairs

    # ------------------------------------------------------------ one answer

    def _answer(self, field: CompiledField, cleaned: str, dates: JsonObject) -> None:
        """Read one part as ``field``'s answer: the same answer kept, a field left out, or a value."""
        snap, field_id = self.snap, field.id
        status = snap.ev.status[field.order] if snap.maybe_ev is not None else EMPTY
        going_over = self.revisit if self.revisit is not None and field_id in self.revisit.fields else None
        if self._same(field, cleaned, status, going_over):
            return
        kind = self.state.kind(self.compiled, field_id)
        # "I'd rather not give a phone number.": a refusal, not a value ("no thanks" at a yes/no
        # question is its answer, though).
        declined = declines(cleaned) and not reads_as(kind, cleaned)
        if declined and field.required:
            self.plan.notes.append(f"I understand, but {field.label} is required, so I can't leave it out.")
            self.state.focus = field_id
            return
        if not field.required and (declined or (kind.name != "boolean" and _means_none(kind, cleaned))):
            self._left_out(field, status, going_over)
            return
        reading = self._reading(field, kind, cleaned, dates)
        if reading is None:
            return
        value = reading.value
        if going_over is not None:
            # Going over a step, an answer is written as it is given, on every form, so what the
            # chat acknowledges is stored even if the conversation ends here (revisit.py).
            _written(self.plan, going_over, field_id, value, self.words)
        if status in (FILLED, HELD):
            self.corrections[field_id] = value  # a change to an answer given: a revision
            if status == FILLED and snap.maybe_ev is not None and field_id in snap.ev.values:
                self.plan.replaced[field_id] = jsonable(snap.ev.values[field_id])
        else:
            self.values[field_id] = value

    def _same(self, field: CompiledField, cleaned: str, status: str, going_over: Revisit | None) -> bool:
        """ "same": the answer in force stays (kept, on a step gone over; else written again as a
        correction), or an optional question gone over without an answer stays without one."""
        ev = self.snap.maybe_ev
        if command_key(cleaned) not in SAME_WORDS:
            return False
        if status == FILLED and ev is not None:
            if going_over is not None:
                _keep(self.plan, going_over, field, jsonable(ev.values[field.id]), self.words)
            else:
                self.corrections[field.id] = jsonable(ev.values[field.id])
            return True
        if status == EMPTY and going_over is not None and not field.required:
            going_over.answers[field.id] = SKIPPED
            self.plan.revisited = True
            self.plan.notes.append(f"Left out {field.label}.")
            return True
        return False

    def _left_out(self, field: CompiledField, status: str, going_over: Revisit | None) -> None:
        """An optional question the person leaves out ("none", "I'd rather not")."""
        plan, state = self.plan, self.state
        if status != EMPTY:
            # An answer is in force: "Left out" is true only once it is withdrawn (a
            # retraction, which undo takes back), so it is written now.
            plan.retract.append(field.id)
        if going_over is not None and status != EMPTY:
            _written(plan, going_over, field.id, SKIPPED, self.words)
        elif going_over is not None:
            going_over.answers[field.id] = SKIPPED
            plan.revisited = True
        else:
            state.skipped.add(field.id)
            if state.focus == field.id:
                state.focus = None  # asked again after a refused answer: left out now, not asked again
        plan.notes.append(f"Left out {field.label}.")

    def _reading(self, field: CompiledField, kind: Kind, cleaned: str, dates: JsonObject) -> Reading | None:
        """The value the words give in the field's type, or None when they give none (the
        problem is in the plan, and the field is asked again)."""
        try:
            if kind.name in ("text", "email") and not any(ch.isalnum() for ch in cleaned):
                # "...", "?", "!!!": no letters or digits is not an answer to write (and a
                # rejection would only add an invalid revision to the log).
                raise UnreadableAnswer('that has no letters or numbers in it. Say "help" if you\'re stuck.')
            given = {**dates, **self.values, **self.corrections}
            reading = read_value(kind, cleaned, _context(self.state, self.snap, field.id, given))
            if reading.none:  # "nothing" for a required amount
                raise UnreadableAnswer(f"{field.label} is required: I need the amount, like 40 or 1,200.")
        except UnreadableAnswer as exc:
            self.plan.problems.append((field.id, cleaned, str(exc)))
            self.state.focus = field.id
            return None
        self.plan.unplaced.extend(reading.rest)  # what else the line said is said back, never dropped
        if reading.note:
            self.plan.notes.append(reading.note)  # 'I read "the next day" as Friday 20 March 2026.'
        return reading


def _means_none(kind: Kind, cleaned: str) -> bool:
    """Do the words say there is no answer ("none", "n/a", "nope, no hotel")? Not when "none"
    is one of a choice's own options."""
    means_none = cleaned.lower() in NONE_WORDS or command_key(cleaned) in NONE_WORDS | {"n a"}
    # "nope, no hotel", "I stayed with friends, so nothing": no amount (values/numbers.py)
    means_none = means_none or (kind.name in ("integer", "number") and says_none(cleaned))
    if means_none and kind.name == "choice" and any(str(o).lower() == cleaned.lower() for o in kind.options):
        return False  # "none" can be an option of its own
    return means_none


def _dates_given(state: GuidedState, snap: Snapshot, answers: list[tuple[str, str]]) -> JsonObject:
    """The dates a line gives whole, by field, so a date said from another in the same line
    ("home the day after", "back the same day") is read from it, whichever is read first."""
    out: JsonObject = {}
    for field_id, text in answers:
        kind = state.kind(snap.compiled, field_id)
        if kind.name != "date":
            continue
        try:
            out[field_id] = read_value(kind, text.strip(), _context(state, snap, field_id, {})).value
        except UnreadableAnswer:
            continue  # read again in turn, which says why
    return out


def _context(state: GuidedState, snap: Snapshot, field_id: str, given: JsonObject) -> ReadingContext:
    """How a field's answer is read: the locale, and the date given before it (values/), in
    the form or earlier in the same line ("left on 12 March 2026, back the following day")."""
    values = {**(snap.ev.values if snap.maybe_ev is not None else {}), **given}
    started = snap.instance.created_at if snap.maybe_instance is not None else None
    return reading_context(state.locale, snap.compiled, values, field_id, started)


def _keep(plan: Plan, revisit: Revisit, field: CompiledField, value: JsonValue, said: str) -> None:
    """ "same" for a field of the step gone over: the answer in force stays (nothing to write)."""
    revisit.answers[field.id] = value
    revisit.quotes[field.id] = said
    revisit.kept.add(field.id)
    plan.revisited = True
    shown = "(hidden)" if field.sensitive else format_value(value)
    plan.notes.append(f"Kept — {field.label}: {shown}.")


def _written(plan: Plan, revisit: Revisit, field_id: str, value: JsonValue, said: str) -> None:
    """An answer for the step gone over that this turn writes (the write's report says it); the
    rest of the step is still asked after the write ends the engine's revisit (revisit.py)."""
    revisit.answers[field_id] = value
    revisit.quotes[field_id] = said
    revisit.kept.discard(field_id)
    revisit.wrote = True
    plan.revisited = True
