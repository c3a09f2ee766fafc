"""``formctl check`` beyond compiling: the lint of a form's gates, executors and fields."""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

from clitools import invoke
from fixture_project import FORMS, TRANSCRIPTS
from formctl import FormRegistry
from formctl.forms.lint import lint

_n = itertools.count()

FLAWED = textwrap.dedent("""\
    from typing import Annotated, Any, Literal
    from datetime import date
    from pydantic import Field
    from formctl import define_form, Jump, Patch

    LIMIT = 100


    def _derive(ctx):
        return Patch({"totl": ctx.values["amount"]})


    def _back(ctx):
        return Jump("nowhere")


    flawed = (
        define_form("flawed", version=1, name="Flawed")
        .step("a", title="A")
        .field("kind", Literal["x", "y"], label="Kind")
        .field("amount", Annotated[int, Field(ge=0, le=LIMIT)], label="Amount", on_fill=_derive)
        .field("pin", Literal["1", "2"], label="PIN", sensitive=True)
        .field("born", date, label="Born", sensitive=True)
        .field("secret", str, label="Secret", sensitive=True)
        .field("blob", Any, label="Blob")
        .field("ref", Annotated[str, Field(pattern=r"^(?:REF|ID)-[0-9A-F]+$")], label="Ref")
        .field("code", Annotated[str, Field(pattern=r"^[A-Z]{2}\\d{4}$")], label="Code")
        .step("b", title="B", when=lambda v, s: v["kind"] == "z")
        .field("b1", str, label="B1")
        .step("c", title="C", when=lambda v, s: (v["amount"] or 0) > LIMIT, on_complete=_back)
        .field("c1", str, label="C1", when=lambda v, s: v["kind"] == "x" or v["knd"] == "y")
        .step("d", title="D", when=lambda v, s: (v["amount"] or 0) > 50 and s.step_complete("zz"))
        .field("d1", str, label="D1")
        .step("e", title="E", when=lambda v, s: v["kind"] == "y" and (v["amount"] or 0) >= LIMIT)
        .field("e1", str, label="E1")
        .checkpoint("always", when=lambda v, s: True)
        .checkpoint("big", when=lambda v, s: (v["amount"] or 0) > 10)
        .build()
    )
""")


def load(tmp_path: Path, source: str, attribute: str):
    path = tmp_path / f"lint_form_{next(_n)}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, attribute), path


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_each_flaw_is_a_warning_naming_the_line_of_the_definition(tmp_path):
    compiled, path = load(tmp_path, FLAWED, "flawed")
    found = {(f.code, f.line) for f in lint(compiled)}
    assert ("unknown-field", line_of(path, '"totl"')) in found  # a patch naming no field
    assert ("unknown-field", line_of(path, 'v["knd"]')) in found  # a gate reading no field
    assert ("unknown-step", line_of(path, '"nowhere"')) in found  # a jump to no step
    assert ("unknown-step", line_of(path, '"zz"')) in found
    assert ("step-never-opens", line_of(path, '"z")')) in found  # "z" is not one of kind's choices
    assert ("step-never-opens", line_of(path, "> LIMIT, on_complete")) in found  # amount is at most 100
    assert ("checkpoint-reads-nothing", line_of(path, '"always"')) in found
    assert ("sensitive-unmaskable", line_of(path, '"pin"')) in found
    assert ("sensitive-unmaskable", line_of(path, '"born"')) in found
    assert ("type-undescribed", line_of(path, '"blob"')) in found
    assert ("pattern-unexplained", line_of(path, '"ref"')) in found  # no hint, no example, not sayable
    assert ("executor-is-a-rule", line_of(path, "def _derive")) in found  # a Patch worked out from the values
    assert "pattern-unexplained" not in {c for c, line in found if line == line_of(path, '"code"')}  # said in words
    codes = [f.code for f in lint(compiled)]
    assert codes.count("step-never-opens") == 2  # step "e" opens (kind=y, amount=100), "d" is unknown-step
    assert codes.count("sensitive-unmaskable") == 2  # free text can be masked
    assert all(f.path == str(path) for f in lint(compiled))


def test_the_example_forms_are_clean():
    registry = FormRegistry.from_toml(FORMS / "registry.toml")
    for form_id in ("travel-claim", "client-intake"):
        assert lint(registry.load(form_id)) == []


def test_a_finding_renders_as_path_line_warning_and_code(tmp_path):
    compiled, path = load(tmp_path, FLAWED, "flawed")
    first = lint(compiled)[0]
    assert first.render().startswith(f"{path}:{first.line}: warning: ")
    assert first.render().endswith(f"[{first.code}]")


