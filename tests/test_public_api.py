"""The public API: ``formctl.__all__`` is written out, names exactly the lazy export table,
every name resolves, and every error in it belongs to one tree with a stable code."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import formctl

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


def test_the_old_import_places_give_the_same_classes():
    from formctl.forms import errors as forms_errors
    from formctl.forms.registry import RegistryError
    from formctl.store.base import FormAdapter, apply_entry_commit

    assert forms_errors.FormStaleError is formctl.FormStaleError
    assert forms_errors.StoreDamagedError is formctl.StoreDamagedError
    assert RegistryError is formctl.RegistryError
    from formctl.agent.models.base import ModelError
    from formctl.agent.tools import ToolSelectionError
    from formctl.transcripts.format import TranscriptError

    assert (ModelError, ToolSelectionError, TranscriptError) == (
        formctl.ModelError,
        formctl.ToolSelectionError,
        formctl.TranscriptError,
    )
    assert (FormAdapter, apply_entry_commit) == (formctl.FormAdapter, formctl.apply_entry_commit)


@pytest.mark.e2e
def test_importing_formctl_and_its_errors_loads_no_heavy_module():
    code = (
        "import sys, formctl, formctl.errors; formctl.FormError;"
        "print(sorted(m for m in ('pydantic', 'anthropic', 'prompt_toolkit', 'formctl.forms.runner') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)

    assert out.stdout.strip() == "[]", out.stderr
