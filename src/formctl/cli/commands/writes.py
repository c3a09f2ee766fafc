"""Host writes: ``fill``, ``undo``, ``redo``, ``retract``, ``resolve``, ``submit``, ``abandon``,
``reopen`` and ``migrate``.

Each prints the write's result; a write that rejected some of its values exits 1 (the rest
were saved). Each is a host act (formctl.cli.host says who a host is): done as ``--as NAME``,
else the login name, and recorded with that name, the time and ``--reason`` when given. One
that would take a complete instance back to ready or active is refused unless ``--reopen``
(docs/engine.md, "Host acts").
"""

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, List, Optional

import typer

from formctl.cli.base import _Command, _example, _fail, _print_json, app
from formctl.cli.options import Command, FormsOpt, InstanceArg, JsonOpt, OptionValues, P, StoreOpt, gathered, option
from formctl.json_types import JsonObject

if TYPE_CHECKING:
    from formctl.forms.compile import CompiledForm
    from formctl.forms.evaluate import Evaluation
    from formctl.forms.project import FillResult
    from formctl.forms.runner import FormRunner

AsOpt = typer.Option(None, "--as", metavar="NAME", help="Who does it [default: your login name].")
ReasonOpt = typer.Option(None, "--reason", help="Why (recorded with the act).")
ReopenOpt = typer.Option(False, "--reopen", help="Allow taking a complete instance back to ready or active (recorded).")


@dataclass(frozen=True)
class _HostAct:
    """What a host write is given besides its own arguments: where (``--store``, ``--forms``), who
    (``--as``), why (``--reason``), whether it may reopen (None for an act that cannot reopen
    anything) and how its result is printed (``--json``)."""

    reason: Optional[str]
    by: Optional[str]
    store: Optional[str]
    forms: Optional[str]
    as_json: bool
    reopen: Optional[bool] = None

    @classmethod
    def given(cls, options: OptionValues) -> "_HostAct":
        """The act from its options as typer hands them (see :func:`_host_write`)."""
        reopen = options.get("reopen")
        return cls(
            reason=_text(options["reason"]),
            by=_text(options["by"]),
            store=_text(options["store"]),
            forms=_text(options["forms"]),
            as_json=options["as_json"] is True,
            reopen=reopen is True if reopen is not None else None,
        )

    def runner(self) -> "FormRunner":
        return _host_runner(self.store, self.forms, self.by, self.reason, self.reopen)


def _text(value: object) -> Optional[str]:
    return value if isinstance(value, str) else None


_REASON = option("reason", Optional[str], ReasonOpt)
_REOPEN = option("reopen", bool, ReopenOpt)


def _host_write(
    reason: inspect.Parameter = _REASON, reopen: Optional[inspect.Parameter] = _REOPEN
) -> Callable[[Callable[P, None]], Command]:
    """A host write's options, after its own arguments: ``--reason`` (``reason``, for an act that
    words it otherwise or needs one), ``--as``, ``--reopen`` (None for an act that cannot reopen
    anything), ``--store``, ``--forms`` and ``--json``; the command is given them as its ``act``."""
    who = option("by", Optional[str], AsOpt)
    where = (option("store", StoreOpt, None), option("forms", FormsOpt, None), option("as_json", JsonOpt, False))
    return gathered("act", [reason, who, *([reopen] if reopen is not None else []), *where], _HostAct.given)


def _host_runner(
    store: Optional[str],
    forms: Optional[str],
    by: Optional[str],
    reason: Optional[str] = None,
    reopen: Optional[bool] = None,
) -> "FormRunner":
    """A runner acting as the host named ``--as`` (else the login name); ``reopen``: None for an act
    that cannot reopen anything, else whether --reopen was given."""
    from formctl.cli.args import check_text
    from formctl.cli.workspace import default_subject, open_runner

    check_text(by, "--as")
    check_text(reason, "--reason")
    if by is not None and not by.strip():
        _fail("--as needs a name.", 2)
    runner = open_runner(store, forms, actor=by.strip() if by is not None else default_subject())
    if reopen is not None:
        runner.reopening = reopen
    return runner


def _required(act: _HostAct) -> str:
    """The ``--reason`` an act needs, or the one line saying it is blank (before the store is opened)."""
    reason = act.reason or ""
    if not reason.strip():
        _fail("--reason needs a reason.", 2)
    return reason


