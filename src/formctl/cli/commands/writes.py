"""Host writes: ``fill``, ``undo``, ``redo``, ``retract``, ``resolve``, ``submit``, ``abandon`` and ``migrate``.

Each prints the write's result; a write that rejected some of its values exits 1 (the rest
were saved).
"""

from typing import Any, List, Optional

import typer

from formctl.cli.base import _Command, _example, _fail, _print_json, app
from formctl.cli.options import FormsOpt, InstanceArg, JsonOpt, StoreOpt


def _labels(runner: Any, def_id: str) -> dict[str, str]:
    try:
        return {f.id: f.label for f in runner.compiled(def_id).fields}
    except Exception:
        return {}


def _write_outcome(runner: Any, result: Any, as_json: bool, verb: str = "") -> None:
    """Print a write's result; exit 1 if any value was rejected or named no field (the rest were saved).

    ``verb``: for an undo, redo or retract, said first with the field the result says moved, as
    the chat's /undo does ("undid Staff ID → AB1234")."""
    if as_json:
        _print_json(result.to_dict())
    else:
        from formctl.cli import render

        moved = result.moved
        if verb and moved is not None and not result.unknown:
            typer.echo(f"{verb} {moved.label} → {render.moved_text(moved)}")
        render.print_fill_result(result, _labels(runner, result.view.def_id))
    if result.rejected or result.unknown:
        raise typer.Exit(1)


