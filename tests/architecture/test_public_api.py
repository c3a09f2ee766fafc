"""The public API: ``formctl.__all__`` is written out, names exactly the lazy export table,
every name resolves, and every error in it belongs to one tree with a stable code."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import formctl
import formctl.errors

INIT = Path(formctl.__file__)


def test_all_is_a_literal_list_naming_exactly_the_lazy_exports():
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    literal = next(
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets)
    )
    names = ast.literal_eval(literal)  # raises if it is computed rather than written out

    assert sorted(names) == names
    assert set(names) == set(formctl._EXPORTS)
    assert len(names) == len(set(names))


def test_every_exported_name_resolves_to_its_module_object():
    for name, module in formctl._EXPORTS.items():
        value = getattr(formctl, name)
        assert getattr(sys.modules[module], name) is value


def test_every_exported_error_is_a_form_error_with_a_code():
    errors = [getattr(formctl, n) for n in formctl.__all__ if n.endswith("Error")]

    assert errors
    for error in errors:
        assert issubclass(error, formctl.FormError), error
        assert isinstance(error.code, str) and error.code, error


def test_every_error_is_imported_from_formctl_errors_and_nowhere_else():
    # One import path: a module that imports an error class from anywhere but formctl.errors
    # (or formctl) would make a second place to look, and a re-export to keep alive.
    errors = set(formctl.errors.__all__)
    # A file that never names an error class cannot import one: only the others are parsed (half
    # the files; parsing is nearly all of this test's time).
    names_an_error = re.compile(r"\b(?:" + "|".join(sorted(errors)) + r")\b").search
    root = INIT.parent.parent.parent
    wrong = []
    for path in [*(root / "src").rglob("*.py"), *(root / "tests").rglob("*.py"), *(root / "benchmarks").rglob("*.py")]:
        source = path.read_text(encoding="utf-8")
        if not names_an_error(source):
            continue
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("formctl"):
                if node.module not in ("formctl", "formctl.errors"):
                    wrong += [
                        f"{path.relative_to(root)}: {n.name} from {node.module}" for n in node.names if n.name in errors
                    ]

    assert wrong == []
    assert not (INIT.parent / "forms" / "errors.py").exists()


def test_each_code_has_one_class_and_the_docs_table_lists_exactly_them():
    every = [getattr(formctl.errors, n) for n in formctl.errors.__all__]
    classes = [c for c in every if c not in formctl.errors.GROUPS]
    raised = [c for c in classes if c is not formctl.FormError and c is not formctl.UnknownFormError]
    codes = [c.code for c in raised]
    # UnknownFormError is a NotFoundError (same code: callers that catch "not found" catch it);
    # every other class has a code of its own, and the base's code is never raised.
    assert len(codes) == len(set(codes)), sorted(codes)
    assert formctl.UnknownFormError.code == formctl.NotFoundError.code
    assert set(formctl.errors.__all__) <= set(formctl.__all__)

    table = (INIT.parent.parent.parent / "docs" / "engine.md").read_text(encoding="utf-8")
    section = table[table.index("## Error codes") :]
    section = section[: section.index("\n## ")] if "\n## " in section else section
    rows = re.findall(r"^\| `([a-z_]+)` \| `([A-Za-z]+)`", section, flags=re.M)
    assert sorted(set(rows)) == sorted((c.code, c.__name__) for c in classes if c is not formctl.FormError)


@pytest.mark.e2e
def test_importing_formctl_and_its_errors_loads_no_heavy_module():
    code = (
        "import sys, formctl, formctl.errors; formctl.FormError;"
        "print(sorted(m for m in ('pydantic', 'anthropic', 'prompt_toolkit', 'formctl.forms.runner') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)

    assert out.stdout.strip() == "[]", out.stderr


def test_every_raised_error_falls_under_one_group_an_except_clause_can_name():
    # The groups are what callers catch: "the call was wrong", "not in that state", "not yours to
    # do", "not found", "conflict", "store", "model". A new error class must pick one.
    groups = (
        *formctl.errors.GROUPS,
        formctl.NotFoundError,
        formctl.ConflictError,
        formctl.StoreError,
        formctl.ModelError,
    )
    for name in formctl.errors.__all__:
        error = getattr(formctl.errors, name)
        if error is formctl.FormError or error in formctl.errors.GROUPS:
            continue
        homes = [g for g in groups if issubclass(error, g)]
        assert len(homes) == 1, (name, homes)


def test_a_group_catches_its_members_and_not_the_others():
    with pytest.raises(formctl.InstanceStateError):
        raise formctl.FormBlockedError("cap")
    with pytest.raises(formctl.UsageError):
        raise formctl.InvalidArgumentError("values must be an object")
    with pytest.raises(formctl.NotAllowedError):
        raise formctl.HostOnlyError("only a host resolves")
    assert not issubclass(formctl.InvalidArgumentError, formctl.InstanceStateError)
    assert not issubclass(formctl.NotFoundError, formctl.UsageError)
