"""What a person sees: rich tables for views, histories, instance lists and store reports,
and the short tool-activity lines of the chat.

Everything here turns engine objects (or the JSON the model sees) into text; nothing here
decides a rule. Type strings, statuses, ``ask`` and the tier-0 line all come from the
engine's own projection, so ``formctl inspect`` shows exactly what the model is told.

Colour follows the terminal: rich turns it off when ``NO_COLOR`` is set or output is not
a terminal, and this module never forces it on. ``--json`` output does not come through
here at all (see ``app.py``), so scripts never import rich.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Callable, Iterable

from rich.console import Console
from rich.text import Text

from formctl.forms.instance import Status
from formctl.json_types import FieldValue, JsonObject

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.table import Table

    from formctl.forms.compile import CompiledCheck, CompiledForm
    from formctl.forms.history import MoveTarget
    from formctl.forms.project import FieldRow, FillResult, FormView

_STATUS_STYLE: dict[str, str] = {
    # a field's status
    "filled": "green",
    "held": "yellow",
    "invalid": "red",
    "empty": "dim",
    # an instance's status as read (Status members hash and compare as their words)
    Status.ACTIVE: "cyan",
    Status.READY: "magenta",
    Status.AWAITING: "yellow",
    Status.COMPLETE: "green",
    Status.ABANDONED: "dim",
    Status.STALE: "red",
}


def _table(title: str | None = None, *, pad_edge: bool = False) -> Table:
    """A rich ``Table`` as formctl draws them: no box, bold column names, the title at the left;
    ``pad_edge`` pads the outer columns too. rich.table is imported with the first table drawn,
    not with this module: it brings in ``fractions`` and ``decimal`` (~10 ms), and the chat, which
    prints through this module on every turn, draws none until a ``/status`` or ``/history``."""
    from rich.table import Table

    return Table(
        title=title, title_justify="left", show_edge=pad_edge, pad_edge=pad_edge, box=None, header_style="bold"
    )


PIPE_WIDTH = 200
"""Columns when output is not a terminal (and ``COLUMNS`` is unset). Rich's default of 80
would wrap and truncate table cells in a pipe, where nobody reads the width anyway."""


def console(*, stderr: bool = False) -> Console:
    """A console for stdout (or stderr), as wide as the terminal, or :data:`PIPE_WIDTH` in a pipe."""
    stream = sys.stderr if stderr else sys.stdout
    width = None
    if not (hasattr(stream, "isatty") and stream.isatty()) and not os.environ.get("COLUMNS"):
        width = PIPE_WIDTH
    # markup=False: what is printed is data (a person's answers, reasons, form titles), and
    # rich markup would eat "[gated]" or "[x]" from it and stop on "[/]" with a MarkupError.
    # Styles are given as Text and style= arguments instead.
    return Console(stderr=stderr, highlight=False, markup=False, width=width)


def value_text(value: FieldValue) -> str:
    """A value for people: text as it is, anything else as compact JSON (``812.5``, ``true``, ``["a"]``)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _status(text: str) -> Text:
    return Text(text, style=_STATUS_STYLE.get(text, ""))


# --------------------------------------------------------------------------- views


def view_header(view: FormView) -> Text:
    """``Travel reimbursement claim · form_… · active`` plus what is blocking or closed."""
    from formctl.forms.failures import check_words

    line = Text()
    line.append(view.name, style="bold")
    line.append(f"  {view.instance_id}  ", style="dim")
    line.append_text(_status(view.status))
    if view.complete and view.status != Status.COMPLETE:
        line.append(" (complete)", style="green")
    if view.blocked_on:
        # Plain words, and the check's id in brackets: a host names it to act (formctl resolve).
        line.append(f"\nwaiting on {check_words(view.blocked_on)} [{view.blocked_on}]", style="yellow")
        if view.wait_message:
            line.append(f": {view.wait_message}", style="yellow")
    if view.closed_reason:
        line.append(f"\nclosed: {view.closed_reason}", style="dim")
    if getattr(view, "closed_on_version", None) is not None:
        line.append(
            f"\nclosed on version {view.closed_on_version} of its form: its answers as they were when it closed",
            style="dim",
        )
    for text in view.failure_lines:
        line.append(f"\nblocked: {text}", style="red")
    for check in view.checks_failed:
        line.append(f"\nheld: {check.message} [{check.check}]", style="red")
    return line


