"""Goal programs as a host writes them: :func:`define_program`, :class:`Goal`, :class:`Item`.

A program is plain, frozen data: no callbacks. Hooks belong to the host's
:class:`~formctl.goals.runner.GoalRunner`, never to a definition, because a definition is
stored in every snapshot of the program's history and may be edited and re-read from a file
(``formctl program revise --from FILE``); code cannot travel that way. What the keys promise
is in docs/goals.md ("Definitions and revisions").
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from formctl.errors import InvalidArgumentError
from formctl.json_types import JsonObject, JsonValue

__all__ = ["Goal", "Item", "Program", "define_program", "program_from_json", "program_to_json", "program_digest"]

# Keys are stable identifiers a model and a host type; the same shape as a form's ids.
_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_MAX_TEXT = 500


def _check_key(key: object, what: str) -> str:
    if not isinstance(key, str) or not _KEY.match(key):
        raise InvalidArgumentError(
            f"{what} key {key!r} is not a key: letters, digits, '_', '-', '.', at most 64 characters."
        )
    return key


def _check_text(value: object, what: str, *, required: bool) -> str:
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{what} must be text.")
    if required and not value.strip():
        raise InvalidArgumentError(f"{what} is required.")
    if len(value) > _MAX_TEXT:
        raise InvalidArgumentError(f"{what} is longer than {_MAX_TEXT} characters.")
    return value


@dataclass(frozen=True, slots=True)
class Item:
    """One checklist item. ``form`` binds it to a form id: the subject's instance of that form
    completing completes the item."""

    key: str
    label: str = ""
    locked: bool = False
    retired: bool = False
    form: str | None = None

    def __post_init__(self) -> None:
        _check_key(self.key, "Item")
        _check_text(self.label, f'Item "{self.key}" label', required=True)
        if self.form is not None and (not isinstance(self.form, str) or not self.form.strip()):
            raise InvalidArgumentError(f'Item "{self.key}": form must be a form id.')


@dataclass(frozen=True, slots=True)
class Goal:
    """One goal: a stable key, a title, an objective and its ordered items."""

    key: str
    title: str = ""
    objective: str = ""
    items: tuple[Item, ...] = field(default_factory=tuple)
    locked: bool = False
    retired: bool = False

    def __post_init__(self) -> None:
        _check_key(self.key, "Goal")
        _check_text(self.title, f'Goal "{self.key}" title', required=True)
        _check_text(self.objective, f'Goal "{self.key}" objective', required=False)
        items = tuple(self.items)
        _check_members(items, Item, (f'Goal "{self.key}"', f'Goal "{self.key}"'), "item")
        object.__setattr__(self, "items", items)

    def item(self, key: str) -> Item | None:
        for item in self.items:
            if item.key == key:
                return item
        return None


@dataclass(frozen=True, slots=True)
class Program:
    """A whole program: its stable key and its ordered goals. Build it with :func:`define_program`."""

    key: str
    goals: tuple[Goal, ...]

    def goal(self, key: str) -> Goal | None:
        for goal in self.goals:
            if goal.key == key:
                return goal
        return None


def define_program(key: str, goals: Iterable[Goal] = ()) -> Program:
    """A program from its key and ordered goals; raises InvalidArgumentError on a malformed one
    (a bad key, a goal that is not a Goal, two goals with one key)."""
    _check_key(key, "Program")
    listed = tuple(goals)
    _check_members(listed, Goal, (f"Program {key!r}", f'Program "{key}"'), "goal")
    return Program(key, listed)


def _check_members(members: Sequence[object], kind: type[Goal] | type[Item], owner: tuple[str, str], noun: str) -> None:
    """Refuse a member of a program or a goal that is not a ``kind`` (``owner[0]`` names the
    whole in that message), then two members with one key (``owner[1]`` in that one)."""
    keys: list[str] = []
    for member in members:
        if not isinstance(member, kind):
            raise InvalidArgumentError(
                f"{owner[0]}: {noun}s must be {kind.__name__}(...), not {type(member).__name__}."
            )
        keys.append(member.key)
    seen: set[str] = set()
    for key in keys:
        if key in seen:
            raise InvalidArgumentError(f'{owner[1]} has two {noun}s keyed "{key}".')
        seen.add(key)


# --------------------------------------------------------------------------- JSON


def program_to_json(program: Program) -> JsonObject:
    """The definition as plain JSON data; defaults are left out, so a file a host writes by
    hand and the stored form look alike."""

    def item(i: Item) -> JsonObject:
        out: JsonObject = {"key": i.key, "label": i.label}
        if i.form is not None:
            out["form"] = i.form
        if i.locked:
            out["locked"] = True
        if i.retired:
            out["retired"] = True
        return out

    def goal(g: Goal) -> JsonObject:
        out: JsonObject = {"key": g.key, "title": g.title}
        if g.objective:
            out["objective"] = g.objective
        if g.locked:
            out["locked"] = True
        if g.retired:
            out["retired"] = True
        out["items"] = [item(i) for i in g.items]
        return out

    return {"key": program.key, "goals": [goal(g) for g in program.goals]}


_GOAL_FIELDS = {"key", "title", "objective", "items", "locked", "retired"}
_ITEM_FIELDS = {"key", "label", "locked", "retired", "form"}


def _flag(data: Mapping[str, JsonValue], name: str, where: str) -> bool:
    value = data.get(name, False)
    if not isinstance(value, bool):
        raise InvalidArgumentError(f"{where}: {name} must be true or false.")
    return value


def program_from_json(data: JsonValue) -> Program:
    """The inverse of :func:`program_to_json`, checking every field: a malformed file is one
    clear InvalidArgumentError naming where, never a half-read program."""
    if not isinstance(data, Mapping):
        raise InvalidArgumentError("A program is an object with a key and goals.")
    unknown = set(data) - {"key", "goals"}
    if unknown:
        raise InvalidArgumentError(f"A program has no {', '.join(sorted(unknown))}.")
    goals_data = data.get("goals", [])
    if not isinstance(goals_data, list):
        raise InvalidArgumentError("A program's goals are a list.")
    goals = [_goal_from_json(n, g) for n, g in enumerate(goals_data, 1)]
    return define_program(data.get("key"), goals)  # type: ignore[arg-type]  # checked by define_program


def _goal_from_json(n: int, g: JsonValue) -> Goal:
    """Goal ``n`` (from 1) of a program read from JSON."""
    if not isinstance(g, Mapping):
        raise InvalidArgumentError(f"Goal {n} is not an object.")
    where = f'Goal "{g.get("key", n)}"'
    _refuse_unknown(g, _GOAL_FIELDS, where)
    items_data = g.get("items", [])
    if not isinstance(items_data, list):
        raise InvalidArgumentError(f"{where}: items are a list.")
    return Goal(
        g.get("key"),  # type: ignore[arg-type]  # checked by Goal
        title=g.get("title", ""),
        objective=g.get("objective", ""),
        items=tuple(_item_from_json(where, m, i) for m, i in enumerate(items_data, 1)),
        locked=_flag(g, "locked", where),
        retired=_flag(g, "retired", where),
    )


def _item_from_json(where: str, m: int, i: JsonValue) -> Item:
    """Item ``m`` (from 1) of the goal ``where`` names, read from JSON."""
    if not isinstance(i, Mapping):
        raise InvalidArgumentError(f"{where}, item {m} is not an object.")
    iwhere = f'{where}, item "{i.get("key", m)}"'
    _refuse_unknown(i, _ITEM_FIELDS, iwhere)
    return Item(
        i.get("key"),  # type: ignore[arg-type]  # checked by Item
        label=i.get("label", ""),
        locked=_flag(i, "locked", iwhere),
        retired=_flag(i, "retired", iwhere),
        form=i.get("form"),
    )


def _refuse_unknown(data: Mapping[str, JsonValue], known: set[str], where: str) -> None:
    unknown = set(data) - known
    if unknown:
        raise InvalidArgumentError(f"{where} has no {', '.join(sorted(unknown))}.")


def program_digest(program: Program) -> str:
    """A stable digest of the definition: the stores keep each distinct definition once and
    every history snapshot names it (docs/goals.md, "Storage")."""
    text = json.dumps(program_to_json(program), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