# --------------------------------------------------------------------------- through formctl check


def formctl(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``formctl ARGS`` in the project folder ``cwd``, in process (its ``./forms`` is the one read,
    as for an author who types it there): exit code, stdout and stderr, as a child's would be."""
    here = os.getcwd()
    os.chdir(cwd)
    try:
        result = invoke(*args)
    finally:
        os.chdir(here)
    return subprocess.CompletedProcess(list(args), result.exit_code, result.stdout, result.stderr)


def flawed_project(tmp_path: Path) -> Path:
    shutil.copytree(FORMS, tmp_path / "forms", ignore=shutil.ignore_patterns("__pycache__"))
    # `or` would read v["knd"] on a new form and fail the compile check; `and` hides it until kind is "x".
    source = FLAWED.replace('v["kind"] == "x" or v["knd"]', 'v["kind"] == "x" and v["knd"]')
    (tmp_path / "forms" / "flawed.py").write_text(source)
    with open(tmp_path / "forms" / "registry.toml", "a") as fh:
        fh.write('\n[forms.flawed]\nname = "Flawed"\nmodule = "flawed:flawed"\n')
    return tmp_path


def test_check_prints_each_warning_with_the_file_and_line_and_still_exits_0(tmp_path):
    root = flawed_project(tmp_path)
    out = formctl("check", "flawed", cwd=root)
    assert out.returncode == 0, out.stderr
    source = root / "forms" / "flawed.py"
    lines = out.stdout.splitlines()
    assert (
        f'forms/flawed.py:{line_of(source, "knd")}: warning: the gate of field "c1" reads field "knd", '
        "which the form does not declare [unknown-field]"
    ) in lines
    assert (
        f'forms/flawed.py:{line_of(source, "totl")}: warning: the executor of field "amount" patches field '
        '"totl", which the form does not declare [unknown-field]' in lines
    )
    assert any(
        line.startswith(f'forms/flawed.py:{line_of(source, "> LIMIT, on_complete")}: warning: step "c" can never open')
        for line in lines
    )
    assert lines[-1] == "12 warnings"


def test_check_strict_makes_warnings_errors(tmp_path):
    root = flawed_project(tmp_path)
    out = formctl("check", "flawed", "--strict", cwd=root)
    assert out.returncode == 1
    assert ": error: " in out.stdout and ": warning: " not in out.stdout
    assert out.stdout.splitlines()[-1] == "12 warnings (--strict: errors)"
    data = formctl("check", "flawed", "--strict", "--json", cwd=root)
    assert data.returncode == 1
    parsed = json.loads(data.stdout)
    assert parsed["ok"] is False and len(parsed["warnings"]) == 12
    always = next(w for w in parsed["warnings"] if w["code"] == "checkpoint-reads-nothing")
    assert always["path"] == "forms/flawed.py" and always["line"] == line_of(root / "forms" / "flawed.py", '"always"')
    clean = formctl("check", "travel-claim", "--strict", cwd=root)
    assert clean.returncode == 0 and "warning" not in clean.stdout


def test_check_coverage_reports_what_the_forms_transcripts_never_exercised(tmp_path):
    root = flawed_project(tmp_path)
    folder = root / "recorded"
    folder.mkdir()
    for name in ("ineligible_terminated", "straight_through"):  # one client-intake, one travel-claim
        shutil.copy(TRANSCRIPTS / f"{name}.toml", folder / f"{name}.toml")
    out = formctl("check", "client-intake", "--coverage", "recorded", cwd=root)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert any(line.startswith("  client-intake (1 transcript): steps opened 1/4, fields filled") for line in lines)
    assert "    never steps opened: contact, new-client, returning-client" in lines
    assert "    never checkpoints fired: route, confirm" in lines
    assert not any("travel-claim (" in line for line in lines)  # another form's transcript is not replayed
    none = formctl("check", "flawed", "--coverage", "recorded", cwd=root)
    assert "coverage: no transcripts of flawed under recorded" in none.stdout
    missing = formctl("check", "flawed", "--coverage", "nowhere", cwd=root)
    assert missing.returncode == 1 and "no such file or folder: nowhere" in missing.stderr


def test_a_person_field_the_quote_checker_cannot_read_is_a_warning(tmp_path):
    compiled, path = load(
        tmp_path,
        textwrap.dedent("""
        from formctl import define_form

        form = (
            define_form("tags", name="Tags")
            .step("s", title="S")
            .field("tags", list[str], label="Tags", source="person")
            .field("name", str, label="Name", source="person")
            .field("loose", list[str], label="Loose")
            .build()
        )
    """),
        "form",
    )
    findings = lint(compiled, path=str(path))
    assert [(f.code, f.line) for f in findings] == [("person-unchecked", line_of(path, '.field("tags"'))]
    assert "every value the model gives it will be asked about" in findings[0].message


def test_a_form_file_edited_since_it_was_linted_is_linted_as_it_reads_now(tmp_path):
    # One process lints a form, the author edits the file (a flaw moves down two lines and a new
    # one appears), and the form is loaded and linted again: the findings are the new file's.
    compiled, path = load(tmp_path, FLAWED, "flawed")
    assert ("unknown-field", line_of(path, 'v["knd"]')) in {(f.code, f.line) for f in lint(compiled)}
    edited = FLAWED.replace("LIMIT = 100\n", "LIMIT = 100\nOTHER = 1\nMORE = 2\n").replace('v["knd"]', 'v["kindd"]')
    path.write_text(edited)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found = {
        (f.code, f.message.split('"')[3] if f.message.count('"') >= 4 else "", f.line) for f in lint(module.flawed)
    }
    assert ("unknown-field", "kindd", line_of(path, 'v["kindd"]')) in found
    assert not any(name == "knd" for _, name, _ in found)
    assert ("unknown-step", "nowhere", line_of(path, '"nowhere"')) in found


RULES_AS_EXECUTORS = textwrap.dedent("""\
    from datetime import date
    from formctl import define_form, Fail, Patch


    def _mileage_cost(ctx):
        miles = ctx.values.get("miles")
        if miles:
            return Patch({"cost": miles * 0.45})
        return None


    def _dates_in_order(ctx):
        if ctx.values["back"] < ctx.values["out"]:
            return Fail("The return is before the departure.")
        return None


    def _book(ctx):
        if ctx.values["back"] < ctx.values["out"]:
            return Fail("The return is before the departure.")
        return Patch({"cost": book(ctx.idempotency_key)})  # the outside world: an effect, not a rule


    def book(key):
        return 1.0


    form = (
        define_form("rules", version=1, name="Rules")
        .step("trip", title="Trip", on_complete=_dates_in_order)
        .field("out", date, label="Out")
        .field("back", date, label="Back")
        .field("miles", int | None, label="Miles", on_fill=_mileage_cost)
        .field("cost", float | None, label="Cost")
        .check("sane", lambda v: v["mlies"] > 0, "Miles must be positive.", fields=("miles",))
        .field("later", float | None, label="Later", derive=lambda v: v["cots"] * 2)
        .on_complete(_book)
        .build()
    )
""")


def test_an_executor_that_only_fails_or_patches_from_the_values_is_said_to_be_a_check_or_a_derivation(tmp_path):
    compiled, path = load(tmp_path, RULES_AS_EXECUTORS, "form")
    rules = {f.line: f.message for f in lint(compiled) if f.code == "executor-is-a-rule"}

    assert "a derived field (derive=...) follows every correction" in rules[line_of(path, "def _mileage_cost")]
    assert "a .check(...) follows every correction" in rules[line_of(path, "def _dates_in_order")]
    assert line_of(path, "def _book") not in rules  # it reads the idempotency key: an effect


def test_a_check_or_a_derived_field_reading_an_unknown_field_is_named(tmp_path):
    compiled, path = load(tmp_path, RULES_AS_EXECUTORS, "form")
    unknown = {(f.line, f.message) for f in lint(compiled) if f.code == "unknown-field"}

    line = line_of(path, '"mlies"')
    assert (line, 'the test of check "sane" reads field "mlies", which the form does not declare') in unknown
    line = line_of(path, '"cots"')
    assert (
        line,
        'the function of derived field "later" reads field "cots", which the form does not declare',
    ) in unknown


def test_check_shows_the_checks_and_the_derived_fields_in_the_outline(tmp_path):
    shutil.copytree(FORMS, tmp_path / "forms", ignore=shutil.ignore_patterns("__pycache__"))

    shown = formctl("check", "travel-claim", cwd=tmp_path).stdout
    data = json.loads(formctl("check", "travel-claim", "--json", cwd=tmp_path).stdout)

    assert "check dates-in-order: (a message worded from the values) (reads departure_date, return_date)" in shown
    assert "check costs-within-total:" in shown
    assert any(line.split()[:1] == ["mileage_cost"] and "derived" in line for line in shown.splitlines())
    steps = {s["id"]: s for s in data["steps"]}
    assert steps["trip"]["checks"] == [
        {"id": "dates-in-order", "message": None, "fields": ["departure_date", "return_date"]}
    ]
    assert {f["id"]: f["derived"] for f in steps["travel"]["fields"]}["mileage_cost"] is True
    assert data["checks"] == []
