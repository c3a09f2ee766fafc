"""An instance's status is asked through ``formctl.forms.lifecycle``, never with its bare words.

"Is this instance still open?" has one home (docs/engine.md, "Completion and closing"): the
typed ``Status`` and the named predicates (``is_open``, ``is_continuable``, ``is_closed``,
``is_awaiting``, ``is_in_progress``, ``is_ended``, ...). A call site that compares a status with
``"active"`` or keeps its own ``("active", "ready", "awaiting")`` is a second home for the
rule, which the next status (``ready`` was one) silently misses.

This test reads every module of ``src/formctl`` (its syntax tree, so docstrings, messages and
dictionary keys such as ``"complete": view.complete`` are not counted) and finds a status word
used as a status:

- compared (``status == "awaiting"``, ``status in ("active", "ready")``, ``case "ready":``);
- kept as a set of statuses (``_OPEN = ("active", "ready", "awaiting")``);
- passed or defaulted as a ``status`` (``status="complete"``, ``status: str = "active"``,
  ``{"status": "stale"}``, ``self.status = "active"``);
- used as the keys of a table by status (three or more of the words).

The serialisation boundary, where the words are the data, is named here and nowhere else:
``forms/instance.py`` defines ``Status`` (its members *are* the stored words) and
``forms/lifecycle.py`` holds the rules. The PostgreSQL queries say ``'abandoned'`` inside SQL
text, which is the stored form and not Python: this test does not see it, by design.
"""

from __future__ import annotations

import ast
import functools
from collections import Counter
from pathlib import Path

import formctl

SRC = Path(formctl.__file__).resolve().parent
WORDS = frozenset({"active", "ready", "awaiting", "complete", "abandoned", "stale"})

BOUNDARY = frozenset({"forms/instance.py", "forms/lifecycle.py"})


def _is_word(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in WORDS


def _words_in(node: ast.expr) -> list[ast.expr]:
    if _is_word(node):
        return [node]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e for e in node.elts if _is_word(e)]
    return []


def _named_status(target: ast.AST) -> bool:
    name = target.id if isinstance(target, ast.Name) else target.attr if isinstance(target, ast.Attribute) else ""
    return name.lower().endswith("status")


def bare_status_lines(source: str) -> list[int]:
    """The lines of ``source`` that use a status word as a status (see the module docstring)."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        found: list[ast.expr] = []
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                found += _words_in(operand)
        elif isinstance(node, ast.MatchValue):
            found += _words_in(node.value)
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            if len(node.elts) >= 2 and all(_is_word(e) for e in node.elts):
                found += node.elts
        elif isinstance(node, ast.keyword):
            if node.arg is not None and node.arg.endswith("status") and _is_word(node.value):
                found.append(node.value)
        elif isinstance(node, ast.arguments):
            positional = [*node.posonlyargs, *node.args]
            pairs = [
                *zip(positional[len(positional) - len(node.defaults) :], node.defaults),
                *zip(node.kwonlyargs, node.kw_defaults),
            ]
            found += [d for a, d in pairs if d is not None and a.arg.endswith("status") and _is_word(d)]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is not None and _is_word(node.value) and any(_named_status(t) for t in targets):
                found.append(node.value)
        elif isinstance(node, ast.Dict):
            keys = [k for k in node.keys if k is not None and _is_word(k)]
            if len(keys) >= 3:
                found += keys
            found += [
                v
                for k, v in zip(node.keys, node.values)
                if isinstance(k, ast.Constant) and k.value == "status" and _is_word(v)
            ]
        lines.update(n.lineno for n in found)
    return sorted(lines)


@functools.cache
def _scan() -> Counter[str]:
    counts: Counter[str] = Counter()
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel in BOUNDARY:
            continue
        n = len(bare_status_lines(path.read_text(encoding="utf-8")))
        if n:
            counts[rel] = n
    return counts


def test_no_module_outside_the_lifecycle_says_a_status_with_its_bare_word():
    offenders = _scan()
    assert not offenders, (
        "bare status words (ask formctl.forms.lifecycle: Status and its predicates instead): "
        + ", ".join(
            f"{rel} ({n} line{'s' * (n != 1)}: {bare_status_lines((SRC / rel).read_text())})"
            for rel, n in offenders.items()
        )
    )


def test_the_check_finds_every_way_of_saying_a_status():
    source = """
if instance.status == "abandoned":
    pass
if row.status in ("active", "ready"):
    pass
_OPEN = frozenset({"active", "awaiting"})
runner.find(status="complete")
def make(status: str = "active"): ...
view = {"status": "stale"}
self_status = "ready"
STYLE = {"active": "cyan", "ready": "magenta", "complete": "green"}
match status:
    case "awaiting":
        pass
"""
    assert bare_status_lines(source) == [2, 4, 6, 7, 8, 9, 10, 11, 13]


def test_the_check_leaves_the_words_alone_where_they_are_not_a_status():
    source = '''
"""A docstring may say the form is "complete"."""
data = {"complete": view.complete, "status": view.status}
kinds.append("complete")
message = f"the form is complete"
if instance.status == Status.ABANDONED or is_open(instance):
    pass
'''
    assert bare_status_lines(source) == []
