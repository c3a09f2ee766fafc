"""Reads of one instance or of the store: ``instances``, ``inspect``, ``history`` and ``export``."""

import sys
from typing import TYPE_CHECKING, NoReturn, Optional

import typer

from formctl.cli.base import _Command, _example, _fail, _print_json, app
from formctl.cli.options import (
    FormsOpt,
    InstanceArg,
    JsonOpt,
    StoreOpt,
    _complete_form,
    _complete_instance,
    _complete_status,
)
from formctl.json_types import JsonObject

if TYPE_CHECKING:
    from formctl.errors import StoreError
    from formctl.forms.history import FieldHistory
    from formctl.forms.project import FormView
    from formctl.forms.reading import InstanceView
    from formctl.forms.runner import FormRunner


@app.command(cls=_Command, epilog=_example("formctl instances --form travel-claim --status awaiting"))
def instances(
    subject: Optional[str] = typer.Option(None, "--subject", help="Only this subject's."),
    form: Optional[str] = typer.Option(None, "--form", help="Only this form's.", autocompletion=_complete_form),
    status: Optional[str] = typer.Option(
        None, "--status", help="active, awaiting, complete, abandoned or stale.", autocompletion=_complete_status
    ),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="At most this many, most recent first."),
    store: StoreOpt = None,
    forms: FormsOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List stored instances, newest first.

    The status is read against the registered forms: one started on another version of its
    form, which cannot migrate it, is listed as stale.
    """
    from formctl.cli.workspace import open_registry, open_runner
    from formctl.errors import RegistryError
    from formctl.forms.instance import INSTANCE_STATUSES
    from formctl.forms.registry import FormRegistry

    if status is not None and status not in INSTANCE_STATUSES:
        _fail(f'Unknown status "{status}": use one of {", ".join(INSTANCE_STATUSES)}.', 2)
    from formctl.cli.workspace import is_database, store_path

    if (
        not is_database(store) and not store_path(store).exists()
    ):  # likely a mistyped --store: "no instances" alone would hide it
        sys.stderr.write(f"note: no form store at {store_path(store)} yet (--store DIR or FORMCTL_STORE)\n")
    try:
        registry = open_registry(forms)
    except RegistryError:  # no forms here: list what is stored, with the stored statuses
        registry = FormRegistry()
    runner = open_runner(store, forms, registry=registry)
    damaged: list[StoreError] = []
    found = runner.instances(subject=subject, form_id=form, status=status, limit=limit, damaged=damaged)
    for exc in damaged:  # left out of the list, so say so: it may be the claim someone is looking for
        sys.stderr.write(f"warning: not listed: {exc.message} (formctl store check)\n")
    rows = []
    for summary, served in zip(found, runner.items_served(found)):
        row = summary.to_dict()
        damage = _warn_if_damaged(runner, summary.instance_id)
        if damage is not None:
            row["damaged"] = damage
        if served:
            row["serves"] = served
        rows.append(row)
    if as_json:
        _print_json({"instances": rows})
        return
    from formctl.cli import render

    render.print_instances(rows)
    for row in rows:
        for item in row.get("serves", []):
            typer.echo(f"{row['instance_id']} serves {_served_text(item)}")


def _served_text(item: JsonObject) -> str:
    scope = item["scope"]
    where = f"{scope['subject']} / {scope['key']}" + (f" / {scope['agent']}" if scope.get("agent") else "")
    return f'program {item["program"]} ({where}): {item["goal"]}.{item["item"]} "{item["label"]}"'


@app.command(
    cls=_Command,
    epilog=_example("formctl inspect form_lx2k9_ab12cd --step trip", "formctl inspect form_lx2k9_ab12cd --json"),
)
def inspect(
    instance_id: InstanceArg,
    step: Optional[str] = typer.Option(None, "--step", help="One step, by id or title ('open' for the open one)."),
    field: Optional[str] = typer.Option(None, "--field", help="One field, by id or label."),
    outline: bool = typer.Option(False, "--outline", help="Every step and field (the default)."),
    store: StoreOpt = None,
    forms: FormsOpt = None,
    as_json: JsonOpt = False,
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
    damage = _warn_if_damaged(runner, instance_id)
    read = _read_stale(runner, instance_id)
    view = _part_view(runner, instance_id, read, step=step, field=field)
    if view.step is None and not view.fields and (step not in (None, "open") or field is not None):
        # The views answer an unknown name with the header alone (the model reads that as
        # "nothing there"); at the command line it is a mistake, reported like history's.
        _unknown_name(
            runner, view.def_id, "step" if field is None else "field", field if field is not None else step or ""
        )
    decided = _resolutions(runner, instance_id)
    served = _served(runner, instance_id)
    if as_json:
        data = _with_damage(_marked(_with_resolutions(view.to_dict(), decided), read), damage)
        if served:
            data["serves"] = served
        _print_json(data)
        return
    from formctl.cli import render

    render.print_view(view)
    render.print_resolutions(decided)
    for item in served:
        typer.echo(f"Serves {_served_text(item)}")


def _part_view(
    runner: "FormRunner", instance_id: str, read: "InstanceView | None", *, step: str | None, field: str | None
) -> "FormView":
    """What ``inspect`` shows: one field, one step (``open``: the open one) or the outline. Of a
    stale instance (``read``), its stored answers read against the registered version."""
    step_id = None if step == "open" else step
    if read is None:
        if field is not None:
            return runner.inspect("field", field, instance_id=instance_id)
        if step is not None:
            return runner.inspect("step", step_id, instance_id=instance_id)
        return runner.inspect("outline", instance_id=instance_id)
    from formctl.forms.project import field_view, outline_view, step_view

    compiled, ev, instance = read.compiled, read.evaluation, read.instance
    if field is not None:
        return field_view(compiled, ev, instance, field)
    if step is not None:
        return step_view(compiled, ev, instance, step_id)
    return outline_view(compiled, ev, instance)


def _served(runner: "FormRunner", instance_id: str) -> list[JsonObject]:
    """The goal program items the instance serves (none when it cannot be read)."""
    from formctl.forms.reading import summarise

    instance = runner.open_instance(instance_id)
    return runner.items_served([summarise(instance, instance.status)])[0] if instance is not None else []


def _unknown_name(runner: "FormRunner", def_id: str, kind: str, name: str) -> NoReturn:
    """Fail on a --step or --field that names nothing, with the names that were meant if we can tell."""
    hint = ""
    try:
        compiled = runner.compiled(def_id)
        if kind == "field" and compiled.did_you_mean(name):
            hint = f" (did you mean {' or '.join(compiled.did_you_mean(name))}?)"
        elif kind == "step":
            hint = f" (steps: {', '.join(s.id for s in compiled.steps)})"
    except Exception:  # the hint is a courtesy: the error stands without it
        pass
    _fail(f'No {kind} "{name}" on this form{hint}.')


@app.command(cls=_Command, epilog=_example("formctl history form_lx2k9_ab12cd email"))
def history(
    instance_id: InstanceArg,
    field: Optional[str] = typer.Argument(None, metavar="[FIELD]", help="One field [default: every answered field]."),
    store: StoreOpt = None,
    forms: FormsOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show every answer given, oldest first.

    With who gave each answer and why it changed; the one in force is marked.
    """
    from formctl.cli.workspace import open_runner

    runner = open_runner(store, forms)
    damage = _warn_if_damaged(runner, instance_id)
    read = _read_stale(runner, instance_id)

    def one(name: str) -> "FieldHistory":
        return _one_history(runner, instance_id, name, read)

    if field is not None:
        histories = [one(field).to_dict()]
    else:
        compiled, instance = (read.compiled, read.instance) if read is not None else runner.evaluation(instance_id)[:2]
        ordered = [f.id for f in compiled.fields if f.id in instance.entries]
        ordered += [f for f in instance.entries if f not in compiled.field_by_id]
        histories = [one(f).to_dict() for f in ordered]
    repairs = [dict(r) for r in runner.repairs(instance_id)]
    decided = _resolutions(runner, instance_id) if field is None else []  # one field's history is that field's
    faults = _failed_runs(runner, instance_id) if field is None else []
    done = _acts(runner, instance_id, field)
    if as_json:
        data = histories[0] if field is not None else {"instance_id": instance_id, "fields": histories}
        if done:
            data["acts"] = done
        if repairs:
            data["repairs"] = repairs
        if faults:
            data["failed_runs"] = faults
        _print_json(_with_damage(_marked(_with_resolutions(data, decided), read), damage))
        return
    from formctl.cli import render

    render.print_histories(histories)
    render.print_resolutions(decided)
    render.print_failed_runs(faults)
    render.print_acts(done)
    from formctl.cli.workspace import versions_text

    for r in repairs:  # the loss someone accepted is part of the instance's history
        what = f"{versions_text(r.get('lost'), 'was')} lost"
        typer.echo(
            f"{r['at']}  {what} ({r.get('reason')}); accepted by {r['by']} with formctl store repair; "
            f"the damaged files are kept in {r.get('kept')}"
        )


