"""What each model tool takes: its arguments as a pydantic model, and the row of the tool table
that binds them to a handler (the form tools: :mod:`formctl.agent.tools`; the goal tools:
:mod:`formctl.agent.goal_tools`).

Every tool's arguments are one model, strict (no "2" for 2, no 1 for true) and closed (an
unknown parameter is an error), and the JSON schema the model reads is generated from the same
model, so the schema and the validation never disagree. :func:`parse_arguments` judges a call's
arguments for both tool sets alike.

A table row keeps its handler's own types: :func:`row` binds a handler of ``(runner, args)``
and :func:`person_row` one of ``(runner, args, person)`` to the arguments' model it takes, and a
table holds them as :class:`Tool` (what every row answers, whatever its model): a row checks
that the arguments it is handed are its own model before its handler sees them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from formctl.forms.instance import INSTANCE_STATUSES
from formctl.json_types import JsonObject, JsonValue

if TYPE_CHECKING:  # pragma: no cover
    from formctl.agent.person import Person

__all__ = [
    "AbandonArgs",
    "FillArgs",
    "GoalStatusArgs",
    "GoalUpdateArgs",
    "HistoryArgs",
    "InspectArgs",
    "NoArgs",
    "ReviseArgs",
    "StartArgs",
    "StatusArgs",
    "Tool",
    "ToolArgs",
    "WithdrawArgs",
    "parse_arguments",
    "person_row",
    "row",
]


class ToolArgs(BaseModel):
    """Strict (no "2" → 2, no 1 → true), closed (an unknown parameter is an error)."""

    # defer_build: each model's validator and schema are built on its first use, not at import.
    # Building all nine cost ~15 ms of every chat's start-up; a guided turn uses two or three.
    model_config = ConfigDict(strict=True, extra="forbid", defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _blank_means_omitted(cls, data: JsonValue) -> JsonValue:
        if not isinstance(data, dict):
            return data
        out = {}
        for key, value in data.items():
            spec = cls.model_fields.get(key)
            if (
                spec is not None
                and not spec.is_required()
                and (value is None or (isinstance(value, str) and not value.strip()))
            ):
                continue
            out[key] = value
        return out


ArgsT = TypeVar("ArgsT", bound=ToolArgs)


class NoArgs(ToolArgs):
    pass


_QUOTES = "{field id: the person's exact words}"


class StartArgs(ToolArgs):
    form: str = Field(min_length=1, description="Form id, from form_list.")
    values: JsonObject | None = None  # "seed anything already known": the tool's description
    quotes: JsonObject | None = None  # as form_fill's


class StatusArgs(ToolArgs):
    instance_id: str | None = None


class InspectArgs(ToolArgs):
    scope: Literal["outline", "step", "field"] = "outline"
    id: str | None = Field(default=None, description="Step id or title, or a field id.")
    instance_id: str | None = None


class FillArgs(ToolArgs):
    values: JsonObject = Field(description="{field id: value}")
    quotes: JsonObject | None = Field(default=None, description=_QUOTES)
    instance_id: str | None = None


class ReviseArgs(ToolArgs):
    action: Literal["set", "retract", "undo", "redo"] = "set"
    field: str | None = Field(default=None, description="Optional for undo/redo.")
    value: JsonValue = None
    reason: str | None = None
    quotes: JsonObject | None = None  # as form_fill's
    instance_id: str | None = None


class AbandonArgs(ToolArgs):
    reason: str = Field(min_length=1)
    instance_id: str | None = None


class WithdrawArgs(ToolArgs):
    reason: str | None = None  # the person's reason, if they gave one (never invented)
    instance_id: str | None = None


class HistoryArgs(ToolArgs):
    form: str | None = None
    subject: str | None = None
    status: Literal[INSTANCE_STATUSES] | None = None  # type: ignore[valid-type]
    instance_id: str | None = None  # one form's answers: the tool's description
    limit: int = Field(default=10, ge=1, le=50)


# The goal tools' arguments (formctl.agent.goal_tools).


class GoalStatusArgs(ToolArgs):
    pass


class GoalUpdateArgs(ToolArgs):
    goal: str = Field(min_length=1, description="Goal key (any goal, not only the active one).")
    completed: list[str] | None = Field(default=None, description="Item keys done.")
    deferred: list[str] | None = Field(default=None, description="Item keys to come back to later.")
    declined: list[str] | None = Field(default=None, description="Item keys not needed.")
    reopened: list[str] | None = Field(default=None, description="Settled item keys to make pending again.")
    reason: str | None = Field(default=None, max_length=500, description="Why, in a few words.")
    reasons: dict[str, str] | None = Field(
        default=None, description="Item key -> its own reason, where items have different ones (else reason)."
    )
    version: int = Field(ge=1, description="The version goal_status gave.")


RunnerT = TypeVar("RunnerT")
RunnerT_contra = TypeVar("RunnerT_contra", contravariant=True)


class Tool(Protocol[RunnerT_contra]):
    """One row of a tool table, as the table holds it: the name the model calls, what it reads,
    its arguments' model, and :meth:`run`, which hands judged arguments to the handler."""

    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def args(self) -> type[ToolArgs]: ...
    def run(self, runner: RunnerT_contra, args: ToolArgs, person: Person | None) -> JsonValue: ...


