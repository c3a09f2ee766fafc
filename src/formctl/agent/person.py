"""The person in a conversation, as the tools see them: their own words, and formctl asking them.

The chat loop records every message the person types here (:meth:`Person.said`), and only
those: never the model's text, never a tool result. A model's ``quotes`` are checked against
this corpus (:mod:`formctl.forms.quotes`).

When a model's value for a ``source="person"`` field is not in the person's words, the runner
stores nothing and lists it as unconfirmed. Then formctl itself, not the model, asks the person
(:func:`confirm_unconfirmed`), showing their own words when there are some::

    You said "next Tuesday". Departure date: Tuesday 8 December 2026. Is that right? (yes, or type the date)

A clear "yes" stores the value as ``confirmed`` (with their answer); a value they type, or give
as a correction ("no, it's CD5678", "the correct one is CD5678", "yes, but it is actually
AB9999"), is read in the field's type and stored as ``said`` (their answer is the quote); "no"
or no answer stores nothing; an unclear answer ("maybe", "yes but") is asked again
(forms/replies.py). The model's tool result says what happened.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from types import SimpleNamespace
from typing import TYPE_CHECKING

from formctl.agent.notices import read_notice
from formctl.errors import FormError
from formctl.forms.lifecycle import is_closed
from formctl.forms.messages import plain
from formctl.forms.quotes import PersonMessage, answer_value, is_yes, value_kind
from formctl.forms.replies import Confirmation, confirmation
from formctl.forms.validate import FieldValidator, text_issue
from formctl.json_types import FieldValue, JsonObject
from formctl.redact import redact

if TYPE_CHECKING:
    from formctl.forms.project import FillResult
    from formctl.forms.provenance import Unconfirmed
    from formctl.forms.runner import FormRunner

__all__ = ["Person", "confirm_ending", "confirm_unconfirmed", "question_for"]

ASK_ATTEMPTS = 2  # a typed answer the field refuses is asked once more, then left to the model


@dataclass
class Person:
    """The person's messages in this conversation (numbered from 1), and how to ask them a question.

    ``ask`` prints a question and returns the line they answer, or None when nobody can be
    asked (a host's program, the end of piped input). Without it, nothing is asked.
    """

    ask: Callable[[str], str | None] | None = None
    # Lines a front end sends in the person's place (the chat's opening "Hello."): not their words.
    not_theirs: frozenset[str] = frozenset()
    messages: list[PersonMessage] = field(default_factory=list)
    answers: list[JsonObject] = field(default_factory=list)  # what formctl asked and what they said
    # Values the front end gave in the person's place (``--seed k=v``, on the lines after its
    # opening line): a host's, never the person's words (docs/engine.md, "Provenance").
    seeds: dict[str, str] = field(default_factory=dict)
    # The instance open when the conversation opened (set by the chat loop): a seed written into
    # it was given with a chat that continued the form (provenance ``moment``), not with its start.
    opened_on: str | None = None
    # The next turn number (the chat loop's: the conversation store gives it out for every chat
    # on the instance alike, formctl.agent.sharing); without it, one after the last.
    numbering: Callable[[], int] | None = None

    def said(self, text: str, at: str | None = "now") -> PersonMessage | None:
        """Record a message the person typed; ``at`` None for one whose date is not known (a resumed chat)."""
        if text in self.not_theirs:
            return None
        first, _, rest = text.partition("\n")
        if first in self.not_theirs:  # the front end's opening line, then its seeds as "k: v" lines
            for line in rest.splitlines():
                key, sep, value = line.partition(":")
                if sep and key.strip():
                    self.seeds[key.strip()] = value.strip()
            return None
        notice = read_notice(text)
        if notice is not None:  # the chat's own words about a change; only the person's line in it is theirs
            if not notice.words:
                return None
            text = notice.words
        turn = self.numbering() if self.numbering is not None else len(self.messages) + 1
        message = PersonMessage(text, turn, _now() if at == "now" else at)
        self.messages.append(message)
        return message

    def words(self) -> list[PersonMessage]:
        return list(self.messages)

    def hear(self, question: str) -> str | None:
        """Ask ``question``; their answer, with any secret in it left out (formctl.redact), or None."""
        assert self.ask is not None
        answer = self.ask(question)
        return redact(answer) if answer is not None else None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


_HOW_TO_TYPE = {
    "date": "the date",
    "email": "the address",
    "number": "the amount",
    "bool": "yes or no",
    "choice": "one of the options",
    "text": "it",
}


def _shown(value: FieldValue, kind: str | None) -> str:
    if kind == "date":
        try:
            day = date.fromisoformat(str(value)[:10])
            return f"{day:%A} {day.day} {day:%B %Y}"
        except ValueError:
            pass
    if kind == "bool" and isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _how_to_type(u: Unconfirmed) -> str:
    found = value_kind(u.annotation)
    return _HOW_TO_TYPE.get(found.kind if found is not None else "", "it")


def question_for(u: Unconfirmed) -> str:
    """What formctl asks about one unconfirmed value: the person's words (if any), the field and the value."""
    found = value_kind(u.annotation)
    kind = found.kind if found is not None else None
    shown = "(hidden)" if u.sensitive else _shown(u.value, kind)
    words = f'You said "{u.check.quote}". ' if u.check.quote and not u.sensitive else ""
    if kind == "bool":  # asked outright: "yes" to "Details changed: no. Right?" would read both ways
        return f"{words}{u.label}? (yes or no)"
    return f"{words}{u.label}: {shown}. Is that right? (yes, or type {_HOW_TO_TYPE.get(kind or '', 'it')})"


def confirm_unconfirmed(
    runner: FormRunner, result: FillResult, person: Person | None, instance_id: str | None
) -> JsonObject:
    """The tool result of a model's write, after asking the person about each value it held back.

    Returns ``result.to_dict()`` with ``asked_person`` (one row per question: confirmed, gave,
    declined or no answer) and the view as it stands after their answers.
    """
    data: JsonObject = result.to_dict()
    if not result.unconfirmed or person is None or person.ask is None:
        return data
    rows: list[JsonObject] = []
    left: list[Unconfirmed] = []
    last = None
    for u in result.unconfirmed:
        row, written = _ask_one(runner, u, person, instance_id)
        rows.append(row)
        if written is not None:
            last = written
        if row["outcome"] not in ("confirmed", "gave"):
            left.append(u)
    if last is not None:
        data.update(last.view.to_dict())
        stored = [r["field"] for r in rows if r["outcome"] in ("confirmed", "gave")]
        data["captured"] = [*data.get("captured", []), *stored]
    data.pop("not_stored", None)
    note = data.pop("not_stored_note", None)
    if left:
        data["not_stored"] = [u.to_dict() for u in left]
        data["not_stored_note"] = note
    data["asked_person"] = rows
    return data


def _ask_one(
    runner: FormRunner, u: Unconfirmed, person: Person, instance_id: str | None
) -> tuple[JsonObject, FillResult | None]:
    """Ask about one value until it is settled (or :data:`ASK_ATTEMPTS` answers were refused).

    The answer is checked like any other line the person types: text that cannot be stored (a
    NUL) and a value the field refuses are said in plain words and asked again, and the answer
    counts as given only when the store took it (docs/engine.md, "Provenance")."""
    assert person.ask is not None
    validator = FieldValidator(u.annotation)
    question = question_for(u)
    field = _field_of(runner, u, instance_id)
    for _ in range(ASK_ATTEMPTS):
        answer = person.hear(question)
        if answer is None or not answer.strip():
            person.answers.append({"field": u.field, "question": question, "answer": None})
            return {"field": u.field, "outcome": "no answer"}, None
        answer = answer.strip()
        bad = text_issue(answer)
        if bad is not None:  # not text that can be stored: not the person's words either
            person.answers.append({"field": u.field, "question": question, "answer": None})
            question = f"I can't use that: {bad.message} {question_for(u)}"
            continue
        message = person.said(answer) or PersonMessage(answer, len(person.messages), None)
        person.answers.append({"field": u.field, "question": question, "answer": answer})
        reply = confirmation(answer)
        if reply.kind == "no" and not _is_bool(u):
            return {"field": u.field, "outcome": "declined"}, None
        if reply.kind == "unclear" and not _is_bool(u):
            question = f"Please say yes, or type {_how_to_type(u)}. {question_for(u)}"
            continue
        typed = _typed(u, answer, reply, message.at)
        outcome = validator.validate(typed)
        if not outcome.ok and not _is_bool(u):
            typed = _read_in_everyday_words(reply.value or answer, u.annotation, typed)
            outcome = validator.validate(typed)
        if typed is None or not outcome.ok:
            why = plain(field, outcome.issues[0]).sentence if outcome.issues else "Please answer yes or no."
            question = f"{why}. {question_for(u)}" if not why.endswith(".") else f"{why} {question_for(u)}"
            continue
        how = "confirmed" if typed == u.value else "said"
        words = {"kind": how, "quote": answer, "turn": message.turn, "message": answer, "actor": "person"}
        try:
            written = runner.fill({u.field: typed}, instance_id=instance_id, how={u.field: words})
        except FormError as exc:
            return {"field": u.field, "outcome": "no answer", "error": exc.message}, None
        if u.field not in written.captured:
            # The store did not take it (the engine's own checks): said, and asked again.
            refused = next((r.message for r in written.rejected if r.field == u.field), "That wasn't accepted.")
            question = f"{refused} {question_for(u)}" if refused.endswith(".") else f"{refused}. {question_for(u)}"
            continue
        row: JsonObject = {"field": u.field, "outcome": "confirmed" if how == "confirmed" else "gave"}
        if how != "confirmed":
            row["value"] = "[hidden]" if u.sensitive else typed
        return row, written
    return {"field": u.field, "outcome": "no answer", "refused": True}, None


def _typed(u: Unconfirmed, answer: str, reply: Confirmation, at: str | date | None) -> FieldValue:
    """The value an answer to "Is that right?" gives: the one shown for a clear yes; the value said
    instead for a correction ("no, it's CD5678", "the correct one is CD5678", "yes but CD5678");
    the answer itself for a value typed in place of the one shown, and for a yes/no field."""
    if _is_bool(u):
        return answer_value(answer, u.annotation, at)
    if reply.kind == "yes":
        return u.value
    return answer_value(reply.value, u.annotation, at)


def _read_in_everyday_words(text: str, annotation: object, typed: FieldValue) -> FieldValue:
    """A typed answer the checker's own reading could not use ("12 pounds 40", "forty-one",
    "Monday 9 March 2026"), read by the guided model's value readers; ``typed`` when they cannot."""
    from formctl.agent.models.guided.values import (
        ReadingContext,
        UnreadableAnswer,
        kind_of,
        locale_from_env,
        read_value,
    )

    kind = kind_of(annotation)
    if kind.name not in ("integer", "number", "date", "choice"):
        return typed
    try:
        reading = read_value(kind, text, ReadingContext(locale_from_env()))
    except UnreadableAnswer:
        return typed
    return typed if reading.none else reading.value


def _field_of(runner: FormRunner, u: Unconfirmed, instance_id: str | None) -> object:
    """The compiled field ``u`` is about (its label, hint and type, for a refusal said in words)."""
    try:
        return runner.view(instance_id).compiled.field_by_id[u.field]
    except Exception:  # a runner that cannot say: the label and the type are enough
        return SimpleNamespace(label=u.label, schema=u.annotation, hint=None, ask=None, type=None)


def _is_bool(u: Unconfirmed) -> bool:
    kind = value_kind(u.annotation)
    return kind is not None and kind.kind == "bool"


def confirm_ending(runner: FormRunner, data: JsonObject, result: FillResult, person: Person | None) -> JsonObject:
    """A model's write that ended the form (a routing rule closed it): formctl asks the person to
    confirm the answer that ended it (docs/engine.md, "Host acts", "Closed records").

    "yes" (or no answer: a host's program, the end of piped input) keeps the form closed. Any
    other answer, "no" most of all, means the answer was wrong: the form is reopened and the
    answers this write gave are undone, in one commit (``runner.revert_ending``), with the
    person's reply as the reason, and the model is told to ask again. The result says what
    happened: ``undone`` lists each value taken back and ``undone_reason`` why, beside what the
    write refused or held; when the take-back fails, nothing was written and it says so.
    Returns the tool result ``data`` with ``asked_person``.
    """
    view = result.view
    if not is_closed(view) or person is None or person.ask is None or not result.captured:
        return data
    instance = runner.open_instance(view.instance_id)
    given = instance.in_force_values() if instance is not None else {}
    reason = (instance.closed_reason if instance is not None else None) or "the form cannot go on."
    labels = _form_labels(runner, view.def_id)
    shown = ", ".join(f"{labels.get(f, f)}: {_as_text(given.get(f))}" for f in result.captured)
    # "Label: value. Is that right?" first, as formctl's other questions (a person, or a scripted
    # one, reads the value there); then why it matters.
    question = (
        f"{shown}. Is that right? That answer ends this form ({reason.rstrip('.')}). Say yes, or no to correct it."
    )
    answer = person.hear(question)
    person.answers.append({"field": None, "question": question, "answer": answer})
    if answer is None or not answer.strip():
        return data  # nobody to answer (a replay that recorded none, the end of piped input): it stands
    asked = data.get("asked_person", [])
    if is_yes(answer.strip()):
        return {**data, "asked_person": [*asked, {"ended": reason, "outcome": "confirmed"}]}
    return _taken_back(runner, data, result, answer.strip(), given, reason)


# What a write reported that still holds once its answers are taken back (the values it captured
# do not: they are listed as undone instead).
_STILL_SO = ("held", "held_note", "renamed", "unknown_fields", "unknown_note", "rejected", "ignored", "ignored_note",
             "not_stored", "not_stored_note")  # fmt: skip


def _taken_back(
    runner: FormRunner, data: JsonObject, result: FillResult, answer: str, given: dict[str, FieldValue], reason: str
) -> JsonObject:
    """Reopen and undo in one commit; the tool result saying what was undone (``given``: the values
    as the write left them) and why, or, when it could not be done, that nothing was written and
    the form stays ended (``reason``: why it ended)."""
    # The person's words are the reason; words the store cannot keep (a NUL) are left out of it.
    why = f'the person said "{answer}" to the answer that ended it'
    if text_issue(why) is not None:
        why = "the person said the answer that ended it was wrong"
    asked = data.get("asked_person", [])
    try:
        reverted = runner.revert_ending(result.captured, instance_id=result.view.instance_id, reason=why)
    except FormError as exc:
        return {
            **data,
            "asked_person": [*asked, {"ended": reason, "outcome": "declined", "error": exc.message}],
            "not_ended_note": f"The person said that answer was wrong, but it could not be taken back ({exc.message}): "
            "nothing was changed and the form stays ended.",
        }
    hidden = _sensitive(runner, result.view.def_id)
    out: JsonObject = reverted.to_dict()
    out.update({k: data[k] for k in _STILL_SO if k in data})
    out["undone"] = [{"field": f, "value": "[hidden]" if f in hidden else given.get(f)} for f in result.captured]
    out["undone_reason"] = why
    out["asked_person"] = [*asked, {"ended": reason, "outcome": "declined"}]
    out["not_ended_note"] = (
        "The person said that answer was wrong: the form is open again and the answers in undone were taken back; "
        "ask for them again."
    )
    return out


def _sensitive(runner: FormRunner, form_id: str) -> set[str]:
    try:
        return {f.id for f in runner.compiled(form_id).fields if f.sensitive}
    except Exception:  # a form that cannot be read: nothing to hide that the result would show
        return set()


def _form_labels(runner: FormRunner, form_id: str) -> dict[str, str]:
    try:
        return {f.id: f.label for f in runner.compiled(form_id).fields}
    except Exception:  # a label is a courtesy: the field id stands without it
        return {}


def _as_text(value: FieldValue) -> str:
    return value if isinstance(value, str) else str(value)
