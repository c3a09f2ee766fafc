"""The registry: form ids mapped to lazy loaders.

Listing reads only the registrations, so ``formctl list`` never imports a form module.
A form is imported and compiled on first use, once; the compile is cached.
"""

from __future__ import annotations

import builtins
import inspect
import os
import sys
import threading
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from formctl.errors import FormDefinitionError, FormError, RegistryError, UnknownFormError

if TYPE_CHECKING:
    from types import ModuleType

    from formctl.forms.compile import CompiledForm


@dataclass(frozen=True, slots=True)
class Registration:
    id: str
    name: str
    description: str
    load: Callable[[], Any]
    module: str | None = None
    subject: str | None = None  # "required": ``formctl run`` never files it under a default subject

    @property
    def subject_required(self) -> bool:
        """Whose form it is must be said every time (a desk filling in intakes for many clients)."""
        return self.subject == SUBJECT_REQUIRED

    def to_dict(self) -> dict[str, str]:
        return {"id": self.id, "name": self.name, "description": self.description}


SUBJECT_REQUIRED = "required"
"""``subject = "required"`` in a registry entry: ``formctl run`` asks whom the form is for (or
refuses when it cannot ask) instead of using the login name."""


class FormRegistry:
    """Form ids → lazy loaders, with each compile cached after its first successful load."""

    def __init__(self) -> None:
        self._registrations: dict[str, Registration] = {}
        self._compiled: dict[str, CompiledForm] = {}
        self._lock = threading.RLock()
        self.folder: Path | None = None

    def register(
        self,
        id: str,
        *,
        name: str,
        description: str = "",
        load: Callable[[], Any],
        module: str | None = None,
        subject: str | None = None,
    ) -> FormRegistry:
        """Register a form without loading it. Returns the registry, so calls chain.

        ``subject="required"``: whom each instance is for must be said (see :data:`SUBJECT_REQUIRED`)."""
        if subject not in (None, SUBJECT_REQUIRED):
            raise RegistryError(f'Form "{id}": subject must be "{SUBJECT_REQUIRED}" or left out, not {subject!r}.')
        self._registrations[id] = Registration(id, name, description, load, module, subject)
        self._compiled.pop(id, None)
        return self

    def has(self, id: str) -> bool:
        return id in self._registrations

    def list(self) -> builtins.list[dict[str, str]]:
        """``[{id, name, description}]`` in registration order, straight from the registrations."""
        return [r.to_dict() for r in self._registrations.values()]

    def registrations(self) -> builtins.list[Registration]:
        return list(self._registrations.values())

    def registration(self, id: str) -> Registration:
        """The registration of ``id`` (nothing imported); :class:`UnknownFormError` if there is none."""
        found = self._registrations.get(id)
        if found is None:
            raise UnknownFormError(f'No form registered as "{id}".')
        return found

    def load(self, id: str) -> CompiledForm:
        """The compiled form for ``id``: loaded and compiled on first call, cached on success."""
        cached = self._compiled.get(id)
        if cached is not None:
            return cached
        with self._lock:
            cached = self._compiled.get(id)
            if cached is not None:
                return cached
            registration = self._registrations.get(id)
            if registration is None:
                raise UnknownFormError(f'No form registered as "{id}".')
            compiled = _compile_loaded(_call_loader(registration.load))
            if compiled.id != id:
                raise FormDefinitionError(f'Form registered as "{id}" defines itself as "{compiled.id}".', [id])
            self._compiled[id] = compiled
            return compiled

    def invalidate(self, id: str | None = None) -> None:
        """Drop one cached compile, or all of them."""
        if id is None:
            self._compiled.clear()
        else:
            self._compiled.pop(id, None)

    @classmethod
    def from_toml(cls, path: str | Path) -> FormRegistry:
        """Read ``registry.toml``: ``[forms.ID]`` tables with name, description and ``module = "mod:attr"``.

        Modules are imported from the registry file's folder, on first load only.
        """
        folder, entries = read_registry(path, "forms")
        registry = cls()
        registry.folder = folder
        for entry in entries:
            registry.register(
                entry.key,
                name=entry.name,
                description=entry.description,
                load=module_loader(entry.module, folder),
                module=entry.module,
                subject=entry.subject,
            )
        return registry


@dataclass(frozen=True, slots=True)
class RegistryEntry:
    """One ``[TABLE.KEY]`` table of ``registry.toml``: a form's or a program's name and module."""

    key: str
    name: str
    description: str
    module: str  # "module:attribute", imported from the registry file's folder
    subject: str | None = None  # a form's ``subject = "required"``


