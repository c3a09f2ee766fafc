"""What a goal program stores: the scope, one snapshot of definitions and progress, the
transitions a commit made, and the receipts of the hooks those transitions run.

Plain frozen data that round-trips to JSON exactly (``*_to_json`` / ``*_from_json``), so
every store keeps the same thing and a snapshot read back is detached from storage.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from enum import StrEnum

from formctl.errors import InvalidArgumentError
from formctl.goals.definition import Program, program_from_json, program_to_json
from formctl.json_types import JsonObject, present

__all__ = [
    "COMPLETED",
    "DECLINED",
    "DEFERRED",
    "PENDING",
    "Disposition",
    "REOPENED",
    "GoalScope",
    "GoalState",
    "ItemProgress",
    "Receipt",
    "Transition",
    "state_from_json",
    "state_to_json",
]


class Disposition(StrEnum):
    """Where an item of a goal stands (docs/goals.md, "Progress"); its members are the stored words.

    The questions asked of it (is the goal waiting on this item? does the chat ask the person
    about it?) are :func:`formctl.goals.evaluate.is_pending` and its neighbours, not comparisons
    with these words at the call site.
    """

    PENDING = "pending"
    COMPLETED = "completed"
    DEFERRED = "deferred"
    DECLINED = "declined"


# The members under plain module names, as the rest of the package reads them. ``reopened`` is
# an action, not a disposition: it makes a settled item pending again, and the item's record
# says it was reopened.
PENDING, COMPLETED, DEFERRED, DECLINED = (
    Disposition.PENDING,
    Disposition.COMPLETED,
    Disposition.DEFERRED,
    Disposition.DECLINED,
)
REOPENED = "reopened"
SETTLED = frozenset({COMPLETED, DEFERRED, DECLINED})

# Receipt statuses: pending (saved with the transition, not yet run), running (claimed by an
# owner under a lease), ok (done: never run again), failed (run again by resume_hooks()).
RECEIPT_PENDING, RECEIPT_RUNNING, RECEIPT_OK, RECEIPT_FAILED = "pending", "running", "ok", "failed"


@dataclass(frozen=True, slots=True)
class GoalScope:
    """Whose program: the exact tuple (subject, key, agent). Qualify ``subject`` with the tenant
    and matter (``firm:1/matter:2``); ``key`` names the set of goals within it (``intake``)."""

    subject: str
    key: str
    agent: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.subject, str) or not self.subject.strip():
            raise InvalidArgumentError("A goal scope needs a subject.")
        if not isinstance(self.key, str) or not self.key.strip():
            raise InvalidArgumentError("A goal scope needs a key.")
        if self.agent is not None and (not isinstance(self.agent, str) or not self.agent.strip()):
            raise InvalidArgumentError("A goal scope's agent is a name, or None.")

    @property
    def id(self) -> str:
        """A file- and key-safe id of the exact tuple (the stores' primary key)."""
        import hashlib  # here: the reads that never name a scope need not load OpenSSL

        text = json.dumps([self.subject, self.key, self.agent], ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]

    def to_json(self) -> JsonObject:
        return {"subject": self.subject, "key": self.key, "agent": self.agent}

    @classmethod
    def from_json(cls, data: JsonObject) -> GoalScope:
        return cls(data["subject"], data["key"], data.get("agent"))

    def __str__(self) -> str:
        return f"{self.subject} / {self.key}" + (f" / {self.agent}" if self.agent else "")


@dataclass(frozen=True, slots=True)
class ItemProgress:
    """An item's progress: its disposition and the last action that set it (and who, when, why).
    ``instance`` is the form instance that completed a form-bound item."""

    disposition: str
    action: str
    version: int
    at: str
    actor: str
    reason: str | None = None
    instance: str | None = None

    def to_json(self) -> JsonObject:
        """Every field, in order; ``reason`` and ``instance`` only when set."""
        return present(**dataclasses.asdict(self))

    @classmethod
    def from_json(cls, data: JsonObject) -> ItemProgress:
        return cls(
            data["disposition"],
            data["action"],
            int(data["version"]),
            data["at"],
            data["actor"],
            data.get("reason"),
            data.get("instance"),
        )


@dataclass(frozen=True, slots=True)
class Transition:
    """A goal's transition made by one commit: ``enter`` (it became the active goal),
    ``complete`` (all its live items settled) or ``reopen`` (a complete goal has unresolved
    work again). ``status`` is the goal's status right after the commit (the historical state
    its hooks receive). ``key`` is the stable idempotency key of its hook run."""

    key: str
    goal: str
    kind: str
    status: str
    version: int
    reason: str | None = None

    def to_json(self) -> JsonObject:
        return {
            "key": self.key,
            "goal": self.goal,
            "kind": self.kind,
            "status": self.status,
            "version": self.version,
            "reason": self.reason,
        }

    @classmethod
    def from_json(cls, data: JsonObject) -> Transition:
        return cls(data["key"], data["goal"], data["kind"], data["status"], int(data["version"]), data.get("reason"))


@dataclass(frozen=True, slots=True)
class GoalState:
    """One complete snapshot of a program in a scope: every history entry is one of these.

    ``progress`` is keyed ``(goal key, item key)`` and keeps the progress of definitions that
    were removed or retired. ``transitions`` are the ones this snapshot's commit made.
    ``actor``, ``source``, ``reason`` and ``change`` say who made this version and how."""

    scope: GoalScope
    version: int
    program: Program
    progress: dict[tuple[str, str], ItemProgress]
    created_at: str
    updated_at: str
    actor: str
    source: str | None
    change: str  # start | update | revise | form
    reason: str | None = None
    transitions: tuple[Transition, ...] = field(default_factory=tuple)


def state_to_json(state: GoalState, *, with_program: bool = True) -> JsonObject:
    out: JsonObject = {
        "scope": state.scope.to_json(),
        "version": state.version,
        "created_at": state.created_at,
        "updated_at": state.updated_at,
        "actor": state.actor,
        "source": state.source,
        "change": state.change,
        "reason": state.reason,
        "progress": [[g, i, p.to_json()] for (g, i), p in state.progress.items()],
        "transitions": [t.to_json() for t in state.transitions],
    }
    if with_program:
        out["program"] = program_to_json(state.program)
    return out


def state_from_json(data: JsonObject, program: Program | None = None) -> GoalState:
    """A snapshot from its JSON; ``program`` when the JSON was stored without its definition."""
    if program is None:
        program = program_from_json(data["program"])
    return GoalState(
        scope=GoalScope.from_json(data["scope"]),
        version=int(data["version"]),
        program=program,
        progress={(g, i): ItemProgress.from_json(p) for g, i, p in data["progress"]},
        created_at=data["created_at"],
        updated_at=data["updated_at"],
        actor=data["actor"],
        source=data.get("source"),
        change=data["change"],
        reason=data.get("reason"),
        transitions=tuple(Transition.from_json(t) for t in data.get("transitions", [])),
    )


@dataclass(frozen=True, slots=True)
class Receipt:
    """The dispatch record of one transition's hook, kept outside compare-and-set so a settle
    never conflicts with progress; an owner-fenced lease says who may run it now."""

    key: str
    transition: Transition
    status: str = RECEIPT_PENDING
    attempts: int = 0
    owner: str | None = None
    lease_until: float = 0.0
    at: str | None = None
    error: str | None = None

    def to_json(self) -> JsonObject:
        return {
            "key": self.key,
            "transition": self.transition.to_json(),
            "status": self.status,
            "attempts": self.attempts,
            "owner": self.owner,
            "lease_until": self.lease_until,
            "at": self.at,
            "error": self.error,
        }

    @classmethod
    def from_json(cls, data: JsonObject) -> Receipt:
        return cls(
            data["key"],
            Transition.from_json(data["transition"]),
            data["status"],
            int(data["attempts"]),
            data.get("owner"),
            float(data.get("lease_until") or 0.0),
            data.get("at"),
            data.get("error"),
        )