@app.command(cls=_Command, epilog=_example("formctl fill form_lx2k9_ab12cd email=dana@example.org total=812.5"))
def fill(
    instance_id: InstanceArg,
    assignments: List[str] = typer.Argument(
        ..., metavar="FIELD=VALUE...", help="Values: JSON when it parses (812.5, true), text otherwise."
    ),
    store: StoreOpt = None,
    forms: FormsOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Write values to an instance's fields.

    Any field, from any step. Exits 1 if a value was rejected or named no field; the other
    values are saved.
    """
    from formctl.cli.args import parse_assignments
    from formctl.cli.workspace import open_runner

    parse_assignments(assignments)  # a malformed pair fails before the store is opened
    runner = open_runner(store, forms)
    compiled, _, before = runner.evaluation(instance_id)
    values = parse_assignments(assignments, compiled)
    result = runner.fill(values, instance_id=instance_id)
    if not as_json:
        _say_set_aside(compiled, before, values, result)
    _write_outcome(runner, result, as_json)


def _say_set_aside(compiled: Any, before: Any, values: dict[str, Any], result: Any) -> None:
    """A refused value over a good answer is in force now (the field reads invalid): say what the
    field holds and how to put the earlier answer back (docs/engine.md, "The answer log")."""
    from formctl.cli import render
    from formctl.forms.validate import to_jsonable

    for row in result.rejected:
        field = compiled.field_by_id.get(row.field)
        if field is None or before.status[field.order] != "filled" or row.field not in before.values:
            continue
        hidden = field.sensitive
        earlier = "(hidden)" if hidden else render.value_text(to_jsonable(before.values[row.field]))
        sent = next((v for k, v in values.items() if compiled.resolve_field(k) == row.field), None)
        now = "(hidden)" if hidden else render.value_text(sent)
        typer.echo(
            f"{field.label} now holds {now}, not accepted, so its earlier answer {earlier} no longer counts; "
            f"to put it back: formctl undo {result.view.instance_id} {row.field}"
        )


@app.command(cls=_Command, epilog=_example("formctl undo form_lx2k9_ab12cd email"))
def undo(
    instance_id: InstanceArg,
    field: Optional[str] = typer.Argument(None, metavar="[FIELD]", help="Field [default: the last one changed]."),
    store: StoreOpt = None,
    forms: FormsOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Step a field back to its previous answer.

    Nothing is lost: redo brings it back.
    """
    from formctl.cli.args import check_text
    from formctl.cli.workspace import open_runner

    check_text(field, "FIELD")
    runner = open_runner(store, forms)
    _write_outcome(runner, runner.undo(field, instance_id=instance_id), as_json, "undid")


@app.command(cls=_Command, epilog=_example("formctl redo form_lx2k9_ab12cd email"))
def redo(
    instance_id: InstanceArg,
    field: Optional[str] = typer.Argument(None, metavar="[FIELD]", help="Field [default: the oldest undone]."),
    store: StoreOpt = None,
    forms: FormsOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Put back an answer that undo stepped back."""
    from formctl.cli.args import check_text
    from formctl.cli.workspace import open_runner

    check_text(field, "FIELD")
    runner = open_runner(store, forms)
    _write_outcome(runner, runner.redo(field, instance_id=instance_id), as_json, "redid")


@app.command(cls=_Command, epilog=_example("formctl retract form_lx2k9_ab12cd phone --reason 'no longer has one'"))
def retract(
    instance_id: InstanceArg,
    field: str = typer.Argument(..., metavar="FIELD", help="Field id or label."),
    reason: Optional[str] = typer.Option(None, "--reason", help="Why (kept in the history)."),
    store: StoreOpt = None,
    forms: FormsOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Withdraw an answer.

    It stays in the history, and undo brings it back.
    """
    from formctl.cli.args import check_text
    from formctl.cli.workspace import open_runner

    check_text(field, "FIELD")
    check_text(reason, "--reason")
    runner = open_runner(store, forms)
    view = runner.view(instance_id)
    field_id = view.compiled.resolve_field(field)
    if field_id is not None and not view.stale and view.evaluation.field_status(field_id) == "empty":
        # the engine would log a withdrawal of nothing
        _fail(f"{view.compiled.field_by_id[field_id].label} has no answer to withdraw.")
    _write_outcome(runner, runner.retract(field, reason=reason, instance_id=instance_id), as_json, "withdrew")


@app.command(
    cls=_Command,
    epilog=_example(
        "formctl resolve form_lx2k9_ab12cd --reason 'within the travel budget'",
        "formctl resolve form_lx2k9_ab12cd --fail 'needs pre-approval' --as 'Sam Jones'",
    ),
)
def resolve(
    instance_id: InstanceArg,
    assignments: Optional[List[str]] = typer.Argument(
        None, metavar="[FIELD=VALUE...]", help="Values to write with the answer."
    ),
    fail: Optional[str] = typer.Option(
        None, "--fail", metavar="REASON", help="Reject, with the reason the person is told."
    ),
    reason: Optional[str] = typer.Option(None, "--reason", help="Why it is approved (kept with the decision)."),
    by: Optional[str] = typer.Option(None, "--as", metavar="NAME", help="Who decides [default: your login name]."),
    checkpoint: Optional[str] = typer.Option(
        None, "--checkpoint", help="Checkpoint id [default: the one it waits on]."
    ),
    store: StoreOpt = None,
    forms: FormsOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Answer the checkpoint an instance waits on.

    Approves it, or rejects it with --fail REASON (the person is told why). The decision is
    recorded with who made it (--as, else your login name), when and why: inspect, history
    and export show it.
    """
    from formctl.cli.args import check_text, parse_assignments
    from formctl.cli.workspace import default_subject, open_runner

    for text, what in ((fail, "--fail"), (reason, "--reason"), (by, "--as")):
        check_text(text, what)
    if fail is not None and reason is not None:
        _fail("Give --fail REASON to reject, or --reason to say why it is approved, not both.", 2)
    if by is not None and not by.strip():
        _fail("--as needs a name.", 2)
    parse_assignments(assignments or [])  # a malformed pair fails before the store is opened
    runner = open_runner(store, forms)
    values = parse_assignments(assignments or [], runner.evaluation(instance_id)[0]) if assignments else {}
    result = runner.resolve_checkpoint(
        instance_id,
        fail=fail,
        values=values or None,
        checkpoint=checkpoint,
        actor=by or default_subject(),
        reason=reason,
    )
    _write_outcome(runner, result, as_json)


@app.command(cls=_Command, epilog=_example("formctl submit form_lx2k9_ab12cd", "formctl instances --status ready"))
def submit(
    instance_id: InstanceArg,
    store: StoreOpt = None,
    forms: FormsOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Send a form that is ready.

    For a form with a review before sending: once every required answer is in it reads
    "ready"; sending makes it complete and runs what the form does on completion. Exits 1
    if it is not ready (the message says what is missing) or was already sent.
    """
    from formctl.cli.workspace import open_runner

    runner = open_runner(store, forms)
    result = runner.submit(instance_id)
    if as_json:
        _print_json(result.to_dict())
        return
    from formctl.cli import render

    typer.echo(f"sent {result.view.instance_id}: {result.view.name} is {result.view.status}")
    render.print_fill_result(result, _labels(runner, result.view.def_id))


@app.command(cls=_Command, epilog=_example("formctl abandon form_lx2k9_ab12cd --reason 'duplicate claim'"))
def abandon(
    instance_id: InstanceArg,
    reason: str = typer.Option(..., "--reason", help="Why (kept on the instance)."),
    store: StoreOpt = None,
    forms: FormsOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Close an instance without finishing it.

    Every answer is kept.
    """
    from formctl.cli.args import check_text
    from formctl.cli.workspace import open_runner

    check_text(reason, "--reason")
    instance = open_runner(store, forms).abandon(reason, instance_id=instance_id)
    if as_json:
        _print_json({"instance_id": instance.id, "status": instance.status, "closed_reason": instance.closed_reason})
    else:
        typer.echo(f"abandoned {instance.id}: {instance.closed_reason}")


@app.command(cls=_Command, epilog=_example("formctl migrate form_lx2k9_ab12cd", "formctl instances --status stale"))
def migrate(
    instance_id: InstanceArg,
    store: StoreOpt = None,
    forms: FormsOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Move an instance to the registered version of its form.

    For an instance started on an older version (it reads "stale"). Every answer the
    registered version accepts is kept; the others are listed, withdrawn (it asks for them
    again) and kept in the instance's history. An instance already on that version is left
    as it is.
    """
    from formctl.cli.drift import migrate_lines
    from formctl.cli.workspace import open_runner

    runner = open_runner(store, forms)
    result = runner.migrate(instance_id)
    if as_json:
        _print_json(result.to_dict())
        return
    for line in migrate_lines(result, _labels(runner, result.view.def_id)):
        typer.echo(line)
