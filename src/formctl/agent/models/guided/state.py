"""The guided model's state: what one turn plans, the instance it reads, and what it remembers.

:class:`GuidedState` is everything the model keeps between turns, with public names, so the
planning functions (:mod:`.planning`) and the phrasing functions (:mod:`.phrasing`) read and
record it explicitly; :class:`~formctl.agent.models.guided.model.GuidedModel` holds one and calls
both. None of it changes what is written: a fresh model over a restored conversation falls
back to the form's own order (docs/guided.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from formctl.agent.models.guided.answers import Kind, field_kind
from formctl.agent.models.guided.revisit import Revisit
from formctl.json_types import JsonObject, JsonValue

if TYPE_CHECKING:
    from formctl.forms.compile import CompiledForm
    from formctl.forms.evaluate import Evaluation
    from formctl.forms.history import MoveTarget
    from formctl.forms.instance import Instance
    from formctl.forms.project import FormView

ToolCall = tuple[str, JsonObject]
_T = TypeVar("_T")


@dataclass(slots=True)
class Snapshot:
    """The instance as stored, read without writing: compiled form, instance, evaluation, open-step view.

    While planning the start of a form only the compiled form is known: ``maybe_instance``,
    ``maybe_ev`` and ``maybe_view`` are None, and the code that serves that case (reading the
    first words' answers) asks them. Everything else reads ``instance``, ``ev`` and ``view``,
    which are never None (typed so): a snapshot read from the store always has all three."""

    compiled: CompiledForm
    maybe_instance: Instance | None
    maybe_ev: Evaluation | None
    maybe_view: FormView | None
    stale: bool = False

    @property
    def instance(self) -> Instance:
        """The instance as stored (the snapshot of a form not started yet has none)."""
        return _there(self.maybe_instance)

    @property
    def ev(self) -> Evaluation:
        """The instance's evaluation (the snapshot of a form not started yet has none)."""
        return _there(self.maybe_ev)

    @property
    def view(self) -> FormView:
        """The open step's view (the snapshot of a form not started yet has none)."""
        return _there(self.maybe_view)


def _there(part: _T | None) -> _T:
    """A part of the stored instance, read where one is known to exist: asked of a form not
    started yet, it is the guided model's own mistake (the model says it could not answer)."""
    if part is None:
        raise LookupError("the form has not started: there is no instance to read")
    return part


@dataclass(slots=True)
class Plan:
    """What the person asked for this turn: the tool calls to make (kept until their results
    come back, then said), or a reply made without tools.

    A reply without tools is ``lead``, then (``say_problems``) the problems found in the words,
    then (``say_state``) what happens now: the next question, a wait, the read-back.
    """

    kind: str  # start | list | answers | undo | back | redo | skip | withdraw | status | what_else | greet | check | submit | say
    calls: list[ToolCall] = field(default_factory=list)
    call_ids: tuple[str, ...] = ()
    problems: list[tuple[str, str, str]] = field(default_factory=list)  # (field id, words, reason)
    unplaced: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # labels that name no question
    target: MoveTarget | None = None  # undo/back/redo: the move
    skipped: str | None = None  # skip: the field left out
    notes: list[str] = field(default_factory=list)
    revisited: bool = False  # answers were kept for the step being gone over (see revisit.py)
    retract: list[str] = field(default_factory=list)  # optional answers in force the person left out ("none")
    replaced: dict[str, JsonValue] = field(default_factory=dict)  # corrections: field id -> the answer in force before
    in_force: frozenset[str] = frozenset()  # the fields that had an answer in force when the turn was planned
    asked_back: tuple[str, bool] | None = None  # a question back about a field (its id, whether it asked why)
    needed: str | None = None  # a required field the person did not give: say why it is needed
    lead: list[str] = field(default_factory=list)
    say_problems: bool = False
    say_state: bool = False
    repeat: bool = False  # say_state: say the open failures again, not only the new ones


@dataclass(slots=True)
class GuidedState:
    """What the guided model remembers between turns (it only changes what it says)."""

    form_id: str | None = None
    calls: int = 0  # tool-use ids handed out
    plan: Plan | None = None  # the plan whose tool calls are out, until their results come back
    asked: str | None = None  # the field the last reply asked for
    asked_at: tuple[str, int] | None = None  # (instance id, version) when it was asked
    asked_known: bool = False  # False until this model has replied once (a restored conversation)
    focus: str | None = None  # a field to ask before the form's own order (back, rejected)
    skipped: set[str] = field(default_factory=set)
    deferred: set[str] = field(default_factory=set)  # required questions put off: asked after the others
    announced: str | None = None  # the step last announced with "Step i of n"
    shown_failures: set[tuple[str, str]] = field(default_factory=set)
    kinds: dict[tuple[str, int, str], Kind] = field(default_factory=dict)
    summarised: tuple[str, int] | None = None  # the instance version last read back in full
    preface: list[str] = field(default_factory=list)  # said first in the next reply (what changed)
    read_back: tuple[str, int] | None = None  # the ready instance version read back for sending
    said: dict[str, list[str]] = field(default_factory=dict)  # field id -> what the reply being built said
    resumed_at_read_back: bool = False  # a restored conversation whose last reply was the read-back
    revisit: Revisit | None = None  # the step being gone over and the answers kept (revisit.py)
    keep_offer: tuple[str, str] | None = None  # (instance id, field): "keep" puts its earlier answer back
    host_here: bool = False  # the person at the keyboard plays the host (formctl run --as-host): /resolve works
    locale: str | None = None  # the conventions the person's words are read by (en-GB; values/context.py)

    def kind(self, compiled: CompiledForm, field_id: str) -> Kind:
        """The kind of a field's answer (read once per form version): its schema, a phone number
        when its label says so, its author's aliases for a choice."""
        key = (compiled.id, compiled.version, field_id)
        if key not in self.kinds:
            self.kinds[key] = field_kind(compiled.field_by_id[field_id])
        return self.kinds[key]
