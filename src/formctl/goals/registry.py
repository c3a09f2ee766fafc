"""Programs registered like forms: ``[programs.KEY]`` tables in the registry file.

```toml
[programs.client-intake]
name = "Client intake"
description = "Identity, the intake form and the conflict check, over several visits."
module = "client_intake_program:client_intake_program"
```

A program's module is imported from the registry file's folder on first use only (the same
loader as the forms'), so listing programs imports none of them.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from formctl.errors import NotFoundError, RegistryError
from formctl.forms.registry import _module_loader
from formctl.goals.definition import Program

__all__ = ["ProgramRegistry", "ProgramRegistration"]


@dataclass(frozen=True, slots=True)
class ProgramRegistration:
    key: str
    name: str
    description: str
    load: Callable[[], Any]

    def to_dict(self) -> dict[str, str]:
        return {"key": self.key, "name": self.name, "description": self.description}


class ProgramRegistry:
    def __init__(self) -> None:
        self._entries: dict[str, ProgramRegistration] = {}

    def register(self, key: str, *, name: str, description: str = "", load: Callable[[], Any]) -> ProgramRegistry:
        self._entries[key] = ProgramRegistration(key, name, description, load)
        return self

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
        """The ``[programs]`` tables of ``registry.toml`` (none is an empty registry)."""
        path = Path(path)
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise RegistryError(f"No registry at {path}.") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise RegistryError(f"Cannot read the registry {path}: {exc}") from None
        except tomllib.TOMLDecodeError as exc:
            raise RegistryError(f"The registry {path} is not valid TOML: {exc}") from None
        registry = cls()
        programs = data.get("programs", {})
        if not isinstance(programs, dict):
            raise RegistryError(f"Registry {path}: [programs] must be a table of programs.")
        folder = path.resolve().parent
        for key, entry in programs.items():
            module = entry.get("module") if isinstance(entry, dict) else None
            if not isinstance(module, str) or not all(part.strip() for part in module.partition(":")[::2]):
                raise RegistryError(f'Registry {path}: [programs.{key}] needs module = "module:attribute".')
            registry.register(
                key,
                name=str(entry.get("name", key)),
                description=str(entry.get("description", "")),
                load=_module_loader(module, folder),
            )
        return registry