def _labels(runner: "FormRunner", def_id: str) -> dict[str, str]:
    try:
        return {f.id: f.label for f in runner.compiled(def_id).fields}
    except Exception:
        return {}


def _field_write(act: _HostAct, field: Optional[str], write: "Callable[[FormRunner], FillResult]", verb: str) -> None:
    """An undo, redo or retract: ``field`` checked before the store is opened, then ``write`` done
    by the host's runner and its result printed (see :func:`write_outcome`)."""
    from formctl.cli.args import check_text

    check_text(field, "FIELD")
    runner = act.runner()
    write_outcome(runner, write(runner), act.as_json, verb)


def write_outcome(runner: "FormRunner", result: "FillResult", as_json: bool, verb: str = "") -> None:
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
@_host_write()
def fill(
    act: _HostAct,
    instance_id: InstanceArg,
    assignments: List[str] = typer.Argument(
        ..., metavar="FIELD=VALUE...", help="Values: JSON when it parses (812.5, true), text otherwise."
    ),
) -> None:
    """Write values to an instance's fields.

    Any field, from any step. Exits 1 if a value was rejected or named no field; the other
    values are saved. Recorded with who (--as) and why (--reason).
    """
    from formctl.cli.args import parse_assignments

    parse_assignments(assignments)  # a malformed pair fails before the store is opened
    runner = act.runner()
    compiled, _, before = runner.evaluation(instance_id)
    values = parse_assignments(assignments, compiled)
    result = runner.fill(values, instance_id=instance_id, reason=act.reason)
    if not act.as_json:
        _say_set_aside(compiled, before, values, result)
    write_outcome(runner, result, act.as_json)


def _say_set_aside(compiled: "CompiledForm", before: "Evaluation", values: JsonObject, result: "FillResult") -> None:
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
@_host_write()
def undo(
    act: _HostAct,
    instance_id: InstanceArg,
    field: Optional[str] = typer.Argument(None, metavar="[FIELD]", help="Field [default: the last one changed]."),
) -> None:
    """Step a field back to its previous answer.

    Nothing is lost: redo brings it back. Recorded with who (--as), when and why (--reason).
    """
    _field_write(act, field, lambda runner: runner.undo(field, instance_id=instance_id, reason=act.reason), "undid")


@app.command(cls=_Command, epilog=_example("formctl redo form_lx2k9_ab12cd email"))
@_host_write()
def redo(
    act: _HostAct,
    instance_id: InstanceArg,
    field: Optional[str] = typer.Argument(None, metavar="[FIELD]", help="Field [default: the oldest undone]."),
) -> None:
    """Put back an answer that undo stepped back.

    Recorded with who (--as), when and why (--reason).
    """
    _field_write(act, field, lambda runner: runner.redo(field, instance_id=instance_id, reason=act.reason), "redid")


@app.command(cls=_Command, epilog=_example("formctl retract form_lx2k9_ab12cd phone --reason 'no longer has one'"))
@_host_write(option("reason", Optional[str], typer.Option(None, "--reason", help="Why (kept in the history).")))
def retract(
    act: _HostAct,
    instance_id: InstanceArg,
    field: str = typer.Argument(..., metavar="FIELD", help="Field id or label."),
) -> None:
    """Withdraw an answer.

    It stays in the history, and undo brings it back. Recorded with who (--as) and why.
    """

    def withdraw_answer(runner: "FormRunner") -> "FillResult":
        view = runner.view(instance_id)
        field_id = view.compiled.resolve_field(field)
        if field_id is not None and not view.stale and view.evaluation.field_status(field_id) == "empty":
            # the engine would log a withdrawal of nothing
            _fail(f"{view.compiled.field_by_id[field_id].label} has no answer to withdraw.")
        return runner.retract(field, reason=act.reason, instance_id=instance_id)

    _field_write(act, field, withdraw_answer, "withdrew")


