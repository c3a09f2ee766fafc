"""Programs registered like forms: ``[programs.KEY]`` tables in the registry file.

```toml
[programs.client-intake]
name = "Client intake"
description = "Identity, the intake form and the conflict check, over several visits."
module = "client_intake_program:client_intake_program"
hooks = "intake_hooks:hooks"   # optional: the host's goal hooks, for formctl program resume-hooks
```

A program's module is imported from the registry file's folder on first use only (the same
loader as the forms'), so listing programs imports none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from formctl.errors import NotFoundError, RegistryError
from formctl.forms.registry import module_loader, read_registry
from formctl.goals.definition import Program

__all__ = ["ProgramRegistry", "ProgramRegistration"]


@dataclass(frozen=True, slots=True)
class ProgramRegistration:
    key: str
    name: str
    description: str
    load: Callable[[], object]  # a Program, or a function that returns one (checked by ProgramRegistry.load)
    hooks: Callable[[], object] | None = None  # loads the host's goal hooks, when registered

    def to_dict(self) -> dict[str, str]:
        return {"key": self.key, "name": self.name, "description": self.description}


class ProgramRegistry:
    def __init__(self) -> None:
        self._entries: dict[str, ProgramRegistration] = {}

    def register(
        self,
        key: str,
        *,
        name: str,
        description: str = "",
        load: Callable[[], object],
        hooks: Callable[[], object] | None = None,
    ) -> ProgramRegistry:
        self._entries[key] = ProgramRegistration(key, name, description, load, hooks)
        return self

    def hooks(self, key: str) -> object:
        """The goal hooks registered with program ``key`` (``hooks = "module:attribute"``: a mapping
        or an object with on_enter/on_complete/on_reopen), or None when none are registered."""
        entry = self._entries.get(key)
        if entry is None or entry.hooks is None:
            return None
        return entry.hooks()

    def list(self) -> list[ProgramRegistration]:
        return list(self._entries.values())

    def load(self, key: str) -> Program:
        entry = self._entries.get(key)
        if entry is None:
            known = ", ".join(self._entries) or "none are registered"
            raise NotFoundError(f'No program "{key}" (programs: {known}).')
        program = entry.load()
        if callable(program) and not isinstance(program, Program):
            program = program()
        if not isinstance(program, Program):
            raise RegistryError(f'Program "{key}" is a {type(program).__name__}, not a define_program(...) result.')
        if program.key != key:
            raise RegistryError(f'Program registered as "{key}" is defined with the key "{program.key}".')
        return program

    @classmethod
    def from_toml(cls, path: str | Path) -> ProgramRegistry:
        """The ``[programs]`` tables of ``registry.toml`` (none is an empty registry), read as
        the forms' are (:func:`formctl.forms.registry.read_registry`)."""
        folder, entries = read_registry(path, "programs")
        hooks = _hook_specs(Path(path)) if entries else {}
        registry = cls()
        for entry in entries:
            spec = hooks.get(entry.key)
            registry.register(
                entry.key,
                name=entry.name,
                description=entry.description,
                load=module_loader(entry.module, folder, noun="program"),
                hooks=module_loader(spec, folder, noun="goal hooks") if spec else None,
            )
        return registry


def _hook_specs(path: Path) -> dict[str, str]:
    """``{program key: "module:attribute"}`` of the ``hooks`` the ``[programs]`` tables name."""
    import tomllib

    tables = tomllib.loads(path.read_text(encoding="utf-8")).get("programs", {})
    out = {}
    for key, entry in tables.items():
        spec = entry.get("hooks") if isinstance(entry, dict) else None
        if spec is None:
            continue
        if not isinstance(spec, str) or not all(part.strip() for part in spec.partition(":")[::2]):
            raise RegistryError(f'Form registry {path}: [programs.{key}] hooks must be "module:attribute".')
        out[key] = spec
    return out