def _fields_table(rows: Iterable[FieldRow], *, title: str | None = None) -> Table:
    table = _table(title)
    table.add_column("field", no_wrap=True)
    table.add_column("label")
    table.add_column("type", style="cyan")
    table.add_column("req", justify="center")
    table.add_column("status", no_wrap=True)
    table.add_column("value")
    for row in rows:
        mark = "*" if row.ask else ""
        value = ""
        if row.has_value:
            value = value_text(row.value)
        elif row.error:
            value = row.error
        applies = getattr(row, "applies", True)
        status = row.status if applies or row.status != "empty" else "doesn't apply"
        said = status + (" (derived)" if row.derived else "") + (", check fails" if row.failed_check else "")
        cells = [
            f"{row.id}{mark}",
            row.label,
            row.type,
            ("yes" if row.required else "no") if applies else "-",  # not needed given the answers
            Text(said, style=_STATUS_STYLE.get(status, "")),
            Text(value, style="red" if row.status == "invalid" else ""),
        ]
        table.add_row(*cells)
    return table


def print_view(view: FormView, out: Console | None = None) -> None:
    """A step, field or outline view: header, then the rows (``*`` marks fields to ask now)."""
    out = out or console()
    out.print(view_header(view))
    if view.scope == "outline" and view.steps is not None:
        steps = _table()
        for name in ("#", "step", "title", "collects", "progress", "state"):
            steps.add_column(name)
        for s in view.steps:
            state = "complete" if s.complete else ("open" if s.open else "")
            steps.add_row(
                f"{s.number}/{s.of}", s.id, s.title, s.preview or "", f"{s.filled}/{s.required}", _status(state)
            )
        out.print(steps)
        out.print()
        out.print(_fields_table(view.fields))
    elif view.step is not None:
        title = f"step {view.step.number}/{view.step.of} · {view.step.title} ({view.step.id})"
        out.print(_fields_table(view.fields, title=title))
    else:
        out.print(Text("nothing by that id on this form", style="dim"))
    if view.undo is not None:
        out.print(Text(f"undo would set {_move(view.undo)}", style="dim"))
    if view.redo is not None:
        out.print(Text(f"redo would set {_move(view.redo)}", style="dim"))


def moved_text(row: FieldRow) -> str:
    """What a field an undo, redo or retract moved holds now, for people: ``AB1234``, ``empty``, or a
    value refused when it was given, back in force as it was: ``ab12 (not accepted)``."""
    if not row.has_value:
        return "empty"
    return f"{value_text(row.value)} (not accepted)" if row.error else value_text(row.value)


def _move(target: MoveTarget) -> str:
    if target.empties:
        return f"{target.label} → empty"
    text = f"{target.label} → {value_text(target.value)}"
    return text if target.accepted else f"{text} (not accepted)"


def print_fill_result(result: FillResult, labels: dict[str, str], out: Console | None = None) -> None:
    """A write's outcome: one activity line, then the step it left the form on."""
    out = out or console()
    data = result.to_dict()
    line = activity_line("form_fill", {"status": "success", "data": data}, labels)
    if line:
        out.print(Text(line, style="dim"))
    for field_id in data.get("ignored") or []:
        # The result's own note speaks to the model (form_revise); this is the command's way.
        out.print(
            Text(
                f"ignored {labels.get(field_id, field_id)}: a blank value is never written; to withdraw "
                f"the answer: formctl retract {result.view.instance_id} {field_id}",
                style="yellow",
            )
        )
    print_view(result.view, out)


# --------------------------------------------------------------------------- a form without an instance