@app.command(cls=_Command, epilog=_example("formctl submit form_lx2k9_ab12cd", "formctl instances --status ready"))
@_host_write(reopen=None)
def submit(act: _HostAct, instance_id: InstanceArg) -> None:
    """Send a form that is ready.

    For a form with a review before sending: once every required answer is in it reads
    "ready"; sending makes it complete and runs what the form does on completion. Exits 1
    if it is not ready (the message says what is missing) or was already sent.
    """
    runner = act.runner()
    result = runner.submit(instance_id, reason=act.reason)
    if act.as_json:
        _print_json(result.to_dict())
        return
    from formctl.cli import render

    typer.echo(f"sent {result.view.instance_id}: {result.view.name} is {result.view.status}")
    render.print_fill_result(result, _labels(runner, result.view.def_id))


@app.command(cls=_Command, epilog=_example("formctl abandon form_lx2k9_ab12cd --reason 'duplicate claim'"))
@_host_write(option("reason", str, typer.Option(..., "--reason", help="Why (kept on the instance).")), None)
def abandon(act: _HostAct, instance_id: InstanceArg) -> None:
    """Close an instance without finishing it.

    Every answer is kept; formctl reopen takes it back. Recorded with who (--as) and why.
    """
    instance = act.runner().abandon(act.reason or "", instance_id=instance_id)
    if act.as_json:
        _print_json({"instance_id": instance.id, "status": instance.status, "closed_reason": instance.closed_reason})
    else:
        typer.echo(f"abandoned {instance.id}: {instance.closed_reason}")


_MIGRATE_REOPEN = option(
    "reopen",
    bool,
    typer.Option(
        False, "--reopen", help="Move a complete or abandoned instance too, opening it again if need be (recorded)."
    ),
)


@app.command(cls=_Command, epilog=_example("formctl migrate form_lx2k9_ab12cd", "formctl instances --status stale"))
@_host_write(reopen=_MIGRATE_REOPEN)
def migrate(act: _HostAct, instance_id: InstanceArg) -> None:
    """Move an instance to the registered version of its form.

    For an instance started on an older version (it reads "stale"). Every answer the
    registered version accepts is kept; the others are listed, withdrawn (it asks for them
    again) and kept in the instance's history. An instance already on that version is left
    as it is. A complete or abandoned instance keeps the version it closed under: it is moved
    only with --reopen. Recorded with who (--as), when and why (--reason).
    """
    from formctl.cli.drift import migrate_lines

    runner = act.runner()
    result = runner.migrate(instance_id, reason=act.reason, reopen=bool(act.reopen))
    if act.as_json:
        _print_json(result.to_dict())
        return
    for line in migrate_lines(result, _labels(runner, result.view.def_id)):
        typer.echo(line)


@app.command(
    cls=_Command,
    epilog=_example("formctl reopen form_lx2k9_ab12cd --reason 'age was a typo: 61, not 16'"),
)
@_host_write(option("reason", str, typer.Option(..., "--reason", help="Why (recorded with the act).")), None)
def reopen(act: _HostAct, instance_id: InstanceArg) -> None:
    """Open an abandoned or terminated instance again.

    Its answers decide what it is then (active, ready or complete); the reason it was closed
    with is cleared, and the reopening is recorded with who (--as), when and why.
    """
    from formctl.cli.args import check_text

    reason = _required(act)
    check_text(reason, "--reason")
    runner = act.runner()
    before = runner.open_instance(instance_id)
    view = runner.reopen(instance_id, reason=reason)
    if act.as_json:
        _print_json(view.to_dict())
        return
    was = before.status if before is not None else "?"
    typer.echo(f"reopened {instance_id}: {was} → {view.status}")


@app.command(
    cls=_Command,
    epilog=_example("formctl withdraw form_lx2k9_ab12cd --reason 'the total was wrong'"),
)
@_host_write(option("reason", str, typer.Option(..., "--reason", help="Why (recorded, like a resolution).")), None)
def withdraw(act: _HostAct, instance_id: InstanceArg) -> None:
    """Take back a request that waits for approval.

    The wait ends and the answers can be corrected; the approval is asked again when the
    answers it covers change while its condition holds. Recorded with who (--as), when and why.
    """
    reason = _required(act)
    runner = act.runner()
    result = runner.withdraw(instance_id, reason=reason)
    if act.as_json:
        _print_json(result.to_dict())
        return
    typer.echo(f"withdrawn: {instance_id} no longer waits for approval; it is {result.view.status}")
