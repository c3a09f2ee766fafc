"""What crosses a layer has a type a reader can open, not ``Any``.

strict mypy checks a call only as far as its types go: a ``runner: Any`` lets a renamed runner
method break every call site through it unseen. Above the engine (``forms/``) and the store
(``store/``), the runner is :class:`~formctl.forms.runner.FormRunner`, the model
:class:`~formctl.agent.models.base.ChatModel`, the store a protocol of ``forms/adapter.py``, each
imported under ``TYPE_CHECKING`` (no start-up cost; a CLI module without
``from __future__ import annotations`` quotes the annotation). Data of no fixed shape is
:mod:`formctl.json_types`'s ``JsonValue`` / ``JsonObject`` / ``FieldValue``, the one module
allowed to say ``Any``.

mypy enforces it (``disallow_any_explicit`` for the packages above the engine, pyproject.toml);
these tests keep that promise from being loosened quietly, and fail without running mypy:

- **No seam typed ``Any``**: a parameter named ``runner``, ``model``, ``store``, ``adapter``,
  ``person`` or ``conversation_store`` (or ending in ``_runner`` / ``_model``) is not annotated
  ``Any`` (``Any | None`` and ``Optional[Any]`` included), outside ``forms/`` and ``store/``.
- **No annotation above the engine mentions ``Any``**, and no module there imports it.
- **mypy is told so**: every module of those packages falls under a ``[[tool.mypy.overrides]]``
  block of pyproject.toml that sets ``disallow_any_explicit = true``, and no block turns it off
  for any of them.
"""

from __future__ import annotations

import ast
import functools
import tomllib
from collections import Counter
from fnmatch import fnmatchcase
from pathlib import Path

import formctl

SRC = Path(formctl.__file__).resolve().parent
PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
SEAM_NAMES = frozenset({"runner", "model", "store", "adapter", "person", "conversation_store"})
BELOW_THE_SEAMS = ("forms/", "store/")
# The layers above the engine (pyproject's import-linter contract: cli > eval > transcripts > agent
# > store > goals > forms; the store is the engine's other half).
TYPED_LAYERS = ("goals", "agent", "transcripts", "eval", "cli")


@functools.cache
def _modules() -> dict[str, ast.Module]:
    return {p.relative_to(SRC).as_posix(): ast.parse(p.read_text(encoding="utf-8")) for p in sorted(SRC.rglob("*.py"))}


