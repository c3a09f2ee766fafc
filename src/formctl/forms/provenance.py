"""A model's write, judged: which values are the person's words, which need the person, which only a host may give.

Pure: given the staged values of a model's ``fill`` (or ``revise``), its quotes and the person's
own messages, :func:`judge` decides each value's provenance (docs/engine.md, "Provenance"):

- a field declared ``source="host"`` refuses a model's value outright;
- a field declared ``source="person"`` stores a model's value only when it is ``said``; a
  ``reading`` or an ``assumed`` value is held back as :class:`Unconfirmed`, for the front end to
  ask the person about (the runner stores nothing for it);
- any other field stores the value, marked with what the checker found.

The runner commits what this keeps; the chat asks about what it holds back.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from formctl.forms.compile import CompiledField, CompiledForm
from formctl.forms.instance import MESSAGE_EXCERPT, Instance
from formctl.forms.project import Rejected
from formctl.forms.quotes import ASSUMED, READING, PersonMessage, QuoteCheck, check_quote
from formctl.forms.staging import Staged

__all__ = ["ModelWrite", "Unconfirmed", "excerpt", "judge", "quote_how"]

HOST_ONLY = "Only the host fills this field; leave it out and don't ask the person for it."


@dataclass(frozen=True, slots=True)
class ModelWrite:
    """What comes with a model's write: its quotes by field, and the person's messages to check them in."""

    quotes: Mapping[str, Any] = field(default_factory=dict)
    words: Sequence[PersonMessage] = ()
    # False outside a conversation (a host's program calling the tools): there are no person's
    # words to hold a value to, so values land marked as the checker found them, unasked.
    enforce: bool = True
    # Values the host gave the conversation to start with (``--seed k=v``: field key -> the text
    # given). A model's value that is one of them is a ``seed``, never the person's words.
    seeds: Mapping[str, str] = field(default_factory=dict)
    # The instance that was open when the conversation opened (None: none was): a seed written
    # into it was given with a chat that continued the form, not with its start.
    opened_on: str | None = None


@dataclass(frozen=True, slots=True)
class Unconfirmed:
    """A model's value for a ``source="person"`` field that the person's words do not hold: not stored."""

    field: str
    label: str
    value: Any
    check: QuoteCheck
    sensitive: bool = False
    annotation: Any = None  # the field's type, to read the person's typed answer in

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"field": self.field, "kind": self.check.kind}
        if self.check.quote is not None:
            d["quote"] = "[hidden]" if self.sensitive else self.check.quote
        if self.check.reads_as is not None:
            d["reads_as"] = self.check.reads_as
        return d


def excerpt(message: str, quote: str) -> str:
    """``message`` cut to :data:`MESSAGE_EXCERPT` characters around ``quote`` (which it holds)."""
    if len(message) <= MESSAGE_EXCERPT:
        return message
    at = message.find(quote)
    if at < 0:
        return message[:MESSAGE_EXCERPT]
    room = max(0, MESSAGE_EXCERPT - len(quote)) // 2
    start = max(0, min(at - room, len(message) - MESSAGE_EXCERPT))
    return message[start : start + MESSAGE_EXCERPT]


def quote_how(check: QuoteCheck) -> dict[str, Any]:
    """The provenance a checked value is stored with (kind, and the person's words when found)."""
    how: dict[str, Any] = {"kind": check.kind}
    if check.quote is not None and check.message is not None:
        how.update(quote=check.quote, turn=check.turn, message=excerpt(check.message, check.quote))
    return how


_TRUSTED = frozenset({"said", "confirmed", "host", "seed"})


def judge(
    compiled: CompiledForm, staged: list[Staged], write: ModelWrite, instance: Instance | None = None
) -> tuple[list[Staged], list[Unconfirmed], list[Rejected]]:
    """Split a model's staged values into those to store (each with its provenance), those held
    back for the person to confirm, and those refused because only a host may give them.

    A value the field already holds, from the person or a host (a "same" when a step is gone over
    again), is theirs still: it keeps the provenance it has.
    """
    quotes = _by_field_id(compiled, write.quotes)
    seeds = _by_field_id(compiled, write.seeds)
    keep: list[Staged] = []
    unconfirmed: list[Unconfirmed] = []
    refused: list[Rejected] = []
    taken = _taken(instance)
    for item in staged:
        if item.retract:
            keep.append(item)
            continue
        f = compiled.field_by_id[item.field_id]
        if f.source == "host":
            refused.append(
                Rejected(item.field_id, f"{f.label} is filled by the host, not in the conversation.", HOST_ONLY)
            )
            continue
        kept = _already_theirs(instance, item)
        if kept is not None:
            item.how = kept
            keep.append(item)
            continue
        if item.field_id in seeds and _is_seed(seeds[item.field_id], item.value, f.validator.annotation):
            verdict = _judge_seed(item, f, write, instance)
        else:
            verdict = _judge_words(item, f, write, quotes.get(item.field_id), taken)
        if isinstance(verdict, Unconfirmed):
            unconfirmed.append(verdict)
        elif verdict is not None:
            keep.append(verdict)
    return keep, unconfirmed, refused


def _by_field_id(compiled: CompiledForm, given: Mapping[str, Any]) -> dict[str, Any]:
    """``given`` (keyed by a field's id or label, as a model names it) keyed by field id; unknown names left out."""
    out: dict[str, Any] = {}
    for key, value in given.items():
        field_id = compiled.resolve_field(key)
        if field_id is not None:
            out[field_id] = value
    return out


# A verdict on one staged value: the value to store (its ``how`` set), the question to ask the
# person, or None: neither (it is invalid as well, and its rejection already says so).
_Verdict = Staged | Unconfirmed | None


def _judge_seed(item: Staged, f: CompiledField, write: ModelWrite, instance: Instance | None) -> _Verdict:
    """A host's seed value, not the person's: stored as a seed, but a field only the person may
    give has it confirmed by them first (asked like any value they did not say)."""
    if f.source == "person" and write.enforce:
        if item.outcome is None or item.outcome.ok:
            return Unconfirmed(
                item.field_id, f.label, item.value, QuoteCheck(SEED), f.sensitive, f.validator.annotation
            )
        return None  # invalid as well: nothing stored, nothing asked
    continued = instance is not None and write.opened_on is not None and instance.id == write.opened_on
    item.how = {"kind": SEED, "moment": "continued" if continued else "start"}
    return item


def _judge_words(
    item: Staged, f: CompiledField, write: ModelWrite, quote: Any, taken: list[tuple[str, tuple[Any, ...]]]
) -> _Verdict:
    """A value judged by the person's words: stored with how it was traced, or, for a field only
    the person may give and words that do not hold it, asked of them."""
    check = check_quote(write.words, quote, item.value, f.validator.annotation)
    if check.said:
        source = (check.turn, check.quote.casefold() if check.quote else None, _same(item.value))
        if any(s == source and other != item.field_id for other, s in taken):
            # the very words another field's same value was taken from ("3 nights" as a total of 3)
            check = dataclasses.replace(check, kind=READING)
        taken.append((item.field_id, source))
    if f.source == "person" and not check.said and write.enforce:
        if item.outcome is not None and not item.outcome.ok:
            return None  # invalid as well: the rejection already tells the model; nothing to ask
        return Unconfirmed(item.field_id, f.label, item.value, check, f.sensitive, f.validator.annotation)
    item.how = quote_how(check) if check.kind != ASSUMED else {"kind": ASSUMED}
    return item


SEED = "seed"


def _is_seed(given: str, value: Any, annotation: Any) -> bool:
    """Is ``value`` the host's seed ``given`` (the text of ``--seed k=v``), read in the field's type?"""
    return check_quote([PersonMessage(given, 0)], given, value, annotation).said or str(value) == given


def _already_theirs(instance: Instance | None, item: Staged) -> dict[str, Any] | None:
    """The provenance of the revision in force, when it holds this very value and came from the person or a host."""
    log = instance.entries.get(item.field_id) if instance is not None else None
    entry = log.in_force if log is not None else None
    if entry is None or entry.value != item.value or type(entry.value) is not type(item.value):
        return None
    p = entry.provenance
    return p.extras() if p.kind in _TRUSTED else None


def _same(value: Any) -> str:
    """A value's identity for "the same answer": its JSON text (so 3 and 3.0 are one, True and 1 are not)."""
    if type(value) is bool:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return repr(float(value))
    return json.dumps(value, sort_keys=True, default=str)


def _taken(instance: Instance | None) -> list[tuple[str, tuple[Any, ...]]]:
    """Whose words are already whose: (field, (turn, quote, value)) of every answer in force taken as said."""
    out: list[tuple[str, tuple[Any, ...]]] = []
    for field_id, log in instance.entries.items() if instance is not None else ():
        entry = log.in_force
        if entry is not None and entry.provenance.kind == "said" and entry.provenance.quote:
            out.append((field_id, (entry.provenance.turn, entry.provenance.quote.casefold(), _same(entry.value))))
    return out