def print_check(compiled: CompiledForm, out: Console | None = None) -> None:
    """``formctl check``: the compiled outline, each field with the type string the model reads."""
    out = out or console()
    head = Text()
    head.append(compiled.name, style="bold")
    head.append(f"  {compiled.id} v{compiled.version}", style="dim")
    out.print(head)
    if compiled.description:
        out.print(Text(compiled.description, style="dim"))
    for step in compiled.steps:
        title = f"{step.number}/{len(compiled.steps)} {step.title} ({step.id})"
        if step.preview:
            title += f" — {step.preview}"
        if step.when is not None:
            title += "  [gated]"
        table = _table(title)
        for name in ("field", "label", "type", "req", "notes"):
            table.add_column(name)
        for f in step.fields:
            notes = []
            if f.when is not None:
                notes.append("conditional")
            if f.derive is not None:
                notes.append("derived")
            if f.on_fill is not None:
                notes.append("on_fill" + (" (reruns on change)" if f.rerun else ""))
            if f.sensitive:
                notes.append("sensitive")
            table.add_row(f.id, f.label, Text(f.type, style="cyan"), "yes" if f.required else "no", ", ".join(notes))
        out.print(table)
        _print_checks(step.checks, out)
    _print_checks(compiled.form_checks, out, of_form=True)
    for cp in compiled.checkpoints:
        kind = "blocking checkpoint" if cp.blocking else "checkpoint"
        waits = " (waits for formctl resolve)" if cp.blocking and (cp.run is None or cp.wait_for_host) else ""
        out.print(Text(f"{kind} {cp.id}{waits}", style="yellow"))


def _print_checks(checks: Iterable[CompiledCheck], out: Console, *, of_form: bool = False) -> None:
    """The checks that hold a step (or the form): each with the message a person reads and what it reads."""
    for c in checks:
        reads = f" (reads {', '.join(c.fields)})" if c.fields else ""
        says = c.message if isinstance(c.message, str) else "(a message worded from the values)"
        out.print(Text(f"{'form check' if of_form else 'check'} {c.id}: {says}{reads}", style="magenta"))


def _check_dicts(checks: Iterable[CompiledCheck]) -> list[JsonObject]:
    return [
        {"id": c.id, "message": c.message if isinstance(c.message, str) else None, "fields": list(c.fields)}
        for c in checks
    ]


def check_dict(compiled: CompiledForm) -> JsonObject:
    """``formctl check --json``: the same outline as data."""
    return {
        "form": compiled.id,
        "version": compiled.version,
        "name": compiled.name,
        "ok": True,
        "steps": [
            {
                "id": s.id,
                "title": s.title,
                "position": f"{s.number}/{len(compiled.steps)}",
                **({"collects": s.preview} if s.preview else {}),
                "gated": s.when is not None,
                "fields": [
                    {
                        "id": f.id,
                        "label": f.label,
                        "type": f.type,
                        "required": f.required,
                        "conditional": f.when is not None,
                        "derived": f.derive is not None,
                    }
                    for f in s.fields
                ],
                "checks": _check_dicts(s.checks),
            }
            for s in compiled.steps
        ],
        "checks": _check_dicts(compiled.form_checks),
        "checkpoints": [
            {
                "id": cp.id,
                "blocking": cp.blocking,
                "waits_for_host": bool(cp.blocking and (cp.run is None or cp.wait_for_host)),
            }
            for cp in compiled.checkpoints
        ],
    }


# --------------------------------------------------------------------------- history, instances, export


def print_histories(histories: list[JsonObject], out: Console | None = None) -> None:
    """Every revision of each field, oldest first; ``▸`` marks the one in force."""
    out = out or console()
    if not histories:
        out.print(Text("no answers yet", style="dim"))
    for h in histories:
        table = _table(f"{h['label']} ({h['field']})")
        for name in ("", "at", "value", "by", "how", "note"):
            table.add_column(name)
        for r in h["revisions"]:
            if r.get("retracted"):
                value = Text("retracted", style="dim")
            else:
                value = Text(value_text(r.get("value")), style="red" if r.get("invalid") else "")
            # Said in words, not only in red: without colour (a pipe, NO_COLOR) a rejected answer
            # looked like an accepted one.
            note = "; ".join(n for n in ("rejected" if r.get("invalid") else "", r.get("note") or "") if n)
            table.add_row(
                "▸" if r.get("in_force") else "",
                r["at"],
                value,
                f"{r['actor']}/{r['source']}",
                how_text(r.get("provenance") or {}),
                note,
            )
        if not h["revisions"]:
            table.add_row("", "", Text("never answered", style="dim"), "", "", "")
        out.print(table)


