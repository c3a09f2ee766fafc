"""formctl: run conversational forms in a terminal.

The public API is re-exported here and imported lazily (PEP 562), so ``import formctl``
and ``formctl list`` stay fast: pydantic, the engine and the store load on first use of
a name, and anthropic and prompt-toolkit never load from here at all.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "define_form": "formctl.forms.definition",
    "FormBuilder": "formctl.forms.definition",
    "Patch": "formctl.forms.definition",
    "Fail": "formctl.forms.definition",
    "Jump": "formctl.forms.definition",
    "Complete": "formctl.forms.definition",
    "Terminate": "formctl.forms.definition",
    "FormRegistry": "formctl.forms.registry",
    "FormRunner": "formctl.forms.runner",
    "MemoryAdapter": "formctl.store.memory",
    "JsonFileAdapter": "formctl.store.jsonfile",
    "FormAdapter": "formctl.store.base",
    "apply_entry_commit": "formctl.store.base",
    "FormError": "formctl.forms.errors",
    "FormBlockedError": "formctl.forms.errors",
    "FormStaleError": "formctl.forms.errors",
    "FormDefinitionError": "formctl.forms.errors",
    "ConflictError": "formctl.forms.errors",
    "NotFoundError": "formctl.forms.errors",
    "UnknownFormError": "formctl.forms.errors",
    "StoreError": "formctl.forms.errors",
    "StoreDamagedError": "formctl.forms.errors",
    "InvalidArgumentError": "formctl.forms.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'formctl' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from formctl.forms.definition import Complete, Fail, FormBuilder, Jump, Patch, Terminate, define_form
    from formctl.forms.errors import (
        ConflictError,
        FormBlockedError,
        FormDefinitionError,
        FormError,
        FormStaleError,
        InvalidArgumentError,
        NotFoundError,
        StoreDamagedError,
        StoreError,
        UnknownFormError,
    )
    from formctl.forms.registry import FormRegistry
    from formctl.forms.runner import FormRunner
    from formctl.store.base import FormAdapter, apply_entry_commit
    from formctl.store.jsonfile import JsonFileAdapter
    from formctl.store.memory import MemoryAdapter
