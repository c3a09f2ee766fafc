"""What crosses a layer has a type a reader can open, not ``Any``.

strict mypy checks a call only as far as its types go: a ``runner: Any`` lets a renamed runner
method break every call site through it unseen. Above the engine (``forms/``) and the store
(``store/``), the runner is :class:`~formctl.forms.runner.FormRunner`, the model
:class:`~formctl.agent.models.base.ChatModel`, the store a protocol of ``forms/adapter.py``, each
imported under ``TYPE_CHECKING`` (no start-up cost; a CLI module without
``from __future__ import annotations`` quotes the annotation). ``Any`` stays for values that
really are arbitrary JSON.

Two rules, read from the syntax tree of every module of ``src/formctl``:

- **No seam typed ``Any``**: a parameter named ``runner``, ``model``, ``store``, ``adapter``,
  ``person`` or ``conversation_store`` (or ending in ``_runner`` / ``_model``) is not annotated
  ``Any`` (``Any | None`` and ``Optional[Any]`` included), outside ``forms/`` and ``store/``.
  :data:`NOT_TYPED_YET` lists the ones that were still ``Any`` when this test was written, in
  modules whose owners were busy elsewhere; it may only shrink: typing one fails this test
  until its line here is deleted, so the list says what is left.
- **A ratchet on ``Any``**: the annotations that mention ``Any`` in each package above the
  engine number no more than :data:`ANY_CEILING` (measured when this test was written). Lower
  a ceiling when a change brings its count down.
"""

from __future__ import annotations

import ast
import functools
from collections import Counter
from pathlib import Path

import formctl

SRC = Path(formctl.__file__).resolve().parent
SEAM_NAMES = frozenset({"runner", "model", "store", "adapter", "person", "conversation_store"})
BELOW_THE_SEAMS = ("forms/", "store/")

# (module, function, parameter) still typed Any. Shrink only: type one, then delete its line.
# cli/workspace.py's and cli/mcp's ``store`` is the --store folder (``str | None``), not a store.
NOT_TYPED_YET = frozenset(
    {
        ("goals/runner.py", "goal_store_of", "adapter"),
        ("goals/runner.py", "__init__", "adapter"),
    }
)

# The annotations mentioning Any in each package above the engine: no more than this. Measured on
# main once the fourth round's features were merged (the interviewer's readers, the support desk,
# goal programs in the chat, MCP and transcripts added about 90, most of them JSON data): lower a
# number when you type something, never raise it without saying why in the commit.
ANY_CEILING = {"agent": 0, "cli": 0, "eval": 0, "transcripts": 0, "goals": 41}


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
    found = _seams_typed_any()
    new = sorted(
        f"src/formctl/{m}:{line} {f}({p}: Any)" for (m, f, p), line in found.items() if (m, f, p) not in NOT_TYPED_YET
    )
    assert not new, (
        "A runner, model, store, adapter or person typed Any: use FormRunner, ChatModel or the store's "
        "protocol (imported under TYPE_CHECKING):\n" + "\n".join(new)
    )


def test_the_list_of_seams_not_typed_yet_only_shrinks():
    typed_since = sorted(f"{m} {f}({p})" for m, f, p in NOT_TYPED_YET - set(_seams_typed_any()))
    assert not typed_since, "Typed now (or gone): delete these lines from NOT_TYPED_YET:\n" + "\n".join(typed_since)


def test_the_any_annotations_of_each_package_above_the_engine_do_not_grow():
    counts = _any_annotations()
    grown = {p: (counts[p], most) for p, most in ANY_CEILING.items() if counts[p] > most}
    assert not grown, (
        "More annotations mention Any than before (package: now, ceiling); type the new ones "
        f"(Any only for arbitrary JSON): {grown}"
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
