"""Commands on form definitions: ``list``, ``check`` and ``new``."""

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

import typer

from formctl.cli import base
from formctl.cli.base import _Command, _example, _fail, _print_json, app
from formctl.cli.options import FormArg, FormsOpt, JsonOpt
from formctl.json_types import JsonObject

if TYPE_CHECKING:
    from formctl.cli.program_check import ProgramCheck
    from formctl.forms.compile import CompiledForm
    from formctl.forms.registry import FormRegistry
    from formctl.transcripts.compare import ReplayResult
    from formctl.transcripts.coverage import Coverage


@app.command("list", cls=_Command, epilog=_example("formctl list", "formctl list --json | jq -r '.forms[].id'"))
def list_forms(forms: FormsOpt = None, as_json: JsonOpt = False) -> None:
    """List the registered forms.

    Reads registry.toml only: no form module is imported.
    """
    from formctl.cli.workspace import open_registry, registry_path

    listing = open_registry(forms).list()
    if as_json:
        _print_json({"forms": listing})
        return
    if not listing:
        typer.echo(f"no forms registered in {registry_path(forms)}: formctl new FORM-ID adds one")
        return
    width = max(len(f["id"]) for f in listing)
    for f in listing:
        line = f"{f['id']:<{width}}  {f['name']}"
        if f["description"]:
            line += f" — {f['description']}"
        typer.echo(line)


@app.command(
    cls=_Command,
    epilog=_example(
        "formctl check travel-claim",
        "formctl check travel-claim --strict",
        "formctl check travel-claim --coverage transcripts/",
        "formctl check client-intake        # the form and the goal program registered under that key",
        "formctl check forms/client_intake_follow_up.toml",
    ),
)
def check(
    form: FormArg,
    forms: FormsOpt = None,
    strict: bool = typer.Option(False, "--strict", help="Warnings are errors: exit 1 if there are any."),
    coverage: Optional[list[str]] = typer.Option(
        None,
        "--coverage",
        metavar="DIR",
        help="Replay the form's transcripts under DIR and report what they never exercised (repeatable).",
    ),
    as_json: JsonOpt = False,
) -> None:
    """Compile a form, print its outline, and lint it.

    Each field is shown with the type string the model reads. A form that does not compile
    exits 1 with the definition error. Then each flaw compiling cannot see is a warning
    naming the definition's line: a gate or patch naming a field that does not exist, a
    step no gate can open, a checkpoint whose condition reads no field, a sensitive field
    transcripts cannot mask, a type the model cannot be told.

    FORM may name a goal program too (a [programs] key, or a program file as program revise
    --from takes): it is loaded and every form its items are bound to must be registered. A
    key naming both a form and a program checks both.
    """
    from formctl.cli.program_check import check_program, names_a_program
    from formctl.cli.workspace import open_registry

    registry = open_registry(forms)
    program = check_program(form, registry, forms) if names_a_program(form, forms) else None
    if program is not None and not registry.has(form):  # a program only: its check is the answer
        if as_json:
            _print_json(program.to_dict())
        elif program.ok:
            typer.echo(program.line())
        else:
            _fail(program.line())
        if not program.ok:
            raise typer.Exit(1)
        return
    if program is not None and not as_json:
        typer.echo(program.line() if program.ok else f"error: {program.line()}", err=not program.ok)
    _check_form(registry, form, _CheckOptions(strict, coverage, as_json, program))


@dataclass(frozen=True)
class _CheckOptions:
    strict: bool
    coverage: Optional[list[str]]
    as_json: bool
    program: "ProgramCheck | None"  # of a program registered under the same key


def _check_form(registry: "FormRegistry", form: str, opts: _CheckOptions) -> None:
    from formctl.errors import FormDefinitionError, FormError

    strict, coverage, as_json = opts.strict, opts.coverage, opts.as_json
    try:
        compiled = registry.load(form)
        for f in compiled.fields:  # type strings and validators are built lazily: build them now
            f.type, f.required  # noqa: B018
            try:
                f.validator.validate(None)  # builds the pydantic validator: a type it cannot handle fails here
            except Exception as exc:
                if base.debugging():
                    raise
                raise FormDefinitionError(f'field "{f.id}": {type(exc).__name__}: {base._first_line(exc)}') from exc
        _check_new_form_evaluates(compiled)
    except Exception as exc:
        if base.debugging() or (isinstance(exc, FormError) and exc.code == "not_found"):
            raise
        # A definition that does not compile, a module that does not import, a schema
        # pydantic cannot build: each means "this form is broken", reported the same way.
        message = exc.message if isinstance(exc, FormError) else f"{type(exc).__name__}: {base._first_line(exc)}"
        if as_json:
            code = exc.code if isinstance(exc, FormError) else "form_definition_error"
            _print_json({"form": form, "ok": False, "error": message, "code": code})
            raise typer.Exit(1) from None
        _fail(f"{form}: {message}")
    from formctl.cli import render
    from formctl.cli.scaffold import coverage_report, lint_form

    findings = lint_form(registry, form, compiled)
    cov = coverage_report(registry, form, coverage) if coverage else None
    failed = (strict and bool(findings)) or (opts.program is not None and not opts.program.ok)
    if as_json:
        data = render.check_dict(compiled)
        data["ok"] = not failed
        if opts.program is not None:
            data["program"] = opts.program.to_dict()
        data["warnings"] = [f.to_dict() for f in findings]
        if cov is not None:
            data["coverage"] = _coverage_dict(form, *cov)
        _print_json(data)
    else:
        render.print_check(compiled)
        for finding in findings:
            line = finding.render()
            typer.echo(line.replace(": warning: ", ": error: ", 1) if strict else line)
        if findings:
            typer.echo(
                f"{len(findings)} warning{'' if len(findings) == 1 else 's'}"
                + (" (--strict: errors)" if strict else "")
            )
        if cov is not None:
            typer.echo(_coverage_text(form, coverage or [], *cov))
    if failed:
        raise typer.Exit(1)