def _one_history(runner: "FormRunner", instance_id: str, name: str, read: "InstanceView | None") -> "FieldHistory":
    """One field's history; of a stale instance, read from its log (every answer is stored whatever the version)."""
    if read is None:
        return runner.history(name, instance_id=instance_id)
    from formctl.forms.history import field_history

    compiled, instance = read.compiled, read.instance
    field_id = compiled.resolve_field(name) or (name if name in instance.entries else None)
    if field_id is None:
        _unknown_name(runner, compiled.id, "field", name)
    label = compiled.field_by_id[field_id].label if field_id in compiled.field_by_id else field_id
    return field_history(instance, field_id, label)


@app.command(cls=_Command, epilog=_example("formctl why form_lx2k9_ab12cd email"))
def why(
    instance_id: InstanceArg,
    field: str = typer.Argument(..., metavar="FIELD", help="The field to explain."),
    store: StoreOpt = None,
    forms: FormsOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show where a field's value came from.

    The value in force and each revision's provenance: the person's own words (quoted, with
    their message and turn), a confirmation, the host, a hook; who corrected it and when.
    """
    from formctl.cli.workspace import open_runner

    runner = open_runner(store, forms)
    damage = _warn_if_damaged(runner, instance_id)
    history = _one_history(runner, instance_id, field, _read_stale(runner, instance_id)).to_dict()
    in_force = next((r for r in history["revisions"] if r["in_force"] and not r.get("retracted")), None)
    data = {
        "instance_id": instance_id,
        "field": history["field"],
        "label": history["label"],
        "value": in_force.get("value") if in_force else None,
        "provenance": in_force["provenance"] if in_force else None,
        "by": f"{in_force['actor']} ({in_force['source']}) at {in_force['at']}" if in_force else None,
        "invalid": bool(in_force and in_force.get("invalid")),
        "revisions": history["revisions"],
    }
    done = _acts(runner, instance_id, history["field"])
    if done:
        data["acts"] = done
    if as_json:
        _print_json(_with_damage(data, damage))
        return
    from formctl.cli import render

    render.print_why(data)
    render.print_acts(done)


@app.command(
    cls=_Command,
    epilog=_example(
        "formctl export form_lx2k9_ab12cd --json > claim.json",
        "formctl export --form travel-claim --status complete --since 2026-11-01 --format csv > claims.csv",
        "formctl export --form client-intake --format jsonl > intakes.jsonl",
    ),
)
def export(
    instance_id: Optional[str] = typer.Argument(
        None, metavar="[ID]", help="Instance id (see formctl instances); or --form.", autocompletion=_complete_instance
    ),
    form: Optional[str] = typer.Option(
        None, "--form", help="Every instance of this form, one row each.", autocompletion=_complete_form
    ),
    status: Optional[str] = typer.Option(
        None, "--status", help="With --form: only this status.", autocompletion=_complete_status
    ),
    since: Optional[str] = typer.Option(None, "--since", metavar="DATE", help="With --form: started on or after DATE."),
    out_format: Optional[str] = typer.Option(
        None, "--format", metavar="csv|jsonl", help="With --form: csv (the default) or jsonl."
    ),
    include_sensitive: bool = typer.Option(
        False, "--include-sensitive", help="With --form: sensitive values as given, not masked."
    ),
    store: StoreOpt = None,
    forms: FormsOpt = None,
    as_json: JsonOpt = False,
    with_provenance: bool = typer.Option(False, "--provenance", help="Say where each value came from."),
) -> None:
    """Print live values, held ones apart; with --form, every instance as CSV or JSON lines.

    Held values are kept but do not apply given the other answers. With --form, one row per
    instance (oldest first): id, subject, status and times, a column per field, then the held
    values (held:FIELD); sensitive fields read [hidden] unless --include-sensitive. Rows are
    written as they are read, so a large store is never held in memory.
    """
    from formctl.cli.workspace import open_runner

    if form is not None:
        if instance_id is not None:
            _fail("Give an instance ID or --form, not both.", 2)
        from formctl.cli.export import export_form

        export_form(
            open_runner(store, forms), form, status=status, since=since, fmt=out_format, sensitive=include_sensitive
        )
        return
    if instance_id is None:
        _fail("Give an instance ID, or --form FORM for every instance of a form.", 2)
    if out_format is not None or status is not None or since is not None or include_sensitive:
        _fail("--format, --status, --since and --include-sensitive go with --form.", 2)
    runner = open_runner(store, forms)
    damage = _warn_if_damaged(runner, instance_id)
    view = runner.view(instance_id)  # a stale instance exports too: its answers are what it has
    data = _exported(view, _read_stale(runner, instance_id, view))
    if with_provenance:
        data = _with_provenance(data, view)
    if as_json:
        _print_json(_with_damage(data, damage))
        return
    from formctl.cli import render

    render.print_export(data, {f.id: f.label for f in view.compiled.fields})
    render.print_resolutions(data.get("resolutions", []))
    render.print_acts(data.get("acts", []))


def _exported(view: "InstanceView", read: "InstanceView | None") -> JsonObject:
    """One instance as ``export`` prints it: its live and held values, its status and times, the
    checkpoints' resolutions; of a stale one, marked so with the answers the registered version
    no longer asks; of a closed record, its answers as it closed."""
    from formctl.forms.lifecycle import is_closed_record
    from formctl.forms.project import answers
    from formctl.forms.resolutions import resolutions

    compiled, instance = view.compiled, view.instance
    data: JsonObject = {
        "instance_id": instance.id,
        "form": instance.def_id,
        "version": instance.def_version,
        "subject": instance.subject,
        "status": view.status,
        "complete": view.complete,
        **answers(compiled, view.evaluation),
        "created_at": instance.created_at,
        "updated_at": instance.updated_at,
    }
    if read is not None:
        data = _marked(data, read)
        gone = {
            f: log.revisions[-1].value
            for f, log in instance.entries.items()
            if f not in compiled.field_by_id and log.revisions
        }
        if gone:  # answers to fields the registered version no longer has: kept, and shown
            data["not_in_registered_version"] = gone
    elif is_closed_record(compiled, instance):
        # A closed record keeps the version it closed on (docs/engine.md, "Drift"): its answers
        # as stored, beside the reading against the registered version above.
        data["closed_on_version"] = instance.def_version
        data["answers_as_closed"] = instance.in_force_values()
    if instance.completed_at:
        data["completed_at"] = instance.completed_at
    if instance.closed_reason:
        data["closed_reason"] = instance.closed_reason
    return _with_resolutions(data, [r.to_dict() for r in resolutions(instance)])


def _with_provenance(data: JsonObject, view: "InstanceView") -> JsonObject:
    """``export --provenance``: where each exported value came from, and every act on the instance."""
    from formctl.forms.acts import acts
    from formctl.forms.history import field_history

    instance = view.instance
    provenance: JsonObject = {}
    for fid in [*data.get("values", {}), *data.get("held", {})]:
        rows = field_history(instance, fid, fid).revisions
        current = next((r for r in rows if r.in_force and not r.retracted), None)
        if current is not None:
            provenance[fid] = {**current.provenance(), "actor": current.actor, "at": current.at}
    return {**data, "provenance": provenance, "acts": [a.to_dict() for a in acts(instance)]}


def _read_stale(runner: "FormRunner", instance_id: str, view: "InstanceView | None" = None) -> "InstanceView | None":
    """The read-only view of a stale instance (and a note on stderr saying so), or None when it is not stale.

    Its answers are read against the registered version of the form: what they would be if it
    were moved there. ``formctl migrate ID`` does move it.
    """
    view = view if view is not None else runner.view(instance_id)
    if not view.stale:
        return None
    sys.stderr.write(
        f"note: {instance_id} is stale: it was started on version {view.instance.def_version} of "
        f"{view.instance.def_id}, and version {view.compiled.version} is registered now. These are its answers "
        f"read against version {view.compiled.version}; formctl migrate {instance_id} moves it there.\n"
    )
    return view


def _marked(data: JsonObject, read: "InstanceView | None") -> JsonObject:
    """Mark a read of a stale instance as such in --json output."""
    if read is None:
        return data
    return {
        **data,
        "status": read.status,  # the status as read (lifecycle.read_status): stale
        "stale": True,
        "registered_version": read.compiled.version,
        "started_on_version": read.instance.def_version,
    }


def _warn_if_damaged(runner: "FormRunner", instance_id: str) -> JsonObject | None:
    """Say on stderr, in one line, that the instance's files lost what the store acknowledged
    (the read goes on, showing what they hold); the damage as JSON data, or None. The runner
    asks its own store: a command holds one adapter."""
    damage = runner.damage(instance_id)
    if damage is None:
        return None
    found: JsonObject = damage.to_dict()
    sys.stderr.write(
        f"warning: {damage.describe()}; writes to it are refused until formctl store repair {instance_id}\n"
    )
    return found


def _resolutions(runner: "FormRunner", instance_id: str) -> list[JsonObject]:
    """The hosts' decisions on the instance's checkpoints (who, when, approved or rejected, why), as data."""
    from formctl.forms.resolutions import resolutions

    instance = runner.open_instance(instance_id)
    return [r.to_dict() for r in resolutions(instance)] if instance is not None else []


def _failed_runs(runner: "FormRunner", instance_id: str) -> list[JsonObject]:
    """The executor runs that failed, with the fault the person was spared (the exception, where)."""
    from formctl.forms.executors import failed_runs

    instance = runner.open_instance(instance_id)
    return failed_runs(instance) if instance is not None else []


def _acts(runner: "FormRunner", instance_id: str, field: str | None = None) -> list[JsonObject]:
    """Every act on the instance (who, when, why: formctl.forms.acts), oldest first; with
    ``field``, the acts that touched that field."""
    from formctl.forms.acts import acts

    instance = runner.open_instance(instance_id)
    if instance is None:
        return []
    rows = [a.to_dict() for a in acts(instance)]
    if field is None:
        return rows
    return [r for r in rows if field in r.get("fields", ()) or str(r.get("detail", "")).startswith(f"{field}: ")]


def _with_resolutions(data: JsonObject, decided: list[JsonObject]) -> JsonObject:
    return {**data, "resolutions": decided} if decided else data


def _with_damage(data: JsonObject, damage: JsonObject | None) -> JsonObject:
    return {**data, "damaged": damage} if damage is not None else data
