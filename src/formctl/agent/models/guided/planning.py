"""Planning: what to do with the person's words this turn, as tool calls (or a local reply).

Commands are whole messages; anything else is answers, ``Label: value`` for any field or bare
values for the question just asked (and the open step's questions after it). A ``Label: value``
for a field that already has an answer is sent as ``form_revise`` action=set, so history says
"revision"; new values go as one ``form_fill``. Optional fields the engine moved past (it opens
the next step as soon as a step's required fields are filled) are asked once before the open
step's questions. An open instance is resumed rather than a second one started.

:class:`Planning` is one half of :class:`~formctl.agent.models.guided.model.GuidedModel`; the
state it reads and keeps (the field asked, fields skipped, a field to ask first) lives there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

from formctl.agent.models.base import ModelReply
from formctl.agent.models.guided.answers import (
    _NONE_WORDS,
    _SAME_WORDS,
    UnreadableAnswer,
    _convert,
    _format_value,
    _jsonable,
)
from formctl.agent.models.guided.natural import place, split_labels
from formctl.agent.models.guided.phrasing import _STALE_TEXT, HELP_TEXT, _sentence, failed_step_check
from formctl.agent.models.guided.revisit import SKIPPED, revisit_of
from formctl.agent.models.guided.words import _COMMANDS, _LABELLED, _command_key, _segments, _Turn
from formctl.agent.notices import read_notice


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
    revisited: bool = False  # answers were kept for the step being gone over (see revisit.py)


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


class Planning:
    """Turns the person's words into tool calls; mixed into GuidedModel."""

    def _plan_turn(self, turn: _Turn) -> ModelReply:
        words = (turn.words or "").strip()
        snap = self._read(turn.instance_id)
        if snap is not None and turn.instance_id is None and self.form_id and snap.instance.def_id != self.form_id:
            snap = None  # the subject's open form is another form: start ours
        if snap is None:
            if turn.instance_id is not None:
                return self._text_reply(["I can't find this form any more, so there is nothing more to fill in here."])
            return self._plan_start(words)
        notice = read_notice(words)
        if notice is not None:
            # Not the person's words: the chat says the form changed under the conversation. Say
            # what changed, then answer the line that crossed the change (a bare answer to a
            # question that moved on is not used) or ask the question open now.
            self._preface = [_sentence(notice.what)] if notice.what else []
            if notice.words is None:
                self._asked = None
                return self._text_reply(self._state_paragraphs(snap))
            words = notice.words
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
                return self._plan_answers(plan, values, corrections, words)
            return self._tool_reply(_Plan("greet"), [("form_status", {})])
        if command == "status":
            return self._tool_reply(_Plan("status"), [("form_status", {})])
        if command == "what_else":
            return self._tool_reply(_Plan("what_else"), [("form_inspect", {"scope": "outline"})])
        if command in ("undo", "back", "redo"):
            return self._plan_move(snap, command)
        if command == "skip":
            return self._plan_skip(snap)
        if self._asked_moved_on(snap):
            return self._plan_moved_on(snap, words)
        asked = self._current_question(snap)
        if snap.instance.status == "ready" and asked is None and command is None:
            review = self._plan_review(snap, words)
            if review is not None:
                return review
        values, corrections, plan = self._answers(snap, words, bare_allowed=asked is not None)
        if (
            asked is None
            and not (values or corrections or plan.problems or plan.unknown)
            and failed_step_check(snap.view) is not None
        ):
            # Held on a step's failed check ("Which answer should change?"): a bare line names
            # no answer, so it is said back as not used rather than passed over in silence.
            plan.unplaced.extend(s for s in _segments(words) if not _LABELLED.match(s))
        if plan.revisited:
            return self._plan_revisit(snap, plan, values, corrections, words)
        if values or corrections:
            return self._plan_answers(plan, values, corrections, words)
        if plan.problems or plan.unplaced or plan.unknown:
            return self._text_reply(self._problem_paragraphs(snap, plan) + self._state_paragraphs(snap))
        # Nothing to write ("none" for an optional question, a greeting, "thanks", a message
        # while waiting): read the state again.
        return self._tool_reply(_Plan("check", notes=plan.notes), [("form_status", {})])

    def _plan_moved_on(self, snap: _Snapshot, words: str) -> ModelReply:
        """The form changed since the last question (not by this model) and that question is no
        longer the open one: a bare answer was given to a question that has moved on, so it is
        not used for any other. ``Label: value`` answers name their field and are taken."""
        values, corrections, plan = self._answers(snap, words, bare_allowed=False)
        bare = [s for s in _segments(words) if not _LABELLED.match(s)]
        if bare:
            shown = "; ".join(f'"{w}"' for w in bare)
            plan.notes.append(f"The form changed since I asked that, so I haven't used {shown}.")
        if values or corrections:
            return self._plan_answers(plan, values, corrections)
        self._asked = None
        return self._text_reply(plan.notes + self._problem_paragraphs(snap, plan) + self._state_paragraphs(snap))

    def _plan_start(self, words: str) -> ModelReply:
        form_id = self.form_id
        if form_id is None:
            form_id = self._form_named(words)
            if form_id is None:
                return self._tool_reply(_Plan("list"), [("form_list", {})])
        tool_input: dict[str, Any] = {"form": form_id}
        plan = _Plan("start")
        try:
            compiled = self.runner.compiled(form_id)
        except Exception:
            compiled = None
        if compiled is not None and words:
            values, corrections, plan = self._answers(_Snapshot(compiled, None, None, None), words, bare_allowed=False)
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
                return self._tool_reply(plan, [("form_start", tool_input), ("form_fill", fill)])
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

    def _plan_review(self, snap: _Snapshot, words: str) -> ModelReply | None:
        """At the read-back of a ready form: "yes" sends what was read back, "no" asks what to
        change; anything else (a "Label: value" correction) is an answer like any other.

        A "yes" sends only if nothing changed since the read-back (the person's own correction,
        a host's write): otherwise it reads back again, so what is sent is what was confirmed.
        """
        key = _command_key(words)
        if key in _SEND_WORDS:
            if self._read_back == (snap.instance.id, snap.instance.version):
                return self._tool_reply(_Plan("submit"), [("form_submit", {})])
            changed = self._read_back is not None and self._read_back[0] == snap.instance.id
            lead = ["The answers changed since I read them back, so here they are again."] if changed else []
            return self._text_reply(lead + self._state_paragraphs(snap))
        if key in _CHANGE_WORDS:
            return self._text_reply(
                [
                    'What would you like to change? Tell me as "Label: value" '
                    '(for example "Meals cost: 45"), then I\'ll read it all back again.'
                ]
            )
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
        revisit = self._revisit_now(snap)
        if revisit is not None and field_id in revisit.fields:
            revisit.answers[field_id] = SKIPPED
            plan = _Plan("answers", revisited=True, notes=[f"Left out {field.label}."])
            return self._plan_revisit(snap, plan, {}, {})
        self._skipped.add(field_id)
        if self._focus == field_id:
            self._focus = None
        return self._tool_reply(_Plan("skip", target=field_id), [("form_status", {})])

    def _revisit_now(self, snap: _Snapshot) -> Any:
        """The revisit under way (a step the engine went back to), kept on the model; or None."""
        self._revisit = revisit_of(self._revisit, snap)
        return self._revisit

    def _plan_revisit(
        self, snap: _Snapshot, plan: _Plan, values: dict[str, Any], corrections: dict[str, Any], words: str = ""
    ) -> ModelReply:
        """Answers for the step being gone over are kept until its last field has one; then they
        are written together, with anything else said, in one fill (so the form completes once),
        each quoted with the line it was read from."""
        revisit = self._revisit
        quotes: dict[str, str] = {}
        if revisit is not None and revisit.next() is None:
            values = {**values, **revisit.values()}
            quotes = {f: q for f, q in revisit.quotes.items() if f in values}
            self._revisit = None
            plan.notes = [n for n in plan.notes if not n.startswith(("Noted", "Kept"))]
        if values or corrections:
            return self._plan_answers(plan, values, corrections, words, quotes)
        return self._text_reply(plan.notes + self._problem_paragraphs(snap, plan) + self._state_paragraphs(snap))

    def _plan_answers(
        self,
        plan: _Plan,
        values: dict[str, Any],
        corrections: dict[str, Any],
        words: str = "",
        quotes: dict[str, str] | None = None,
    ) -> ModelReply:
        # Each value is quoted with the person's line it was read from, so its provenance is "said"
        # when the line holds it (and formctl asks the person when it does not).
        calls: list[tuple[str, dict[str, Any]]] = []
        if values:
            fill: dict[str, Any] = {"values": values}
            if words or quotes:
                fill["quotes"] = {f: (quotes or {}).get(f, words) for f in values}
            calls.append(("form_fill", fill))
        for field_id, value in corrections.items():
            revise = {"action": "set", "field": field_id, "value": value, "reason": "corrected by the person"}
            if words:
                revise["quotes"] = {field_id: words}
            calls.append(("form_revise", revise))
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
        names = {name.lower(): f.id for f in compiled.fields for name in (f.id, f.label)}
        pieces = [piece for segment in _segments(words) for piece in split_labels(segment, names)]
        for index, segment in enumerate(pieces):
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
        if bare and first is not None and first not in named and snap.ev is not None:
            bare = self._place_natural(snap, first, bare, labelled, named, plan)
        targets: list[str] = []
        revisit = self._revisit_now(snap) if snap.instance is not None else None
        if bare and first is not None and revisit is not None and first in revisit.fields:
            targets = [f for f in [first, *revisit.rest(first)] if f not in named]
        elif bare and first is not None:
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
            going_over = revisit is not None and field_id in revisit.fields
            if _command_key(cleaned) in _SAME_WORDS and status == "filled" and snap.ev is not None:
                if going_over:
                    self._keep(plan, revisit, field, _jsonable(snap.ev.values[field_id]), "Kept", words)
                    continue
                corrections[field_id] = _jsonable(snap.ev.values[field_id])
                continue
            kind = self._kind(compiled, field_id)
            means_none = cleaned.lower() in _NONE_WORDS or _command_key(cleaned) in _NONE_WORDS | {"n a"}
            if means_none and kind.name == "choice" and any(str(o).lower() == cleaned.lower() for o in kind.options):
                means_none = False  # "none" can be an option of its own
            if not field.required and kind.name != "boolean" and means_none:
                if going_over:
                    revisit.answers[field_id] = SKIPPED
                    plan.revisited = True
                else:
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
            if going_over:
                self._keep(plan, revisit, field, value, "Noted", words)
            elif status in ("filled", "held"):
                corrections[field_id] = value  # a change to an answer given: a revision
            else:
                values[field_id] = value
        return values, corrections, plan

    def _place_natural(
        self,
        snap: _Snapshot,
        first: str,
        bare: list[tuple[int, str]],
        labelled: list[tuple[int, str, str, str]],
        named: set[str],
        plan: _Plan,
    ) -> list[tuple[int, str]]:
        """The first bare part read as a natural answer (natural.py): what fits a field for sure is
        placed, the asked field takes free text only if nothing else answered it, the rest is said
        back as not used. Returns the bare parts still to place the usual way."""
        ev, compiled = snap.ev, snap.compiled
        kinds = {
            f.id: self._kind(compiled, f.id)
            for f in compiled.fields
            if f.id not in named and ev.applicable[f.order] and ev.status[f.order] in ("empty", "invalid")
        }
        kinds[first] = self._kind(compiled, first)
        index, segment = bare[0]
        placed = place(segment, first, kinds)
        if placed is None:
            return bare
        for field_id, raw in placed.values.items():
            labelled.append((index, field_id, raw, ""))
            named.add(field_id)
        plan.unplaced.extend(placed.leftover)
        return bare[1:]

    def _keep(self, plan: _Plan, revisit: Any, field: Any, value: Any, verb: str, said: str) -> None:
        revisit.answers[field.id] = value
        revisit.quotes[field.id] = said
        if verb == "Kept":
            revisit.kept.add(field.id)
        else:
            revisit.kept.discard(field.id)
        plan.revisited = True
        shown = "(hidden)" if field.sensitive else _format_value(value)
        plan.notes.append(f"{verb} — {field.label}: {shown}.")

    # ------------------------------------------------------------------ choosing the question

    def _asked_moved_on(self, snap: _Snapshot) -> bool:
        """Did someone other than this model (the person's ``/undo`` at the keyboard, a host in
        another terminal) change the form since the last question, so that it is no longer next?"""
        if not self._asked_known or self._asked is None:
            return False
        changed = self._asked_at != (snap.instance.id, snap.instance.version)
        return changed and self._asked != self._next_question(snap)

    def _current_question(self, snap: _Snapshot) -> str | None:
        """The field the person is answering: the one last asked if it is still open, else the next one."""
        if self._asked_known:
            if self._asked is not None and self._asked_moved_on(snap):
                return self._next_question(snap)
            if self._asked is not None and self._askable(snap, self._asked):
                return self._asked
            if self._asked is None:
                return None
        return self._next_question(snap)

    def _askable(self, snap: _Snapshot, field_id: str) -> bool:
        field = snap.compiled.field_by_id.get(field_id)
        if field is None or field.source == "host" or snap.instance.status in ("abandoned", "awaiting"):
            return False  # a host-only field is never asked in the conversation
        row = next((r for r in snap.view.fields if r.id == field_id), None)
        if row is not None and row.ask:
            return True
        status = snap.ev.status[field.order]
        return bool(snap.ev.applicable[field.order]) and status in ("empty", "invalid")

    def _next_question(self, snap: _Snapshot) -> str | None:
        if snap.instance.status in ("abandoned", "awaiting") or snap.stale:
            return None
        revisit = self._revisit_now(snap)
        if revisit is not None:
            return revisit.next()  # every field of the step gone over, in order (revisit.py)
        if self._focus is not None:
            if self._askable(snap, self._focus):
                return self._focus
            self._focus = None
        ev, compiled = snap.ev, snap.compiled
        if snap.instance.status == "ready" and not ev.revisiting:
            # Every required answer is in: offer the optional questions not answered or
            # passed over, one at a time, before the read-back (docs/guided.md). A model
            # resumed at the read-back (it has not spoken yet, and the conversation's last
            # reply asked to send) cannot know which were offered: it reads back again, and
            # the read-back lists what was left out.
            if not self._asked_known and self._resumed_at_read_back:
                return None
            for field in compiled.fields:
                if (
                    not field.required
                    and field.id not in self._skipped
                    and ev.applicable[field.order]
                    and ev.status[field.order] in ("empty", "invalid")
                ):
                    return field.id
            return None
        open_k = ev.open_step
        if open_k is not None and not ev.complete and not ev.revisiting:
            for field in compiled.fields:
                if field.step_index >= open_k:
                    break
                if (
                    not field.required
                    and field.id not in self._skipped
                    and field.source != "host"
                    and ev.applicable[field.order]
                    and ev.status[field.order] in ("empty", "invalid")
                    and ev.step_complete[field.step_index]
                ):
                    return field.id
        for row in snap.view.fields:
            if row.ask and row.id not in self._skipped and compiled.field_by_id[row.id].source != "host":
                return row.id
        return None