def _own(row_args: type[ArgsT], args: ToolArgs) -> ArgsT:
    """``args`` as the row's own model: a table hands each row what :func:`parse_arguments` made
    of the call with that same model, so anything else is a bug in the table."""
    if not isinstance(args, row_args):
        raise TypeError(f"{type(args).__name__} handed to a tool that takes {row_args.__name__}")
    return args


@dataclass(frozen=True, slots=True)
class _Row(Generic[RunnerT, ArgsT]):
    """A tool whose handler reads the runner and its arguments."""

    name: str
    description: str
    args: type[ArgsT]
    handler: Callable[[RunnerT, ArgsT], JsonValue]

    def run(self, runner: RunnerT, args: ToolArgs, person: Person | None) -> JsonValue:
        return self.handler(runner, _own(self.args, args))


@dataclass(frozen=True, slots=True)
class _PersonRow(Generic[RunnerT, ArgsT]):
    """A tool whose handler also takes the conversation's :class:`~formctl.agent.person.Person`
    (a model's write, judged against what the person said), or None where there is none."""

    name: str
    description: str
    args: type[ArgsT]
    handler: Callable[[RunnerT, ArgsT, Person | None], JsonValue]

    def run(self, runner: RunnerT, args: ToolArgs, person: Person | None) -> JsonValue:
        return self.handler(runner, _own(self.args, args), person)


def row(
    name: str, description: str, args: type[ArgsT], handler: Callable[[RunnerT, ArgsT], JsonValue]
) -> Tool[RunnerT]:
    """A table's row for a tool whose handler reads the runner and its own arguments' model."""
    return _Row(name, description, args, handler)


def person_row(
    name: str, description: str, args: type[ArgsT], handler: Callable[[RunnerT, ArgsT, Person | None], JsonValue]
) -> Tool[RunnerT]:
    """A table's row for a tool whose handler also takes the conversation's person (None: a host's
    tools, with no person to judge a write against)."""
    return _PersonRow(name, description, args, handler)


def parse_arguments(name: str, arguments: JsonValue, args: type[ArgsT]) -> ArgsT | str:
    """A model's ``arguments`` for tool ``name`` as ``args`` (strict and closed: :class:`ToolArgs`), or
    the line that says why they are not (nothing is applied): the tools return it as an
    ``invalid_arguments`` error. The form tools and the goal tools judge a call's arguments alike, here."""
    if not isinstance(arguments, dict):
        return f"Bad arguments for {name}: expected a JSON object, got {type(arguments).__name__}. Nothing was applied."
    try:
        return args.model_validate(arguments)
    except ValidationError as exc:
        return _describe_validation(name, exc)


def _describe_validation(name: str, exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        if err["type"] == "extra_forbidden":
            parts.append(f"{where}: not a parameter of {name}")
        elif err["type"] == "missing":
            parts.append(f"{where}: required")
        else:
            parts.append(f"{where}: {err['msg']}")
    return f"Bad arguments for {name} ({'; '.join(parts)}). Nothing was applied."