_HOW = {
    "said": "said by the person",
    "reading": "read from the person's words",
    "assumed": "assumed (not in the person's words)",
    "confirmed": "confirmed by the person",
    "host": "written by the host",
    "executor": "derived by a hook",
    "seed": "given by the host as a seed",  # a seed stored before its moment was recorded
    "migrated": "carried over by a migration",
    "derived": "worked out from other answers",
}

# When the host gave a seed (provenance ``moment``): with the form's start, or with a chat
# (``formctl run FORM --seed``) that continued a form already under way.
_SEED_MOMENT = {
    "start": ("given when the form started", "at the start"),
    "continued": ("given by the host when a chat continued the form", "when a chat continued"),
}


def how_words(p: JsonObject) -> str:
    """How a revision's value arrived, in words: ``said by the person``, ``given when the form started``."""
    kind = str(p.get("kind") or "")
    if kind == "seed" and p.get("moment") in _SEED_MOMENT:
        return _SEED_MOMENT[p["moment"]][0]
    return _HOW.get(kind, kind)


def how_text(p: JsonObject) -> str:
    """A revision's provenance in a few words: ``said, turn 2``, ``executor field:mileage``, ``seed, at the start``."""
    kind = p.get("kind") or ""
    extra = f"turn {p['turn']}" if p.get("turn") is not None else (p.get("hook") or "")
    if kind == "derived" and p.get("inputs"):
        extra = f"from {p['inputs']}"
    if kind == "seed" and p.get("moment") in _SEED_MOMENT:
        extra = _SEED_MOMENT[p["moment"]][1]
    return f"{kind}, {extra}" if extra else kind


def quoted_in_message(message: str, quote: str) -> Text:
    """The person's message with the quoted words marked: bold, and between « » so a pipe shows them too."""
    at = message.find(quote)
    if at < 0:
        return Text(f"«{quote}»", style="bold")
    text = Text(message[:at])
    text.append(f"«{quote}»", style="bold underline")
    text.append(message[at + len(quote) :])
    return text


def print_why(data: JsonObject, out: Console | None = None) -> None:
    """``formctl why``: the value in force and how it got there, then every revision with its provenance."""
    out = out or console()
    p = data.get("provenance")
    head = Text(f"{data['label']} ({data['field']}): ", style="bold")
    head.append(value_text(data["value"]) if p is not None else "no answer in force")
    if data.get("invalid"):
        head.append(" (rejected: not a valid answer)", style="red")
    out.print(head)
    if p is not None:
        out.print(
            Text(
                f"  {how_words(p)}"
                + (f", turn {p['turn']}" if p.get("turn") is not None else "")
                + (f" ({p['hook']})" if p.get("hook") else "")
                + (f" · {data['by']}" if data.get("by") else "")
            )
        )
        if p.get("quote") is not None:
            line = Text("  their words: ")
            line.append_text(quoted_in_message(p.get("message") or p["quote"], p["quote"]))
            out.print(line)
    revisions = data.get("revisions") or []
    if not revisions:
        return
    out.print(Text("revisions, oldest first:", style="bold"))
    for i, r in enumerate(revisions):
        rp = r.get("provenance") or {}
        value = "retracted" if r.get("retracted") else value_text(r.get("value"))
        verb = "given" if i == 0 else ("withdrawn" if r.get("retracted") else "corrected")
        line = Text(f"{'▸' if r.get('in_force') else ' '} {i + 1}. {value}", style="bold" if r.get("in_force") else "")
        line.append(f" · {how_text(rp)} · {verb} by {r['actor']} ({r['source']}) at {r['at']}")
        if r.get("invalid"):
            line.append(" · rejected", style="red")
        if r.get("note"):
            line.append(f" · {r['note']}")
        out.print(line)
        if rp.get("quote") is not None:
            words = Text("     ")
            words.append_text(quoted_in_message(rp.get("message") or rp["quote"], rp["quote"]))
            out.print(words)


def print_resolutions(rows: list[JsonObject], out: Console | None = None) -> None:
    """The hosts' decisions on checkpoints, oldest first: which, approved or rejected, by whom, when, why."""
    columns = ("checkpoint", "decision", "by", "at", "on", "reason")
    _print_section(rows, out, "checkpoint decisions", columns, _resolution_cells)


