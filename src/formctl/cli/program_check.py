"""``formctl check`` of a goal program: a ``[programs]`` key, or a program file as ``program
revise --from`` takes it (TOML, or JSON as ``program show --json`` prints).

What is checked is what ``program start`` and ``program revise --from`` check before they store
a definition: it loads (a module that imports, a ``define_program(...)`` under the key it is
registered as, keys unique within the program and each goal), and every form its live items are
bound to is registered (:func:`formctl.goals.finding.check_bound_forms`). Locks are a rule
between two versions, checked by ``revise`` against the stored one, so there is nothing here to
check them against.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from formctl.errors import InvalidArgumentError
from formctl.json_types import JsonObject, JsonValue

if TYPE_CHECKING:
    from formctl.forms.registry import FormRegistry
    from formctl.goals.definition import Program

__all__ = ["ProgramCheck", "check_program", "names_a_program", "read_program_file"]


@dataclass
class ProgramCheck:
    """What checking one program found: ``error`` is None when it passes."""

    name: str
    error: str | None = None
    goals: int = 0
    items: int = 0
    forms: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> JsonObject:
        out: JsonObject = {"program": self.name, "ok": self.ok}
        if self.error is not None:
            out["error"] = self.error
        else:
            out.update(goals=self.goals, items=self.items, forms=self.forms)
        return out

    def line(self) -> str:
        """One line: what the program holds, or what is wrong with it."""
        if self.error is not None:
            return f"program {self.name}: {self.error}"
        bound = f"; bound to {', '.join(self.forms)} (registered)" if self.forms else "; no item is bound to a form"
        return f"program {self.name}: ok, {self.goals} goal(s), {self.items} item(s){bound}"


def names_a_program(name: str, forms: str | None) -> bool:
    """Is ``name`` a program file, or a key under ``[programs]`` in the registry file?"""
    from formctl.cli.workspace import registry_path
    from formctl.errors import RegistryError
    from formctl.goals.registry import ProgramRegistry

    if name.endswith((".toml", ".json")) and Path(name).is_file():
        return True
    try:
        return any(r.key == name for r in ProgramRegistry.from_toml(registry_path(forms)).list())
    except RegistryError:
        return False


def read_program_file(source: str) -> Program:
    """The program in ``source`` (TOML, or JSON; the output of ``program show --json`` gives its
    ``definition``). A file that cannot be read, parsed or made a program is InvalidArgumentError."""
    from formctl.goals.definition import program_from_json

    try:
        with open(source, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise InvalidArgumentError(f"Cannot read {source}: {exc.strerror or exc}.") from None
    try:
        data: JsonValue = tomllib.loads(raw.decode("utf-8")) if source.endswith(".toml") else json.loads(raw)
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidArgumentError(
            f"{source} is not a program file ({type(exc).__name__}: {str(exc).splitlines()[0]})."
        ) from None
    if isinstance(data, dict) and "definition" in data and isinstance(data.get("goals"), list):
        data = data["definition"]  # the output of show --json
    return program_from_json(data)


def check_program(name: str, registry: FormRegistry, forms: str | None) -> ProgramCheck:
    """Load the program ``name`` names (see :func:`names_a_program`) and check it; never raises
    for a broken program (a module that fails to import is a finding too)."""
    from formctl.cli.base import _first_line, debugging
    from formctl.cli.workspace import registry_path
    from formctl.errors import FormError
    from formctl.goals.finding import check_bound_forms
    from formctl.goals.registry import ProgramRegistry

    found = ProgramCheck(name)
    try:
        if name.endswith((".toml", ".json")) and Path(name).is_file():
            program = read_program_file(name)
        else:
            program = ProgramRegistry.from_toml(registry_path(forms)).load(name)
        check_bound_forms(program, [f["id"] for f in registry.list()])
    except Exception as exc:
        if debugging():
            raise
        found.error = exc.message if isinstance(exc, FormError) else f"{type(exc).__name__}: {_first_line(exc)}"
        return found
    live = [(g, i) for g in program.goals if not g.retired for i in g.items if not i.retired]
    found.goals = sum(1 for g in program.goals if not g.retired)
    found.items = len(live)
    found.forms = sorted({i.form for _, i in live if i.form is not None})
    return found
