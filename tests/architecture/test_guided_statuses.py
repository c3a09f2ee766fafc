"""The guided model asks an instance's lifecycle through forms/lifecycle.py (its typed Status and
named predicates) and a field's state through forms/evaluate.py's FieldStatus, never by comparing
with a bare word at the call site: a new status, or a changed rule, is then one edit."""

from __future__ import annotations

import ast
from pathlib import Path

import formctl.agent.models.guided as guided
from formctl.forms.evaluate import FieldStatus
from formctl.forms.instance import Status

WORDS = {s.value for s in Status} | {s.value for s in FieldStatus}


def _bare_words(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and node.value in WORDS:
        return [str(node.value)]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [w for element in node.elts for w in _bare_words(element)]
    return []


def test_the_guided_model_compares_no_status_with_a_bare_word():
    found = []
    for path in sorted(Path(guided.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                for side in [node.left, *node.comparators]:
                    found += [f"{path.name}:{node.lineno} {w!r}" for w in _bare_words(side)]
    assert found == []