def _resolution_cells(r: JsonObject) -> tuple[RenderableType, ...]:
    decision = Text(r["outcome"], style="green" if r["outcome"] == "approved" else "red")
    on = ", ".join(f"{k}={value_text(v)}" for k, v in (r.get("covers") or {}).items())
    return r["checkpoint"], decision, _decided_by(r), r["at"], on, r.get("reason") or ""


def _print_section(
    rows: list[JsonObject],
    out: Console | None,
    title: str,
    columns: tuple[str, ...],
    cells: Callable[[JsonObject], tuple[RenderableType, ...]],
) -> None:
    """A bold ``title`` on ``out`` and the table under it, ``cells`` a row's; nothing when there are no rows."""
    if not rows:
        return
    out = out or console()
    out.print(Text(title, style="bold"))
    table = _table()
    for name in columns:
        table.add_column(name)
    for r in rows:
        table.add_row(*cells(r))
    out.print(table)


def _decided_by(row: JsonObject) -> str:
    """Who did it, and the explicit word it was done on when it went past a rule (``own request``)."""
    by = str(row.get("actor") or "(not recorded)")
    if row.get("override"):  # decided past a rule, on the host's explicit word
        by += f" ({row['override']})"
    return by


def print_acts(rows: list[JsonObject], out: Console | None = None) -> None:
    """Every act on the instance, oldest first: what, by whom (and on what explicit word), when, why."""
    _print_section(rows, out, "acts", ("act", "by", "at", "what", "reason"), _act_cells)


def _act_cells(r: JsonObject) -> tuple[RenderableType, ...]:
    what = r.get("detail") or ", ".join(r.get("fields", ()))
    return r["act"], _decided_by(r), r["at"], what, r.get("reason") or ""


def print_failed_runs(rows: list[JsonObject], out: Console | None = None) -> None:
    """Executor runs that failed, oldest first: the hook, when, what the person read, and the fault."""
    columns = ("hook", "at", "attempt", "said", "fault")
    _print_section(rows, out, "executor runs that failed", columns, _failed_run_cells)


def _failed_run_cells(r: JsonObject) -> tuple[RenderableType, ...]:
    fault = Text(r.get("detail") or "", style="red")
    return r["hook"], r["at"], str(r["attempts"]), r.get("message") or "", fault


def print_instances(rows: list[JsonObject], out: Console | None = None) -> None:
    _print_listing(rows, out, "no instances", "answered", _instance_cells)


def _instance_cells(r: JsonObject) -> tuple[Text, str]:
    status = _status(r["status"])
    if r.get("closed_reason"):
        status.append(f" ({r['closed_reason']})", style="dim")
    return status, str(r["answered"])


def print_found(rows: list[JsonObject], out: Console | None = None) -> None:
    """``formctl find``: one line per instance, with what matched."""
    _print_listing(rows, out, "nothing found", "matched", _found_cells)


def _found_cells(r: JsonObject) -> tuple[Text, str]:
    matched = [f"{f}: {value_text(r['values'][f])}" if f in r["values"] else f for f in r["matched"]]
    return _status(r["status"]), "; ".join(matched)


def _print_listing(
    rows: list[JsonObject],
    out: Console | None,
    nothing: str,
    column: str,
    cells: Callable[[JsonObject], tuple[Text, str]],
) -> None:
    """One line per instance: its id, form, subject, then ``cells`` (its status and ``column``), then
    when it was updated; ``nothing`` when there are none."""
    out = out or console()
    if not rows:
        out.print(Text(nothing, style="dim"))
        return
    table = _table()
    for name in ("id", "form", "subject", "status", column, "updated"):
        table.add_column(name, no_wrap=name in ("id", "updated"))
    for r in rows:
        table.add_row(r["instance_id"], r["form"], r["subject"], *cells(r), r["updated_at"])
    out.print(table)


def print_export(data: JsonObject, labels: dict[str, str], out: Console | None = None) -> None:
    out = out or console()
    head = Text()
    head.append(f"{data['form']} v{data['version']}", style="bold")
    head.append(f"  {data['instance_id']}  {data['subject']}  ", style="dim")
    head.append_text(_status(data["status"]))
    out.print(head)
    table = _table()
    for name in ("field", "label", "value"):
        table.add_column(name)
    for key, value in data["values"].items():
        table.add_row(key, labels.get(key, key), value_text(value))
    out.print(table)
    if data["held"]:
        # A heading line, not the table's title: a title wraps to the table's width, which
        # split this one over two lines when the values were short.
        out.print(Text("held (not applicable now, kept)", style="bold"))
        held = _table()
        for name in ("field", "label", "value"):
            held.add_column(name)
        for key, value in data["held"].items():
            held.add_row(key, labels.get(key, key), Text(value_text(value), style="yellow"))
        out.print(held)


