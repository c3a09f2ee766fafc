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
        "formctl find C-10442 --json",
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
