"""The ``formctl`` command: a typer app whose commands open the store and registry on demand.

Start-up is a benchmark (``benchmarks/startup.py``): ``formctl --help`` and ``formctl list``
should cost at most about 3x ``python -c pass``. So this module imports only typer and
the standard library at the top; each command imports what it needs (the engine,
pydantic, rich, prompt-toolkit, anthropic) when it runs. Typer is told not to use rich
(``rich_markup_mode=None``, no pretty exceptions): its rich help costs ~60 ms to import
and ``--help`` would pay it on every call. Parameters skip typer's pydantic coercion
(``_lean_typer.py``); :func:`main` builds only the command being run; and this module has
no ``from __future__ import annotations``, because typer evaluates every parameter's
type hints at start-up and each string annotation costs a compile.

Errors: every command runs inside :class:`_Group.invoke`, which turns a
:class:`~formctl.forms.errors.FormError` (and any other unexpected exception) into one
line on stderr and exit status 1. ``--debug`` (anywhere on the line) or ``FORMCTL_DEBUG=1``
shows the traceback instead. Usage errors are typer's own (exit status 2).

Exit statuses: 0 ok; 1 an error, a definition that does not compile, a store with
problems, or a write that rejected some of its values (the rest were saved); 2 usage;
130 interrupted.
"""

import json
import os
import sys
from typing import Any, List, NoReturn, Optional

import typer

from formctl.cli._lean_typer import LeanCommand as _Command, LeanGroup

_debug = os.environ.get("FORMCTL_DEBUG", "") not in ("", "0")


class _Group(LeanGroup):
    """Turns errors from any command into one line on stderr and a non-zero exit."""

    def invoke(self, ctx: typer.Context) -> Any:
        args = [*getattr(ctx, "_protected_args", ()), *ctx.args]  # before the command consumes them
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise typer.Exit(130) from None
        except Exception as exc:
            if type(exc).__module__.startswith(("typer", "click")) or _debug:
                raise  # typer's own exits and usage errors, or --debug: let them through
            from formctl.forms.errors import FormError

            if isinstance(exc, FormError):
                if exc.code == "form_stale":
                    _fail(exc.message + _stale_hint(args))
                _fail(exc.message)
            if isinstance(exc, BrokenPipeError):
                raise typer.Exit(1) from None
            if isinstance(exc, OSError) and exc.filename and exc.strerror:
                _fail(f"{exc.filename}: {exc.strerror}.")  # a file the user named: say which, in words
            _fail(f"{type(exc).__name__}: {_first_line(exc)} (run with --debug for the traceback)")


def _stale_hint(args: list[str]) -> str:
    """What to do about an instance started on an older version of its form (with no migrate):
    the engine refuses to read it against the new definition, but nothing is lost."""
    from formctl.store.ids import is_instance_id

    iid = next((a for a in args if isinstance(a, str) and is_instance_id(a)), "ID")
    return (f" It can't be continued or read as it is; its answers are kept: formctl abandon {iid} "
            f"--reason REASON closes it, then formctl export {iid} shows them.")


def _first_line(exc: BaseException) -> str:
    """An exception's message cut to its first line: errors here are one line (pydantic's
    schema errors run to a paragraph and a URL)."""
    return (str(exc).strip().splitlines() or [""])[0]


def _fail(message: str, code: int = 1) -> NoReturn:
    sys.stderr.write(f"error: {message}\n")
    raise typer.Exit(code)


app = typer.Typer(
    name="formctl",
    cls=_Group,
    help="Run conversational forms in a terminal: a model collects typed values, every answer kept.",
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog="\b\nExamples:\n  formctl run travel-claim\n  formctl instances --status awaiting\n"
    "  formctl resolve form_lx2k9_ab12cd",
)
store_app = typer.Typer(
    name="store",
    cls=_Group,
    help="Check or repair the local store folder.",
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    epilog="\b\nExample:\n  formctl store check --store ./.formctl\n  formctl store reindex",
)
app.add_typer(store_app)


# --------------------------------------------------------------------------- completion


def _complete_form(ctx: typer.Context, incomplete: str) -> list[str]:
    """Form ids from the registry file, read with tomllib (no form module is imported)."""
    import tomllib

    from formctl.cli.workspace import registry_path

    try:
        with open(registry_path(ctx.params.get("forms") or os.environ.get("FORMCTL_FORMS")), "rb") as fh:
            forms = tomllib.load(fh).get("forms", {})
    except (OSError, ValueError):
        return []
    return [f for f in forms if f.startswith(incomplete)]