def print_store_report(report: JsonObject, out: Console | None = None) -> None:
    out = out or console()
    verdict = Text("ok", style="green") if report["ok"] else Text("problems found", style="red")
    read = (
        f"{report['revisions_read']} answer revision(s) read"  # a database store: no files
        if "revisions_read" in report
        else f"{report['files_checked']} file(s) read"
    )
    head = Text(f"{report['directory']}: {report['instances']} instance(s), {read} — ")
    head.append_text(verdict)
    out.print(head)
    for p in report["problems"]:
        out.print(Text(f"problem: {p['path']}: {p['message']}", style="red"))
    for note in report["notes"]:
        out.print(Text(f"note: {note}", style="dim"))
    if report.get("index_rebuilt"):
        out.print(Text("index rebuilt", style="dim"))
    elif not report["index_ok"]:
        out.print(Text("the index is out of date: run formctl store reindex", style="yellow"))


# --------------------------------------------------------------------------- tool activity (pure text)


def activity_line(
    tool: str,
    envelope: JsonObject,
    labels: dict[str, str],
    tool_input: JsonObject | None = None,
    *,
    reasons: bool = True,
) -> str:
    """One short line for what a tool call did, for the dim activity trail of the chat.

    ``saved Full name, Work email · held Miles driven · rejected Work email: Work email should be an
    email address, like name@example.com.``. Reads the envelope the model was given (docs/engine.md,
    'Tool results'), so the person sees what the model saw. Reads return "" (a status look is not
    worth a line). ``reasons=False`` (the chat) names a rejected field without the sentence, which
    the model's reply says: a rejection is said once.
    """

    def name(fid: str) -> str:
        return labels.get(fid, fid)

    if envelope.get("status") == "error":
        code = (envelope.get("data") or {}).get("code")
        if code in (None, "form_definition_error"):  # the form's own bug: the host reads it with --debug
            return f"{tool.removeprefix('form_')} failed: a problem in the form itself"
        if not reasons:
            return f"{tool.removeprefix('form_')} failed"
        return f"{tool.removeprefix('form_')} failed: {envelope.get('message', '')}"
    data = envelope.get("data") or {}
    parts: list[str] = []
    action = (tool_input or {}).get("action", "set") if tool == "form_revise" else None
    if tool == "form_start":
        parts.append(f"started {data.get('name') or data.get('form', '')}".rstrip())
    if tool == "form_abandon":
        parts.append(f"abandoned {data.get('instance_id', '')}".rstrip())
    if action in ("undo", "redo", "retract"):
        field = (tool_input or {}).get("field")
        verb = {"undo": "undid", "redo": "redid", "retract": "withdrew"}[action]
        parts.append(f"{verb} {name(field)}" if field else verb)
    if data.get("captured"):
        verb = "corrected" if tool == "form_revise" else "saved"
        parts.append(f"{verb} " + ", ".join(name(f) for f in data["captured"]))
    if data.get("held"):
        parts.append("held " + ", ".join(name(f) for f in data["held"]))
    for r in data.get("rejected") or []:
        parts.append(f"rejected {name(r['field'])}: {r['message']}" if reasons else f"rejected {name(r['field'])}")
    for u in data.get("unknown_fields") or []:
        guess = f" (did you mean {', '.join(u['did_you_mean'])}?)" if u.get("did_you_mean") else ""
        parts.append(f"no field {u['field']}{guess}")
    if tool in ("form_fill", "form_start", "form_revise") or parts:
        if data.get("blocked_on"):
            parts.append(f"waiting on {data['blocked_on']}")
        elif data.get("closed_reason"):
            parts.append(f"closed: {data['closed_reason']}")
        elif data.get("complete") and tool != "form_abandon":
            parts.append("complete")
    return " · ".join(p for p in parts if p)
