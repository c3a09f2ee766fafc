"""Names a package exports but imports on first use (PEP 562), for ``formctl`` and ``formctl.goals``.

A leaf: it imports no part of formctl, so any package may use it without loading more."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any


def lazy_exports(
    package: str, exports: dict[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose ``exports`` map each name to
    the module it comes from. A name is imported on first use and kept in ``namespace`` (the
    package's globals), so the second use is a plain lookup."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
