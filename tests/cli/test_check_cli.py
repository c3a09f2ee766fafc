"""``formctl check`` catches what ``formctl run`` would trip on: a form module that raises, a field
type pydantic cannot validate, a gate that throws, a registry entry without both halves.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from clitools import FORMS

# --------------------------------------------------------------------------- a form module that fails to import


def _broken_forms(tmp_path: Path) -> Path:
    forms = tmp_path / "forms"
    shutil.copytree(FORMS, forms, ignore=shutil.ignore_patterns("__pycache__"))
    (forms / "qa_boom.py").write_text('raise RuntimeError("kaboom at import")\n')
    with open(forms / "registry.toml", "a") as fh:
        fh.write('\n[forms.qa-boom]\nname = "Boom"\nmodule = "qa_boom:form"\n')
    return forms


def test_run_of_a_form_whose_module_raises_names_the_module(tmp_path, cli):
    forms = _broken_forms(tmp_path)

    result = cli.at(forms=forms)("run", "qa-boom", "--offline", input="hi\n")

    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert '"qa_boom"' in result.stderr and "kaboom at import" in result.stderr
    assert "RuntimeError" in result.stderr


def test_check_of_a_form_whose_module_raises_names_the_module(tmp_path, cli):
    forms = _broken_forms(tmp_path)

    result = cli.at(forms=forms)("check", "qa-boom")

    assert result.exit_code == 1
    assert '"qa_boom"' in result.stderr and "kaboom at import" in result.stderr


def test_check_marks_gated_steps(cli):
    result = cli("check", "travel-claim")

    assert result.exit_code == 0
    assert "Travel (travel) — how they travelled, mileage or ticket  [gated]" in result.stdout


# --------------------------------------------------------------------------- check catches what run would trip on


def _forms_with(tmp_path: Path, name: str, body: str) -> Path:
    forms = tmp_path / "forms"
    shutil.copytree(FORMS, forms, ignore=shutil.ignore_patterns("__pycache__"))
    (forms / f"{name}.py").write_text(body)
    with open(forms / "registry.toml", "a") as fh:
        fh.write(f'\n[forms.{name.replace("_", "-")}]\nname = "{name}"\nmodule = "{name}:form"\n')
    return forms


def test_check_fails_a_field_type_pydantic_cannot_validate(tmp_path, cli):
    forms = _forms_with(
        tmp_path,
        "qa_thing",
        (
            "from formctl import define_form\n"
            "class Thing:\n    pass\n"
            'form = define_form("qa-thing", version=1, name="T").step("a", title="A").field("x", Thing, label="X").build()\n'
        ),
    )

    result = cli.at(forms=forms)("check", "qa-thing")

    assert result.exit_code == 1
    assert result.stderr.startswith("error: qa-thing: ") and "Thing" in result.stderr and '"x"' in result.stderr
    assert result.stderr.count("\n") == 1


def test_check_fails_a_gate_that_throws_on_a_new_form(tmp_path, cli):
    forms = _forms_with(
        tmp_path,
        "qa_gate",
        (
            "from formctl import define_form\n"
            'form = (define_form("qa-gate", version=1, name="G")\n'
            '    .step("a", title="A").field("x", str, label="X")\n'
            '    .step("b", title="B", when=lambda v, s: v["nosuch"] == 1).field("y", str, label="Y")\n'
            "    .build())\n"
        ),
    )

    result = cli.at(forms=forms)("check", "qa-gate")

    assert result.exit_code == 1
    assert "nosuch" in result.stderr
    as_json = cli.at(forms=forms)("check", "qa-gate", "--json")
    assert as_json.exit_code == 1 and '"ok": false' in as_json.stdout


def test_check_still_passes_the_example_forms(cli):
    for form in ("travel-claim", "client-intake"):
        result = cli("check", form)
        assert result.exit_code == 0, result.stderr


@pytest.mark.parametrize("spec", ["travel_claim:", ":travel_claim", "travel_claim"])
def test_a_registry_module_spec_without_both_halves_is_named_as_such(tmp_path, cli, spec):
    forms = tmp_path / "forms"
    shutil.copytree(FORMS, forms, ignore=shutil.ignore_patterns("__pycache__"))
    (forms / "registry.toml").write_text(f'[forms.travel-claim]\nname = "T"\nmodule = "{spec}"\n')

    result = cli.at(forms=forms)("check", "travel-claim")

    assert result.exit_code == 1
    assert 'needs module = "module:attribute"' in result.stderr
