"""Every status change is a named transition in ``formctl.forms.lifecycle`` (issue 38, item 3).

The commit cycle, staging, the runner, recovery and the stores call ``settle``/``move_to``,
``complete``, ``close``, ``await_host``, ``reopen``, ``open_again`` or ``clear_stale``; none of
them writes a status onto a commit by hand. This reads the source and fails on:

- an assignment to ``<something>.status`` outside lifecycle.py, unless it is one of the few
  non-commit objects named below (an instance being copied or replayed, an evaluation);
- ``Commit(..., status=...)``, ``replace(commit, status=...)`` or ``setattr(x, "status", ...)``;
- a ``"status"`` key in a dict (``.update(status=...)``, ``d["status"] = ...``, ``{"status": ...}``)
  in the modules that build commits, the way a status once reached a commit through ``setattr``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "formctl"
LIFECYCLE = "forms/lifecycle.py"

# (module, the object assigned to): objects with a ``status`` that are not commits.
NOT_COMMITS = {
    ("forms/commit.py", "new"),  # an instance with a commit applied: the commit's status copied
    ("forms/instance.py", "self"),  # an instance made
    ("forms/instance.py", "clone"),  # an instance's copy
    ("forms/evaluate.py", "self"),  # an evaluation's per-field statuses
    ("forms/evaluate.py", "ev"),
}

# An instance's status lives in the engine and the stores (a goal receipt's status is another thing).
PACKAGES = ("forms", "store")

# The modules that build commits: no dict with a "status" key feeds a commit there.
COMMIT_BUILDERS = (
    "forms/write.py",
    "forms/staging.py",
    "forms/runner.py",
    "forms/ending.py",
    "forms/recovery.py",
    "forms/resolutions.py",
)


def _owner(node: ast.expr) -> str:
    """The name an attribute hangs off: ``commit`` for ``commit.status``, ``self.commit`` likewise."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ast.unparse(node)


def _is_status(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value == "status"


def _callee(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def status_writes(module: str, tree: ast.AST) -> list[str]:
    """Every place in ``tree`` that sets a status by hand, as ``module:line what``."""
    found: list[str] = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            elements = target.elts if isinstance(target, ast.Tuple) else [target]
            for t in elements:
                if isinstance(t, ast.Attribute) and t.attr == "status" and (module, _owner(t.value)) not in NOT_COMMITS:
                    found.append(f"{module}:{node.lineno} {ast.unparse(t)} = ...")
                if module in COMMIT_BUILDERS and isinstance(t, ast.Subscript) and _is_status(t.slice):
                    found.append(f"{module}:{node.lineno} {ast.unparse(t)} = ...")
        if module in COMMIT_BUILDERS and isinstance(node, ast.Dict) and any(_is_status(k) for k in node.keys):
            found.append(f"{module}:{node.lineno} {{'status': ...}}")
        if not isinstance(node, ast.Call):
            continue
        callee = _callee(node)
        keywords = {k.arg for k in node.keywords}
        if callee in ("Commit", "replace") and "status" in keywords:
            found.append(f"{module}:{node.lineno} {callee}(status=...)")
        if callee == "setattr" and len(node.args) >= 2:
            name = node.args[1]
            if isinstance(name, ast.Constant) and name.value == "status":
                found.append(f"{module}:{node.lineno} setattr(..., 'status', ...)")
        if module in COMMIT_BUILDERS and callee == "update" and "status" in keywords:
            found.append(f"{module}:{node.lineno} .update(status=...)")
    return found


def _modules() -> list[tuple[str, ast.AST]]:
    return [
        (path.relative_to(SRC).as_posix(), ast.parse(path.read_text(encoding="utf-8")))
        for package in PACKAGES
        for path in sorted((SRC / package).rglob("*.py"))
    ]


def test_only_lifecycle_sets_a_status() -> None:
    found = [hit for module, tree in _modules() if module != LIFECYCLE for hit in status_writes(module, tree)]
    assert not found, "set a status through a transition of formctl.forms.lifecycle:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "source",
    [
        "commit.status = AWAITING",
        "self.commit.status = target",
        "commit.blocked_on, commit.status = None, READY",
        "c = Commit(status=ACTIVE)",
        "c = dataclasses.replace(commit, status=COMPLETE)",
        "setattr(commit, 'status', ACTIVE)",
        "extra.update(status=ACTIVE, closed_reason=None)",
        'out["status"] = ACTIVE',
        'fields = {"status": ACTIVE, "closed_reason": None}',
    ],
)
def test_the_check_sees_a_status_set_by_hand(source: str) -> None:
    assert status_writes("forms/staging.py", ast.parse(source))


def test_the_transitions_themselves_set_statuses() -> None:
    """The check is not vacuous: lifecycle.py is where the statuses are set."""
    tree = ast.parse((SRC / LIFECYCLE).read_text(encoding="utf-8"))
    assert len(status_writes(LIFECYCLE, tree)) >= 4