def read_registry(path: str | Path, table: str) -> tuple[Path, builtins.list[RegistryEntry]]:
    """The ``[TABLE.KEY]`` entries of the registry file at ``path``, in file order, and the folder
    their modules are imported from. One file holds both tables (``forms``, and the goal
    programs' ``programs``), so both registries read it here; no table is no entries. Every
    problem is one :class:`RegistryError` naming the file (and the table, or the entry)."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RegistryError(f"No form registry at {path}.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RegistryError(f"Cannot read form registry {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise RegistryError(f"Form registry {path} is not valid TOML: {exc}") from None
    tables = data.get(table, {})
    if not isinstance(tables, dict):
        raise RegistryError(f"Form registry {path}: [{table}] must be a table of {table}.")
    entries = []
    for key, entry in tables.items():
        module = entry.get("module") if isinstance(entry, dict) else None
        if not isinstance(module, str) or not all(part.strip() for part in module.partition(":")[::2]):
            raise RegistryError(f'Form registry {path}: [{table}.{key}] needs module = "module:attribute".')
        subject = entry.get("subject")
        if subject not in (None, SUBJECT_REQUIRED):
            raise RegistryError(
                f'Form registry {path}: [{table}.{key}] subject must be "{SUBJECT_REQUIRED}" or left out.'
            )
        entries.append(
            RegistryEntry(key, str(entry.get("name", key)), str(entry.get("description", "")), module, subject)
        )
    return path.resolve().parent, entries


def module_loader(spec: str, folder: Path, *, noun: str = "form") -> Callable[[], Any]:
    """A loader for ``spec`` (``"module:attribute"``) that imports the module from ``folder`` when
    first called, so listing a registry imports nothing. ``noun`` names what the module holds
    in its errors ("form", "program")."""
    module_name, _, attribute = spec.partition(":")

    def load() -> Any:
        try:
            module = _import_from(module_name, folder)
        except ImportError as exc:
            raise RegistryError(f'Cannot import {noun} module "{module_name}" from {folder}: {exc}') from exc
        except FormError:
            raise  # the definition's own error (duplicate ids, ...) already says what is wrong
        except Exception as exc:
            # Code at the module's top level failed (a SyntaxError, a RuntimeError, ...): without
            # the module's name the one-line error reads as formctl's own failure.
            raise RegistryError(
                f'{noun.capitalize()} module "{module_name}" failed while importing: {type(exc).__name__}: {exc}'
            ) from exc
        try:
            return getattr(module, attribute)
        except AttributeError:
            raise RegistryError(f'{noun.capitalize()} module "{module_name}" has no attribute "{attribute}".') from None

    return load


# Module name → (file, mtime_ns, size) of the file a registry last imported it from.
_imported: dict[str, tuple[str, int, int]] = {}
_import_lock = threading.Lock()


def _import_from(module_name: str, folder: Path) -> ModuleType:
    """``module_name`` as the file in ``folder`` reads now.

    Python keeps one module per name for the whole process, and ``import_module`` takes the
    first folder on ``sys.path`` that has one. A process that reads two forms folders which
    both hold a ``travel_claim.py`` (a host serving two projects, or two ``formctl`` commands
    run in one process) would otherwise get whichever was imported first for both, and a form
    edited after its first import would never be read again. So the module is looked up in
    ``folder`` itself, and imported again only when the one already loaded under its name came
    from another file, or from this file before it changed; otherwise it is reused, and a form
    module is still imported once per process. A module the folder does not hold (an installed
    package named in the registry) is imported as Python finds it.

    The folder is on ``sys.path`` only while the module is imported (so a form module may
    import a module beside it at its top level), then taken off again if it was not there
    before: a host that opens many projects in one process does not collect their folders."""
    top = module_name.partition(".")[0]
    folder_text = str(folder)
    with _import_lock:
        added = folder_text not in sys.path
        if added:
            sys.path.insert(0, folder_text)
        try:
            return _import_from_folder(module_name, top, folder)
        finally:
            if added and folder_text in sys.path:
                sys.path.remove(folder_text)


def _import_from_folder(module_name: str, top: str, folder: Path) -> ModuleType:
    """The body of :func:`_import_from`, under its lock and with ``folder`` on ``sys.path``."""
    import importlib.machinery
    import importlib.util

    # The folder's finder caches its listing: a module written since would be missed.
    invalidate = getattr(sys.path_importer_cache.get(str(folder)), "invalidate_caches", None)
    if invalidate is not None:
        invalidate()
    spec = importlib.machinery.PathFinder.find_spec(top, [str(folder)])
    if spec is None or spec.origin is None or spec.loader is None:
        return importlib.import_module(module_name)
    if not (_current(top, spec.origin) and _current(module_name, None)):
        for name in [n for n in sys.modules if n == top or n.startswith(top + ".")]:
            del sys.modules[name]
        module = importlib.util.module_from_spec(spec)
        sys.modules[top] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(top, None)
            raise
    module = importlib.import_module(module_name)
    for loaded in {sys.modules[top], module}:
        try:
            _imported[loaded.__name__] = _stamp(loaded.__file__ or "")
        except OSError:  # no file (a namespace package), or gone since: nothing to compare later
            _imported.pop(loaded.__name__, None)
    return module


def _current(name: str, origin: str | None) -> bool:
    """Whether the module loaded as ``name`` (from ``origin``, when given) is its file as it reads now.
    A module not yet loaded is current (nothing to throw away); one loaded by someone else from
    the same file is taken as it is."""
    loaded = sys.modules.get(name)
    if loaded is None:
        return origin is None
    file = getattr(loaded, "__file__", None)
    if origin is not None and file != origin:
        return False
    if not file:
        return True
    try:
        return _imported.get(name, _stamp(file)) == _stamp(file)
    except OSError:
        return False


def _stamp(file: str) -> tuple[str, int, int]:
    info = os.stat(file)
    return file, info.st_mtime_ns, info.st_size


def _call_loader(load: Callable[[], Any]) -> Any:
    result = load()
    if inspect.isawaitable(result):
        # Imported here: asyncio costs ~50 ms to import, and ``formctl list`` (which reads
        # this module) has a start-up budget of 3x ``python -c pass``.
        import asyncio

        result = asyncio.run(_await(result))
    return result


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _compile_loaded(loaded: Any) -> CompiledForm:
    from formctl.forms.builder import FormBuilder
    from formctl.forms.compile import CompiledForm, compile_form
    from formctl.forms.definition import FormDef

    if isinstance(loaded, CompiledForm):
        return loaded
    if isinstance(loaded, FormBuilder):
        return loaded.build()
    if isinstance(loaded, FormDef):
        return compile_form(loaded)
    raise FormDefinitionError(
        f"A form loader returned {type(loaded).__name__}, not a form (use define_form(...).build()).", []
    )
