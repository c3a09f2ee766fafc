"""A status is asked through its home module, never with its bare words.

"Is this instance still open?" has one home (docs/engine.md, "Completion and closing"): the
typed ``Status`` and the named predicates of ``formctl.forms.lifecycle`` (``is_open``,
``is_continuable``, ``is_closed``, ``is_awaiting``, ``is_in_progress``, ``is_ended``, ...). A call
site that compares a status with ``"active"`` or keeps its own ``("active", "ready", "awaiting")``
is a second home for the rule, which the next status (``ready`` was one) silently misses. The
same holds for the other status vocabularies, each with its own home (:data:`VOCABULARIES`):
a goal item's disposition (``formctl.goals.state.Disposition``, asked with
``formctl.goals.evaluate.is_pending``, ``is_asked``, ``is_settled``) and the status of a run
(``DispatchState.failed``/``ended``/... in ``formctl.forms.instance``; a hook receipt's
``RECEIPT_*`` in ``formctl.goals.state``).

This test reads every module of ``src/formctl`` (its syntax tree, so docstrings, messages and
dictionary keys such as ``"complete": view.complete`` are not counted) and finds a status word
used as a status:

- compared (``status == "awaiting"``, ``status in ("active", "ready")``, ``case "ready":``);
- kept as a set of statuses (``_OPEN = ("active", "ready", "awaiting")``);
- passed or defaulted as a ``status`` or ``disposition`` (``status="complete"``,
  ``status: str = "active"``, ``{"status": "stale"}``, ``self.status = "active"``);
- used as the keys of a table by status (three or more of the words).

The serialisation boundary, where the words are the data, is named here and nowhere else: the
modules that define each vocabulary (their members *are* the stored words) and hold its rules.
The PostgreSQL queries say ``'abandoned'`` inside SQL text, which is the stored form and not
Python: this test does not see it, by design.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import formctl

SRC = Path(formctl.__file__).resolve().parent
WORDS = frozenset({"active", "ready", "awaiting", "complete", "abandoned", "stale"})

# (what the words are, the words, the modules that define them and hold their rules, where to ask)
VOCABULARIES = (
    (
        "an instance's status",
        WORDS,
        frozenset({"forms/instance.py", "forms/lifecycle.py"}),
        "formctl.forms.lifecycle: Status and its predicates",
    ),
    (
        "a goal item's disposition or a goal's status",
        frozenset({"pending", "completed", "deferred", "declined", "reopened", "active", "complete", "retired"}),
        frozenset({"goals/state.py", "goals/evaluate.py"}),
        "formctl.goals.state.Disposition, formctl.goals.evaluate's is_pending/is_asked/is_settled",
    ),
    (
        "the status of a run (a dispatch record, a hook receipt)",
        frozenset({"pending", "running", "ok", "failed"}),
        frozenset({"forms/instance.py", "goals/state.py"}),
        "DispatchState.failed/succeeded/ended/running (formctl.forms.instance), RECEIPT_* (formctl.goals.state)",
    ),
)


def _is_word(node: ast.AST | None, words: frozenset[str] = WORDS) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in words


def _words_in(node: ast.expr, words: frozenset[str]) -> list[ast.expr]:
    if _is_word(node, words):
        return [node]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e for e in node.elts if _is_word(e, words)]
    return []


def _says_status(name: str) -> bool:
    return name.lower().endswith(("status", "disposition"))


def _named_status(target: ast.AST) -> bool:
    name = target.id if isinstance(target, ast.Name) else target.attr if isinstance(target, ast.Attribute) else ""
    return _says_status(name)


def bare_status_lines(source: str, words: frozenset[str] = WORDS) -> list[int]:
    """The lines of ``source`` that use one of ``words`` as a status (see the module docstring)."""
    return _bare_status_lines(ast.parse(source), [words])[0]


def _bare_status_lines(tree: ast.AST, vocabularies: list[frozenset[str]]) -> list[list[int]]:
    """For each set of words, the lines of ``tree`` that use one of them as a status: one walk
    over the tree for all of them (parsing every module is most of this test's time)."""
    lines: list[set[int]] = [set() for _ in vocabularies]
    for node in ast.walk(tree):
        if not isinstance(node, _CAN_SAY_A_STATUS):
            continue  # most nodes (names, calls, attributes...): asking each vocabulary about them was half the time
        for words, found_lines in zip(vocabularies, lines):
            found_lines.update(n.lineno for n in _said_as_status(node, words))
    return [sorted(found) for found in lines]


# The kinds of node _said_as_status looks into; it finds nothing in any other.
_CAN_SAY_A_STATUS = (
    ast.Compare,
    ast.MatchValue,
    ast.Tuple,
    ast.List,
    ast.Set,
    ast.keyword,
    ast.arguments,
    ast.Assign,
    ast.AnnAssign,
    ast.Dict,
)


def _said_as_status(node: ast.AST, words: frozenset[str]) -> list[ast.expr]:
    found: list[ast.expr] = []
    if isinstance(node, ast.Compare):
        for operand in (node.left, *node.comparators):
            found += _words_in(operand, words)
    elif isinstance(node, ast.MatchValue):
        found += _words_in(node.value, words)
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        if len(node.elts) >= 2 and all(_is_word(e, words) for e in node.elts):
            found += node.elts
    elif isinstance(node, ast.keyword):
        if node.arg is not None and _says_status(node.arg) and _is_word(node.value, words):
            found.append(node.value)
    elif isinstance(node, ast.arguments):
        positional = [*node.posonlyargs, *node.args]
        pairs = [
            *zip(positional[len(positional) - len(node.defaults) :], node.defaults),
            *zip(node.kwonlyargs, node.kw_defaults),
        ]
        found += [d for a, d in pairs if d is not None and _says_status(a.arg) and _is_word(d, words)]
    elif isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if node.value is not None and _is_word(node.value, words) and any(_named_status(t) for t in targets):
            found.append(node.value)
    elif isinstance(node, ast.Dict):
        keys = [k for k in node.keys if k is not None and _is_word(k, words)]
        if len(keys) >= 3:
            found += keys
        found += [
            v
            for k, v in zip(node.keys, node.values)
            if isinstance(k, ast.Constant) and isinstance(k.value, str) and _says_status(k.value) and _is_word(v, words)
        ]
    return found


@functools.cache
def _scan() -> dict[str, list[str]]:
    """For each module that says a status with its bare word: one complaint per vocabulary."""
    found: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        asked = [(what, words, ask) for what, words, home, ask in VOCABULARIES if rel not in home]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for (what, _, ask), lines in zip(asked, _bare_status_lines(tree, [words for _, words, _ in asked])):
            if lines:
                found.setdefault(rel, []).append(f"{what} on line(s) {lines} (ask {ask})")
    return found


def test_no_module_outside_its_home_says_a_status_with_its_bare_word():
    offenders = _scan()
    assert not offenders, "bare status words: " + "; ".join(
        f"{rel}: {', '.join(complaints)}" for rel, complaints in offenders.items()
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


def test_the_check_finds_a_goal_items_disposition_and_a_runs_status():
    goal_words = VOCABULARIES[1][1]
    run_words = VOCABULARIES[2][1]
    source = """
if item.live and item.disposition == "pending":
    pass
ItemProgress(disposition="deferred")
if record.status not in ("ok", "failed"):
    pass
outcome = "rejected" if record.status == "failed" else "approved"
"""
    assert bare_status_lines(source, goal_words) == [2, 4]
    assert bare_status_lines(source, run_words) == [2, 5, 7]


def test_every_home_named_exists():
    homes = {rel for _, _, home, _ in VOCABULARIES for rel in home}
    assert {rel for rel in homes if not (SRC / rel).is_file()} == set()
