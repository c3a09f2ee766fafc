"""``formctl mcp``: any MCP client's agent runs formctl's forms (docs/mcp.md).

:mod:`.state` holds what is served (tools, resources, prompts of one subject) without the MCP
SDK; :mod:`.server` serves it over stdio with the SDK, which is imported only when the
command runs (``import formctl`` and ``formctl list`` never load it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict, Unpack

if TYPE_CHECKING:  # pragma: no cover
    from formctl.cli.mcp.state import FormService

__all__ = ["ServeOptions", "open_service", "run_mcp"]


class ServeOptions(TypedDict, total=False):
    """What ``formctl mcp`` serves besides the subject (its options; each may be left out)."""

    store: str | None  # --store: a folder or a DSN (None: FORMCTL_STORE, else the default folder)
    forms: str | None  # --forms: the registry's folder
    as_host: bool  # --as-host: offer form_resolve too
    program: str | None  # --program: a scope's or a program's key, or None


def open_service(subject: str, **options: Unpack[ServeOptions]) -> FormService:
    """The :class:`~formctl.cli.mcp.state.FormService` for ``subject`` over a store and a forms folder;
    with ``program`` (a scope's key or a program's, started when the subject has none), the goal
    tools and the program resource too."""
    from formctl.cli.mcp.state import MCP_SOURCE, FormService
    from formctl.cli.workspace import default_subject, open_registry, open_store
    from formctl.forms.runner import FormRunner

    forms, program = options.get("forms"), options.get("program")
    registry = open_registry(forms)
    adapter = open_store(options.get("store"))
    runner = FormRunner(adapter, registry=registry, subject=subject, actor="agent", source=MCP_SOURCE)
    # The host's runner exists only with --as-host: without it, no code path can resolve a checkpoint.
    as_host = options.get("as_host", False)
    host = FormRunner(adapter, registry=registry, subject=subject, actor="host", source=MCP_SOURCE) if as_host else None
    goals = None
    if program is not None:
        from formctl.agent.goal_tools import GoalTools
        from formctl.cli.program_scope import ProgramConversation, open_program

        conversation = ProgramConversation(
            subject, program, forms, actor="agent", starter=default_subject(), source=MCP_SOURCE
        )
        try:
            goals = GoalTools(open_program(adapter, registry, conversation)[0])
        except BaseException:
            runner.close()
            raise
    return FormService(runner, host_runner=host, host_name=default_subject(), goals=goals)


def run_mcp(subject: str, **options: Unpack[ServeOptions]) -> int:
    """Serve ``subject``'s forms over stdio until the client hangs up. Returns the exit status."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        from formctl.errors import FormError

        raise FormError("formctl mcp needs the mcp package: pip install 'formctl[mcp]'.") from None
    from formctl.cli.mcp.server import serve_stdio

    service = open_service(subject, **options)
    try:
        serve_stdio(service)
    finally:
        service.runner.close()
    return 0