def _coverage_dict(form: str, cov: "Coverage", results: "list[ReplayResult]") -> JsonObject:
    summary = next((s for s in cov.summaries() if s["form"] == form), None)
    return {"transcripts": len(results), "failed": [r.path for r in results if not r.passed], "summary": summary}


def _coverage_text(form: str, folders: list[str], cov: "Coverage", results: "list[ReplayResult]") -> str:
    if not results:
        return f"coverage: no transcripts of {form} under {', '.join(folders)}"
    text: str = cov.render()
    failed = [r.path for r in results if not r.passed]
    if failed:
        text += (
            f"\n  {len(failed)} of {len(results)} transcripts no longer replay (formctl replay "
            f"{' '.join(folders)}): {', '.join(failed)}"
        )
    return text


def _check_new_form_evaluates(compiled: "CompiledForm") -> None:
    """Evaluate an empty instance, as the first turn of ``formctl run`` will: a gate that throws
    (a field id that does not exist, ``None > 750``) would otherwise pass check and then fail
    every turn of the chat with 'cannot be evaluated'."""
    from formctl.errors import FormDefinitionError
    from formctl.forms.evaluate import evaluate
    from formctl.forms.instance import Instance

    empty = Instance(id="form_check_000000", def_id=compiled.id, def_version=compiled.version, subject="check")
    defects = evaluate(compiled, empty).defects
    if defects:
        raise FormDefinitionError(f"cannot be evaluated on a new form: {'; '.join(defects)}.")


def _complete_example(incomplete: str) -> list[str]:
    from formctl.cli.scaffold import examples

    return [e for e in examples().get("forms", {}) if e.startswith(incomplete)]


@app.command(
    cls=_Command,
    epilog=_example(
        "formctl new expense-report --name 'Expense report'",
        "formctl check expense-report",
        "formctl new --example travel-claim",
    ),
)
def new(
    form_id: Optional[str] = typer.Argument(None, metavar="FORM-ID", help="Id of the new form, like expense-report."),
    name: Optional[str] = typer.Option(None, "--name", help="Display name [default: from the id]."),
    description: str = typer.Option("", "--description", help="One line on what it collects."),
    example: Optional[str] = typer.Option(
        None,
        "--example",
        metavar="EXAMPLE",
        help="Copy an example form into the project instead: travel-claim or client-intake (with its goal program).",
        autocompletion=_complete_example,
    ),
    forms: FormsOpt = None,
) -> None:
    """Scaffold a new form and register it, or copy an example.

    Writes FORM_ID.py (with dashes as underscores) in the forms folder and appends its entry
    to registry.toml, keeping the file's comments. With --example, the example's own module
    (the examples ship with formctl) is copied there and registered under its own id.
    """
    import shlex

    where = f" --forms {shlex.quote(str(forms))}" if forms else ""  # repeated in the next commands
    if example is not None:
        if form_id is not None or name is not None or description:
            raise typer.BadParameter("an example keeps its own id, name and description.", param_hint="'--example'")
        from formctl.cli.scaffold import copy_example

        written, registry_file = copy_example(example, forms)
        for path in written:
            typer.echo(f"created {path}")
        typer.echo(f"registered {example} in {registry_file}")
        typer.echo(f"next: formctl check {example}{where} and formctl run {example}{where} --offline")
        return
    if form_id is None:
        raise typer.BadParameter("give the new form's id (like expense-report), or --example.", param_hint="'FORM-ID'")
    from formctl.cli.scaffold import scaffold

    module_path, registry_file = scaffold(form_id, forms, name=name, description=description)
    typer.echo(f"created {module_path}")
    typer.echo(f"registered {form_id} in {registry_file}")
    typer.echo(f"next: edit {module_path}, then formctl check {form_id}{where} and formctl run {form_id}{where}")