def _expression(annotation: ast.expr | None) -> ast.expr | None:
    """The annotation as an expression: a quoted one (``"FormRunner"``) parsed."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            return ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    return annotation


def _is_any(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id == "Any") or (isinstance(node, ast.Attribute) and node.attr == "Any")


def _is_bare_any(annotation: ast.expr | None) -> bool:
    """``Any``, ``Any | None``, ``Optional[Any]``: nothing a checker can hold a call to."""
    node = _expression(annotation)
    if node is None:
        return False
    if isinstance(node, ast.BinOp):
        return _is_bare_any(node.left) or _is_bare_any(node.right)
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "Optional":
        return _is_bare_any(node.slice)
    return _is_any(node)


def _mentions_any(annotation: ast.expr | None) -> bool:
    node = _expression(annotation)
    if node is None:
        return False
    quoted = (n for n in ast.walk(node) if n is not node and isinstance(n, ast.Constant) and isinstance(n.value, str))
    return any(_is_any(n) for n in ast.walk(node)) or any(_mentions_any(n) for n in quoted)


def _is_seam(name: str) -> bool:
    return name in SEAM_NAMES or name.endswith(("_runner", "_model"))


def _functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    a = function.args
    return [*a.posonlyargs, *a.args, *a.kwonlyargs, *(x for x in (a.vararg, a.kwarg) if x is not None)]


def _seams_typed_any() -> dict[tuple[str, str, str], int]:
    """(module, function, parameter) → line, for each seam parameter annotated Any."""
    found = {}
    for module, tree in _modules().items():
        if module.startswith(BELOW_THE_SEAMS):
            continue
        for function in _functions(tree):
            for param in _parameters(function):
                if _is_seam(param.arg) and _is_bare_any(param.annotation):
                    found[(module, function.name, param.arg)] = function.lineno
    return found


def _any_annotations() -> Counter[str]:
    counts: Counter[str] = Counter()
    for module, tree in _modules().items():
        package = module.split("/")[0]
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                annotations = [p.annotation for p in _parameters(node)] + [node.returns]
            elif isinstance(node, ast.AnnAssign):
                annotations = [node.annotation]
            else:
                continue
            counts[package] += sum(_mentions_any(a) for a in annotations)
    return counts


def test_no_seam_above_the_engine_is_typed_any():
    found = sorted(f"src/formctl/{m}:{line} {f}({p}: Any)" for (m, f, p), line in _seams_typed_any().items())
    assert not found, (
        "A runner, model, store, adapter or person typed Any: use FormRunner, ChatModel or the store's "
        "protocol (imported under TYPE_CHECKING):\n" + "\n".join(found)
    )


def test_no_annotation_above_the_engine_mentions_any():
    counts = _any_annotations()
    found = {p: counts[p] for p in TYPED_LAYERS if counts[p]}
    assert not found, f"Annotations that mention Any (package: how many); use json_types or a real type: {found}"
    importing = sorted(m for m, tree in _modules().items() if m.split("/")[0] in TYPED_LAYERS and _imports_any(tree))
    assert not importing, f"Modules above the engine that import Any: {importing}"


def _module_name(path: str) -> str:
    dotted = "formctl." + path.removesuffix(".py").replace("/", ".")
    return dotted.removesuffix(".__init__")


def _covers(pattern: str, module: str) -> bool:
    """mypy's override patterns: ``a.b`` is that module, ``a.b.*`` it and everything under it."""
    if pattern.endswith(".*"):
        return module == pattern[:-2] or fnmatchcase(module, pattern)
    return module == pattern


def test_mypy_refuses_explicit_any_in_every_module_above_the_engine():
    overrides = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["mypy"]["overrides"]
    on = [o["module"] for o in overrides if o.get("disallow_any_explicit") is True]
    off = [o["module"] for o in overrides if o.get("disallow_any_explicit") is False]
    patterns_on = [p for m in on for p in ([m] if isinstance(m, str) else m)]
    patterns_off = [p for m in off for p in ([m] if isinstance(m, str) else m)]
    modules = [_module_name(m) for m in _modules() if m.split("/")[0] in TYPED_LAYERS]
    assert len(modules) > 100  # every module of the five packages, read from the tree
    unchecked = [m for m in modules if not any(_covers(p, m) for p in patterns_on)]
    exempt = [m for m in modules if any(_covers(p, m) for p in patterns_off)]
    assert not unchecked, f"Not checked with disallow_any_explicit: {unchecked}"
    assert not exempt, f"Exempted from disallow_any_explicit: {exempt}"


def _imports_any(tree: ast.Module) -> bool:
    return any(
        isinstance(node, ast.ImportFrom) and node.module == "typing" and any(a.name == "Any" for a in node.names)
        for node in ast.walk(tree)
    )


def test_the_checks_see_what_they_look_for():
    """The finders themselves: a seam typed Any is found in each spelling, a typed one is not."""
    source = (
        "def f(runner: Any, model: 'Any | None', store: Optional[Any], goal_runner: typing.Any,\n"
        "      adapter: FormAdapter, person: 'Person', data: dict[str, Any]) -> Any: ...\n"
    )
    (function,) = _functions(ast.parse(source))
    bare = [p.arg for p in _parameters(function) if _is_seam(p.arg) and _is_bare_any(p.annotation)]
    assert bare == ["runner", "model", "store", "goal_runner"]
    assert sum(_mentions_any(p.annotation) for p in _parameters(function)) + _mentions_any(function.returns) == 6
    assert _imports_any(ast.parse("from typing import TYPE_CHECKING, Any\n"))
    assert not _imports_any(ast.parse("from formctl.json_types import JsonValue\n"))
    assert _covers("formctl.cli.*", "formctl.cli") and _covers("formctl.cli.*", "formctl.cli.chat.session")
    assert not _covers("formctl.cli.*", "formctl.client") and not _covers("formctl.cli", "formctl.cli.app")
