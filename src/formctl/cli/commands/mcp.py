"""``mcp``: serve a subject's forms to any MCP client over stdio (formctl.cli.mcp, imported when it runs)."""

from typing import Optional

import typer

from formctl.cli.base import _Command, _example, app
from formctl.cli.options import FormsOpt, StoreOpt


@app.command(
    cls=_Command,
    epilog=_example(
        "formctl mcp --subject dana",
        "formctl mcp --subject dana --store postgresql://forms@db/forms --as-host",
        "formctl mcp --subject firm:1/matter:2 --program client-intake",
    ),
)
def mcp(
    subject: Optional[str] = typer.Option(
        None, "--subject", envvar="FORMCTL_SUBJECT", help="Whose forms the client may reach (fixed) [required]."
    ),
    store: StoreOpt = None,
    forms: FormsOpt = None,
    as_host: bool = typer.Option(
        False, "--as-host", help="Also offer form_resolve: the client may answer checkpoints as a host."
    ),
    program: Optional[str] = typer.Option(
        None,
        "--program",
        metavar="KEY",
        help="Also offer the subject's goal program (goal_status, goal_update, formctl://program).",
    ),
) -> None:
    """Serve the subject's forms to an MCP client over stdio.

    An agent that speaks the Model Context Protocol (a desktop or coding assistant, an IDE
    agent, another framework) gets the form_* tools the chat's model has, the forms and the
    subject's instances as resources, and a prompt per form. The subject is fixed here: no
    tool argument reaches another subject's forms. A value for a field only the person may
    give is confirmed with them through the client (MCP elicitation), or not stored. Needs
    pip install 'formctl[mcp]'; stdout carries the protocol.

    With --program KEY (a scope's key or a program's, as run --program takes it; started when
    the subject has none) the client also gets goal_status and goal_update, the program as the
    resource formctl://program, and the goals line after every tool result.
    """
    from formctl.cli.mcp import run_mcp

    if subject is None or not subject.strip():
        typer.echo("error: formctl mcp needs --subject (whose forms the client may reach).", err=True)
        raise typer.Exit(2)
    if program is not None and not program.strip():
        typer.echo("error: --program needs a value.", err=True)
        raise typer.Exit(2)
    code = run_mcp(subject.strip(), store=store, forms=forms, as_host=as_host, program=program)
    if code:
        raise typer.Exit(code)