def _complete_instance(ctx: typer.Context, incomplete: str) -> list[str]:
    """Instance ids from the store's file names (the store's own id check guards any use)."""
    from formctl.cli.workspace import store_path

    folder = store_path(ctx.params.get("store") or os.environ.get("FORMCTL_STORE")) / "instances"
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    ids = {n.partition(".")[0] for n in names if n.endswith(".json")}
    return sorted(i for i in ids if i.startswith(incomplete))


def _complete_status(incomplete: str) -> list[str]:
    from formctl.forms.instance import INSTANCE_STATUSES

    return [s for s in INSTANCE_STATUSES if s.startswith(incomplete)]


# --------------------------------------------------------------------------- shared options

_STORE_HELP = "Store folder [default: ./.formctl]."
_FORMS_HELP = "Forms folder holding registry.toml, or the TOML file [default: ./forms]."

StoreOpt = typer.Option(None, "--store", envvar="FORMCTL_STORE", metavar="DIR", help=_STORE_HELP)
FormsOpt = typer.Option(None, "--forms", envvar="FORMCTL_FORMS", metavar="DIR", help=_FORMS_HELP)
JsonOpt = typer.Option(False, "--json", help="Print JSON for scripts.")
InstanceArg = typer.Argument(..., metavar="ID", help="Instance id (see formctl instances).",
                             autocompletion=_complete_instance)


def _example(*lines: str) -> str:
    # "\b" stops click from re-wrapping the example lines.
    return "\b\nExample:\n" + "\n".join(f"  {line}" for line in lines)


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


def _labels(runner: Any, def_id: str) -> dict[str, str]:
    try:
        return {f.id: f.label for f in runner.registry.load(def_id).fields}
    except Exception:
        return {}


def _write_outcome(runner: Any, result: Any, as_json: bool, moved: Optional[str] = None, verb: str = "") -> None:
    """Print a write's result; exit 1 if any value was rejected or named no field (the rest were saved).

    ``moved``/``verb``: the field an undo, redo or retract moved, said first as the chat's /undo
    does ("undid Staff ID → AB1234"); the result alone names no field for those."""
    if as_json:
        _print_json(result.to_dict())
    else:
        from formctl.cli import render

        if moved is not None and not result.unknown:
            row = runner.inspect("field", moved, instance_id=result.view.instance_id).fields[0]
            typer.echo(f"{verb} {row.label} → {render.value_text(row.value) if row.has_value else 'empty'}")
        render.print_fill_result(result, _labels(runner, result.view.def_id))
    if result.rejected or result.unknown:
        raise typer.Exit(1)


def _field_to_move(runner: Any, action: str, instance_id: str, field: Optional[str]) -> Optional[str]:
    """The field id an undo/redo/retract will move: the one named, or (undo/redo with none named)
    the one the instance's status says it would. None when that cannot be told."""
    try:
        if field is not None:
            return runner.evaluation(instance_id)[0].resolve_field(field)
        view = runner.status(instance_id=instance_id)
        target = view.undo if action == "undo" else view.redo
        return target.field if target is not None else None
    except Exception:  # the write itself reports what is wrong
        return None


def _print_version(value: bool) -> None:
    if value:
        from formctl import __version__

        typer.echo(f"formctl {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks instead of one-line errors."),
    version: bool = typer.Option(False, "--version", help="Print the version and exit.", is_eager=True,
                                 callback=_print_version),
) -> None:
    global _debug
    if debug:
        _debug = True


# --------------------------------------------------------------------------- forms


@app.command("list", cls=_Command, epilog=_example("formctl list", "formctl list --json | jq -r '.forms[].id'"))
def list_forms(forms: Optional[str] = FormsOpt, as_json: bool = JsonOpt) -> None:
    """List the registered forms.

    Reads registry.toml only: no form module is imported.
    """
    from formctl.cli.workspace import open_registry

    listing = open_registry(forms).list()
    if as_json:
        _print_json({"forms": listing})
        return
    if not listing:
        typer.echo("no forms registered")
        return
    width = max(len(f["id"]) for f in listing)
    for f in listing:
        line = f"{f['id']:<{width}}  {f['name']}"
        if f["description"]:
            line += f" — {f['description']}"
        typer.echo(line)


