"""The support desk's reads across instances: ``find`` (anyone, by what they said) and ``stats``
(how a form is doing). Both ask the runner; the store answers from its index or in SQL."""

from typing import Optional

import typer

from formctl.cli.base import _Command, _example, _fail, _print_json, app
from formctl.cli.options import FormsOpt, JsonOpt, StoreOpt, _complete_form, _complete_status


@app.command(
    cls=_Command,
    epilog=_example(
        'formctl find "maria lopez"',
        "formctl find lopez@example --form client-intake --status active",
        "formctl find C10442 --json",
    ),
)
def find(
    text: str = typer.Argument(..., metavar="TEXT", help="A name, part of an email, a client number..."),
    form: Optional[str] = typer.Option(None, "--form", help="Only this form's.", autocompletion=_complete_form),
    status: Optional[str] = typer.Option(
        None, "--status", help="active, ready, awaiting, complete or abandoned.", autocompletion=_complete_status
    ),
    limit: int = typer.Option(50, "--limit", min=1, help="At most this many, most recent first."),
    store: StoreOpt = None,
    forms: FormsOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Find instances by subject or by an answer.

    Every word of TEXT must be part of the subject or of one answer in force, accents and
    case aside: "maria lopez" finds María López by her name or her email. Most recent first,
    with the form, status, subject and the field that matched. Sensitive fields are never
    searched or shown.
    """
    from formctl.cli.workspace import open_runner
    from formctl.forms.instance import INSTANCE_STATUSES

    if status is not None and status not in INSTANCE_STATUSES:
        _fail(f'Unknown status "{status}": use one of {", ".join(INSTANCE_STATUSES)}.', 2)
    runner = open_runner(store, forms)
    found = [f.to_dict() for f in runner.find(text, form_id=form, status=status, limit=limit)]
    if as_json:
        _print_json({"query": text, "found": found})
        return
    from formctl.cli import render

    render.print_found(found)


@app.command(
    cls=_Command,
    epilog=_example(
        "formctl stats travel-claim",
        "formctl stats travel-claim --since 2026-11-01 --json",
        "formctl stats travel-claim --html claims.html",
    ),
)
def stats(
    form: str = typer.Argument(..., metavar="FORM", help="Form id.", autocompletion=_complete_form),
    since: Optional[str] = typer.Option(
        None, "--since", metavar="DATE", help="Only instances started on or after DATE."
    ),
    html_file: Optional[str] = typer.Option(
        None, "--html", metavar="FILE", help="Also write the report as one HTML page."
    ),
    store: StoreOpt = None,
    forms: FormsOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """How a form is doing: where people stop, what is refused, how long it takes.

    Started, completed, abandoned and waiting; the completion rate; median and p90 time to
    complete; where open and abandoned instances stopped, by step; per field how often an
    answer was refused (and why), corrected or undone; how long checkpoints waited for a
    host, by outcome.
    """
    from formctl.cli.workspace import conversation_models, open_runner

    runner = open_runner(store, forms)
    data = runner.stats(form, since=_date(since), model_of=conversation_models(store))
    if html_file is not None:
        from formctl.cli.stats_view import page
        from formctl.files import replace_text

        try:
            replace_text(html_file, page(data))
        except OSError as exc:
            _fail(f"Cannot write {html_file}: {exc.strerror or exc}.")
    if as_json:
        _print_json(data)
        return
    from formctl.cli.stats_view import print_stats

    print_stats(data)
    if html_file is not None:
        typer.echo(f"wrote {html_file}")


def _date(text: Optional[str]) -> Optional[str]:
    """``--since``: an ISO date (or date and time), as the ISO text instances' times compare with."""
    if text is None:
        return None
    from datetime import date, datetime

    try:
        if len(text) == 10:
            return date.fromisoformat(text).isoformat()
        return datetime.fromisoformat(text).isoformat()
    except ValueError:
        _fail(f'--since expects a date like 2026-11-01, got "{text}".', 2)