@app.command(cls=_Command, epilog=_example("formctl check travel-claim"))
def check(
    form: str = typer.Argument(..., metavar="FORM", help="Form id.", autocompletion=_complete_form),
    forms: Optional[str] = FormsOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Compile a form and print its outline.

    Each field is shown with the type string the model reads. A form that does not compile
    exits 1 with the definition error.
    """
    from formctl.cli.workspace import open_registry
    from formctl.forms.errors import FormDefinitionError, FormError

    registry = open_registry(forms)
    try:
        compiled = registry.load(form)
        for f in compiled.fields:  # type strings and validators are built lazily: build them now
            f.type, f.required  # noqa: B018
            try:
                f.validator.validate(None)  # builds the pydantic validator: a type it cannot handle fails here
            except Exception as exc:
                if _debug:
                    raise
                raise FormDefinitionError(f'field "{f.id}": {type(exc).__name__}: {_first_line(exc)}') from exc
        _check_new_form_evaluates(compiled)
    except Exception as exc:
        if _debug or (isinstance(exc, FormError) and exc.code == "not_found"):
            raise
        # A definition that does not compile, a module that does not import, a schema
        # pydantic cannot build: each means "this form is broken", reported the same way.
        message = exc.message if isinstance(exc, FormError) else f"{type(exc).__name__}: {_first_line(exc)}"
        if as_json:
            code = exc.code if isinstance(exc, FormError) else "form_definition_error"
            _print_json({"form": form, "ok": False, "error": message, "code": code})
            raise typer.Exit(1)
        _fail(f"{form}: {message}")
    from formctl.cli import render

    if as_json:
        _print_json(render.check_dict(compiled))
    else:
        render.print_check(compiled)


def _check_new_form_evaluates(compiled: Any) -> None:
    """Evaluate an empty instance, as the first turn of ``formctl run`` will: a gate that throws
    (a field id that does not exist, ``None > 750``) would otherwise pass check and then fail
    every turn of the chat with 'cannot be evaluated'."""
    from formctl.forms.errors import FormDefinitionError
    from formctl.forms.evaluate import evaluate
    from formctl.forms.instance import Instance

    empty = Instance(id="form_check_000000", def_id=compiled.id, def_version=compiled.version, subject="check")
    defects = evaluate(compiled, empty).defects
    if defects:
        raise FormDefinitionError(f"cannot be evaluated on a new form: {'; '.join(defects)}.")


@app.command(cls=_Command, epilog=_example("formctl new expense-report --name 'Expense report'", "formctl check expense-report"))
def new(
    form_id: str = typer.Argument(..., metavar="FORM-ID", help="Id of the new form, like expense-report."),
    name: Optional[str] = typer.Option(None, "--name", help="Display name [default: from the id]."),
    description: str = typer.Option("", "--description", help="One line on what it collects."),
    forms: Optional[str] = FormsOpt,
) -> None:
    """Scaffold a new form and register it.

    Writes FORM_ID.py (with dashes as underscores) in the forms folder and appends its entry
    to registry.toml, keeping the file's comments.
    """
    from formctl.cli.scaffold import scaffold

    module_path, registry_file = scaffold(form_id, forms, name=name, description=description)
    typer.echo(f"created {module_path}")
    typer.echo(f"registered {form_id} in {registry_file}")
    # The commands as they will work from here: a --forms or FORMCTL_FORMS folder is repeated.
    import shlex

    where = f" --forms {shlex.quote(str(forms))}" if forms else ""
    typer.echo(f"next: edit {module_path}, then formctl check {form_id}{where} and formctl run {form_id}{where}")


# --------------------------------------------------------------------------- the chat


@app.command(cls=_Command, epilog=_example(
    "formctl run travel-claim",
    "formctl run travel-claim --subject dana --seed mode=car --record transcripts/dana.toml",
    "printf 'Dana Reeve\\nAB1234\\n' | formctl run travel-claim --offline",
))
def run(
    form: str = typer.Argument(..., metavar="FORM", help="Form id.", autocompletion=_complete_form),
    subject: Optional[str] = typer.Option(None, "--subject", envvar="FORMCTL_SUBJECT",
                                          help="Who the form is for [default: your login name]."),
    model: Optional[str] = typer.Option(None, "--model", envvar="FORMCTL_MODEL",
                                        help="Model name (needs ANTHROPIC_API_KEY)."),
    offline: bool = typer.Option(False, "--offline", help="Use the guided offline model."),
    record: Optional[str] = typer.Option(None, "--record", metavar="PATH", help="Write a transcript as it goes."),
    seed: List[str] = typer.Option([], "--seed", metavar="K=V", help="A value already known (repeatable)."),
    store: Optional[str] = StoreOpt,
    forms: Optional[str] = FormsOpt,
) -> None:
    """Start or continue a form in a chat.

    Starts the subject's FORM, or continues their open one.

    In a terminal: a chat with a status bar; type /help for commands. With stdin not a
    terminal, each input line is one message and output is plain text. Exits 1 when a turn
    failed and nothing was started (the model unreachable, say).
    """
    from formctl.cli.chat import ChatOptions, run_chat

    code = run_chat(ChatOptions(form=form, subject=subject, model=model, offline=offline, record=record,
                                seed=seed, store=store, forms=forms, debug=_debug))
    if code:
        raise typer.Exit(code)


@app.command(cls=_Command, epilog=_example("formctl resume form_lx2k9_ab12cd"))
def resume(
    instance_id: str = InstanceArg,
    model: Optional[str] = typer.Option(None, "--model", envvar="FORMCTL_MODEL",
                                        help="Model name (needs ANTHROPIC_API_KEY)."),
    offline: bool = typer.Option(False, "--offline", help="Use the guided offline model."),
    record: Optional[str] = typer.Option(None, "--record", metavar="PATH", help="Write a transcript as it goes."),
    store: Optional[str] = StoreOpt,
    forms: Optional[str] = FormsOpt,
) -> None:
    """Return to an instance's conversation.

    Picks up where it left off, with the saved conversation.
    """
    from formctl.cli.chat import ChatOptions, run_chat

    code = run_chat(ChatOptions(instance_id=instance_id, model=model, offline=offline, record=record,
                                store=store, forms=forms, debug=_debug))
    if code:
        raise typer.Exit(code)


# --------------------------------------------------------------------------- instances and views


@app.command(cls=_Command, epilog=_example("formctl instances --form travel-claim --status awaiting"))
def instances(
    subject: Optional[str] = typer.Option(None, "--subject", help="Only this subject's."),
    form: Optional[str] = typer.Option(None, "--form", help="Only this form's.", autocompletion=_complete_form),
    status: Optional[str] = typer.Option(None, "--status", help="active, awaiting, complete, abandoned or stale.",
                                         autocompletion=_complete_status),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="At most this many, most recent first."),
    store: Optional[str] = StoreOpt,
    as_json: bool = JsonOpt,
) -> None:
    """List stored instances, newest first."""
    from formctl.cli.workspace import open_store
    from formctl.forms.instance import INSTANCE_STATUSES

    if status is not None and status not in INSTANCE_STATUSES:
        _fail(f'Unknown status "{status}": use one of {", ".join(INSTANCE_STATUSES)}.', 2)
    from formctl.cli.workspace import store_path

    if not store_path(store).exists():  # likely a mistyped --store: "no instances" alone would hide it
        sys.stderr.write(f"note: no form store at {store_path(store)} yet (--store DIR or FORMCTL_STORE)\n")
    damaged: list[Any] = []
    found = open_store(store).find_instances(subject=subject, def_id=form, status=status, limit=limit,
                                             damaged=damaged)
    for exc in damaged:  # left out of the list, so say so: it may be the claim someone is looking for
        sys.stderr.write(f"warning: not listed: {exc.message} (formctl store check)\n")
    rows = []
    for i in found:
        row = {"instance_id": i.id, "form": i.def_id, "subject": i.subject, "status": i.status,
               "answered": len(i.entries), "updated_at": i.updated_at}
        if i.closed_reason:
            row["closed_reason"] = i.closed_reason
        rows.append(row)
    if as_json:
        _print_json({"instances": rows})
        return
    from formctl.cli import render

    render.print_instances(rows)


@app.command(cls=_Command, epilog=_example("formctl inspect form_lx2k9_ab12cd --step trip",
                             "formctl inspect form_lx2k9_ab12cd --json"))
def inspect(
    instance_id: str = InstanceArg,
    step: Optional[str] = typer.Option(None, "--step", help="One step, by id or title ('open' for the open one)."),
    field: Optional[str] = typer.Option(None, "--field", help="One field, by id or label."),
    outline: bool = typer.Option(False, "--outline", help="Every step and field (the default)."),
    store: Optional[str] = StoreOpt,
    forms: Optional[str] = FormsOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Show an instance as the model sees it.

    The outline by default, or one step or one field. * marks fields to ask now.
    """
    from formctl.cli.workspace import open_runner

    if sum(x is not None for x in (step, field)) + outline > 1:
        _fail("Give at most one of --step, --field and --outline.", 2)
    if (field is not None and not field.strip()) or (step is not None and not step.strip()):
        _fail(f"--{'field' if field is not None else 'step'} needs a name or id.", 2)
    runner = open_runner(store, forms)
    if field is not None:
        view = runner.inspect("field", field, instance_id=instance_id)
    elif step is not None:
        view = runner.inspect("step", None if step == "open" else step, instance_id=instance_id)
    else:
        view = runner.inspect("outline", instance_id=instance_id)
    if view.step is None and not view.fields and (step not in (None, "open") or field is not None):
        # The views answer an unknown name with the header alone (the model reads that as
        # "nothing there"); at the command line it is a mistake, reported like history's.
        _unknown_name(runner, view.def_id, "step" if field is None else "field", field if field is not None else step)
    if as_json:
        _print_json(view.to_dict())
        return
    from formctl.cli import render

    render.print_view(view)


def _unknown_name(runner: Any, def_id: str, kind: str, name: str) -> NoReturn:
    """Fail on a --step or --field that names nothing, with the names that were meant if we can tell."""
    hint = ""
    try:
        compiled = runner.registry.load(def_id)
        if kind == "field" and compiled.did_you_mean(name):
            hint = f" (did you mean {' or '.join(compiled.did_you_mean(name))}?)"
        elif kind == "step":
            hint = f" (steps: {', '.join(s.id for s in compiled.steps)})"
    except Exception:  # the hint is a courtesy: the error stands without it
        pass
    _fail(f'No {kind} "{name}" on this form{hint}.')


@app.command(cls=_Command, epilog=_example("formctl history form_lx2k9_ab12cd email"))
def history(
    instance_id: str = InstanceArg,
    field: Optional[str] = typer.Argument(None, metavar="[FIELD]", help="One field [default: every answered field]."),
    store: Optional[str] = StoreOpt,
    forms: Optional[str] = FormsOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Show every answer given, oldest first.

    With who gave each answer and why it changed; the one in force is marked.
    """
    from formctl.cli.workspace import open_runner

    runner = open_runner(store, forms)
    if field is not None:
        histories = [runner.history(field, instance_id=instance_id).to_dict()]
    else:
        compiled, instance, _ = runner.evaluation(instance_id)
        ordered = [f.id for f in compiled.fields if f.id in instance.entries]
        ordered += [f for f in instance.entries if f not in compiled.field_by_id]
        histories = [runner.history(f, instance_id=instance_id).to_dict() for f in ordered]
    if as_json:
        _print_json(histories[0] if field is not None else {"instance_id": instance_id, "fields": histories})
        return
    from formctl.cli import render

    render.print_histories(histories)


@app.command(cls=_Command, epilog=_example("formctl export form_lx2k9_ab12cd --json > claim.json"))
def export(
    instance_id: str = InstanceArg,
    store: Optional[str] = StoreOpt,
    forms: Optional[str] = FormsOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Print live values, held ones apart.

    Held values are kept but do not apply given the other answers.
    """
    from formctl.cli.workspace import open_runner
    from formctl.forms.project import answers, complete_flag

    runner = open_runner(store, forms)
    compiled, instance, ev = runner.evaluation(instance_id)
    data = {
        "instance_id": instance.id,
        "form": instance.def_id,
        "version": instance.def_version,
        "subject": instance.subject,
        "status": instance.status,
        "complete": complete_flag(compiled, ev, instance),
        **answers(compiled, ev),
        "created_at": instance.created_at,
        "updated_at": instance.updated_at,
    }
    if instance.completed_at:
        data["completed_at"] = instance.completed_at
    if instance.closed_reason:
        data["closed_reason"] = instance.closed_reason
    if as_json:
        _print_json(data)
        return
    from formctl.cli import render

    render.print_export(data, {f.id: f.label for f in compiled.fields})


# --------------------------------------------------------------------------- host writes


@app.command(cls=_Command, epilog=_example("formctl fill form_lx2k9_ab12cd email=dana@example.org total=812.5"))
def fill(
    instance_id: str = InstanceArg,
    assignments: List[str] = typer.Argument(..., metavar="FIELD=VALUE...",
                                            help="Values: JSON when it parses (812.5, true), text otherwise."),
    store: Optional[str] = StoreOpt,
    forms: Optional[str] = FormsOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Write values to an instance's fields.

    Any field, from any step. Exits 1 if a value was rejected or named no field; the other
    values are saved.
    """
    from formctl.cli.args import parse_assignments
    from formctl.cli.workspace import open_runner

    parse_assignments(assignments)  # a malformed pair fails before the store is opened
    runner = open_runner(store, forms)
    values = parse_assignments(assignments, runner.evaluation(instance_id)[0])
    _write_outcome(runner, runner.fill(values, instance_id=instance_id), as_json)


@app.command(cls=_Command, epilog=_example("formctl undo form_lx2k9_ab12cd email"))
def undo(
    instance_id: str = InstanceArg,
    field: Optional[str] = typer.Argument(None, metavar="[FIELD]", help="Field [default: the last one changed]."),
    store: Optional[str] = StoreOpt,
    forms: Optional[str] = FormsOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Step a field back to its previous answer.

    Nothing is lost: redo brings it back.
    """
    from formctl.cli.workspace import open_runner

    runner = open_runner(store, forms)
    moved = _field_to_move(runner, "undo", instance_id, field)
    _write_outcome(runner, runner.undo(field, instance_id=instance_id), as_json, moved, "undid")


@app.command(cls=_Command, epilog=_example("formctl redo form_lx2k9_ab12cd email"))
def redo(
    instance_id: str = InstanceArg,
    field: Optional[str] = typer.Argument(None, metavar="[FIELD]", help="Field [default: the oldest undone]."),
    store: Optional[str] = StoreOpt,
    forms: Optional[str] = FormsOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Put back an answer that undo stepped back."""
    from formctl.cli.workspace import open_runner

    runner = open_runner(store, forms)
    moved = _field_to_move(runner, "redo", instance_id, field)
    _write_outcome(runner, runner.redo(field, instance_id=instance_id), as_json, moved, "redid")


@app.command(cls=_Command, epilog=_example("formctl retract form_lx2k9_ab12cd phone --reason 'no longer has one'"))
def retract(
    instance_id: str = InstanceArg,
    field: str = typer.Argument(..., metavar="FIELD", help="Field id or label."),
    reason: Optional[str] = typer.Option(None, "--reason", help="Why (kept in the history)."),
    store: Optional[str] = StoreOpt,
    forms: Optional[str] = FormsOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Withdraw an answer.

    It stays in the history, and undo brings it back.
    """
    from formctl.cli.workspace import open_runner

    runner = open_runner(store, forms)
    moved = _field_to_move(runner, "retract", instance_id, field)
    if moved is not None:
        row = runner.inspect("field", moved, instance_id=instance_id).fields[0]
        if row.status == "empty":  # the engine would log a withdrawal of nothing
            _fail(f"{row.label} has no answer to withdraw.")
    _write_outcome(runner, runner.retract(field, reason=reason, instance_id=instance_id), as_json, moved, "withdrew")


@app.command(cls=_Command, epilog=_example("formctl resolve form_lx2k9_ab12cd",
                             "formctl resolve form_lx2k9_ab12cd --fail 'needs pre-approval'"))
def resolve(
    instance_id: str = InstanceArg,
    assignments: Optional[List[str]] = typer.Argument(None, metavar="[FIELD=VALUE...]",
                                                      help="Values to write with the answer."),
    fail: Optional[str] = typer.Option(None, "--fail", metavar="REASON", help="Reject, with the reason the person is told."),
    checkpoint: Optional[str] = typer.Option(None, "--checkpoint", help="Checkpoint id [default: the one it waits on]."),
    store: Optional[str] = StoreOpt,
    forms: Optional[str] = FormsOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Answer the checkpoint an instance waits on.

    Approves it, or rejects it with --fail REASON (the person is told why).
    """
    from formctl.cli.args import parse_assignments
    from formctl.cli.workspace import open_runner

    parse_assignments(assignments or [])  # a malformed pair fails before the store is opened
    runner = open_runner(store, forms)
    values = parse_assignments(assignments or [], runner.evaluation(instance_id)[0]) if assignments else {}
    result = runner.resolve_checkpoint(instance_id, fail=fail, values=values or None, checkpoint=checkpoint)
    _write_outcome(runner, result, as_json)


@app.command(cls=_Command, epilog=_example("formctl abandon form_lx2k9_ab12cd --reason 'duplicate claim'"))
def abandon(
    instance_id: str = InstanceArg,
    reason: str = typer.Option(..., "--reason", help="Why (kept on the instance)."),
    store: Optional[str] = StoreOpt,
    forms: Optional[str] = FormsOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Close an instance without finishing it.

    Every answer is kept.
    """
    from formctl.cli.workspace import open_runner

    instance = open_runner(store, forms).abandon(reason, instance_id=instance_id)
    if as_json:
        _print_json({"instance_id": instance.id, "status": instance.status, "closed_reason": instance.closed_reason})
    else:
        typer.echo(f"abandoned {instance.id}: {instance.closed_reason}")


# --------------------------------------------------------------------------- the store


@store_app.command("check", cls=_Command, epilog=_example("formctl store check --store ./.formctl"))
def store_check(store: Optional[str] = StoreOpt, as_json: bool = JsonOpt) -> None:
    """Check every instance file and the index.

    Changes nothing. Exits 1 unless all is well.
    """
    from formctl.cli.workspace import open_store

    _require_store(store)
    _store_report(open_store(store).check().to_dict(), as_json)


@store_app.command("reindex", cls=_Command, epilog=_example("formctl store reindex"))
def store_reindex(store: Optional[str] = StoreOpt, as_json: bool = JsonOpt) -> None:
    """Rebuild the index from the instance files.

    Corrupt files are reported, never touched.
    """
    from formctl.cli.workspace import open_store

    _require_store(store)
    _store_report(open_store(store).reindex().to_dict(), as_json)


def _require_store(store: Optional[str]) -> None:
    """Check and repair act on a store that exists: on a mistyped path, check reported a
    missing index and 'run formctl store reindex', and reindex created an empty store there."""
    from formctl.cli.workspace import store_path

    if not store_path(store).exists():
        _fail(f"No form store at {store_path(store)}: nothing has been saved there (--store DIR or FORMCTL_STORE).")


def _store_report(report: dict[str, Any], as_json: bool) -> None:
    if as_json:
        _print_json(report)
    else:
        from formctl.cli import render

        render.print_store_report(report)
    if not report["ok"]:
        raise typer.Exit(1)


# --------------------------------------------------------------------------- replay (another module's)


def _register_transcripts() -> None:
    """``formctl replay`` lives in formctl.transcripts.cli; a missing or broken module must not
    take the rest of the CLI down with it."""
    try:
        from formctl.transcripts.cli import register
    except ImportError:
        return
    register(app)
    from typer.core import TyperCommand

    for info in app.registered_commands:  # replay too gets the lean parameters and plain help
        if info.cls is None or info.cls is TyperCommand:
            info.cls = _Command


_register_transcripts()


def _only_the_command_run(args: list[str]) -> typer.Typer:
    """The app with just the command being run, when one is named.

    Typer turns every registered function into a click command (signatures, type hints)
    before it parses anything: ~10 ms for twenty commands, a quarter of the start-up
    budget, spent on commands that will not run. ``formctl --help``, a mistyped command
    and shell completion still get the whole app.
    """
    name = next((a for a in args if not a.startswith("-")), None)
    if name is None or os.environ.get("_FORMCTL_COMPLETE"):
        return app
    from typer.main import get_command_name

    commands = [c for c in app.registered_commands if (c.name or get_command_name(c.callback.__name__)) == name]
    groups = [g for g in app.registered_groups if _group_name(g) == name]
    if len(commands) + len(groups) != 1:
        return app
    only = typer.Typer(name="formctl", cls=_Group, rich_markup_mode=None, pretty_exceptions_enable=False,
                       no_args_is_help=True, context_settings={"help_option_names": ["-h", "--help"]})
    only.registered_callback = app.registered_callback
    only.registered_commands = commands
    only.registered_groups = groups
    return only


def _group_name(info: Any) -> Any:
    name = info.name if isinstance(info.name, str) else None
    return name or info.typer_instance.info.name


def main(argv: list[str] | None = None) -> None:
    """The console script. ``--debug`` may appear anywhere before ``--``."""
    global _debug
    args = list(sys.argv[1:] if argv is None else argv)
    end = args.index("--") if "--" in args else len(args)
    if "--debug" in args[:end]:
        args.remove("--debug")
        _debug = True
    _only_the_command_run(args[:end])(args=args, prog_name="formctl")


if __name__ == "__main__":
    main()
