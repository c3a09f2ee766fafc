"""The ``formctl`` command: a typer app whose commands open the store and registry on demand.

Start-up is a benchmark (``benchmarks/startup.py``): ``formctl --help`` and ``formctl list``
should cost at most about 3x ``python -c pass``. So this module imports only typer and
the standard library at the top; each command imports what it needs (the engine,
pydantic, rich, prompt-toolkit, anthropic) when it runs. Typer is told not to use rich
(``rich_markup_mode=None``, no pretty exceptions): its rich help costs ~60 ms to import
and ``--help`` would pay it on every call. Parameters skip typer's pydantic coercion
(``_lean_typer.py``); :func:`main` builds only the command being run; and the command
modules have no ``from __future__ import annotations``, because typer evaluates every
parameter's type hints at start-up and each string annotation costs a compile.

The app and its error handling are in :mod:`formctl.cli.base`, the shared options in
:mod:`formctl.cli.options`, the commands in :mod:`formctl.cli.commands` (definitions, the
chat, reads, host writes, the store); ``replay`` is :mod:`formctl.transcripts.cli`'s.

Exit statuses: 0 ok; 1 an error, a definition that does not compile, a store with
problems, or a write that rejected some of its values (the rest were saved); 2 usage;
130 interrupted.
"""

import os
import signal
import sys
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from types import FrameType, TracebackType

    from typer.models import TyperInfo


def _interrupted_while_starting(signum: int, frame: "Optional[FrameType]") -> None:
    """Ctrl-C before the command runs: nothing has been read or written yet, so leave at once,
    with the status of an interrupt and no traceback from whichever import it landed in."""
    os._exit(130)


# First, before the imports that take most of the start-up time. Only for the console script
# (or ``python -m formctl``, ``python -m formctl.cli.app``), never for a program that merely
# imports this module, and not when whoever started us set Ctrl-C aside. main() hands Ctrl-C back
# before the command runs.
_ARGV0 = sys.argv[0] if sys.argv else ""
_CONSOLE_SCRIPT = (
    __name__ == "__main__"
    or os.path.basename(_ARGV0) == "formctl"
    or _ARGV0.endswith(os.path.join("formctl", "__main__.py"))
)
if _CONSOLE_SCRIPT and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    signal.signal(signal.SIGINT, _interrupted_while_starting)

from formctl.cli import collector  # noqa: E402

if _CONSOLE_SCRIPT:
    collector.hold()  # no cyclic collection while start-up builds what lives until exit (cli/collector.py)

import typer  # noqa: E402

# Imported for their commands, registered in the order --help lists them.
from formctl.cli import base  # noqa: E402
from formctl.cli import host as _host  # noqa: E402, F401, I001  (formctl resolve, after the host writes)
from formctl.cli.base import _Command, _Group, app  # noqa: E402
from formctl.cli.commands import chat, desk, forms, mcp, programs, reads, store, writes  # noqa: E402, F401
from formctl.cli.commands import eval as _eval  # noqa: E402, F401  (formctl eval; after the chat's commands)

__all__ = ["app", "main"]


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
    name = _named(args)
    if name is None or os.environ.get("_FORMCTL_COMPLETE"):
        return app
    from typer.main import get_command_name

    commands = [
        c
        for c in app.registered_commands
        if (c.name or get_command_name(c.callback.__name__ if c.callback is not None else "")) == name
    ]
    groups = [g for g in app.registered_groups if _group_name(g) == name]
    if len(commands) + len(groups) != 1:
        return app
    only = typer.Typer(
        name="formctl",
        cls=_Group,
        rich_markup_mode=None,
        pretty_exceptions_enable=False,
        no_args_is_help=True,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    only.registered_callback = app.registered_callback
    only.registered_commands = commands
    only.registered_groups = groups
    return only


def _group_name(info: "TyperInfo") -> object:
    name = info.name if isinstance(info.name, str) else None
    group = info.typer_instance
    return name or (group.info.name if group is not None else None)


# The commands that touch one instance, a listing or a form and end: they keep the collector
# held to the end (cli/collector.py). Any other command (a store copy, eval, replay, the MCP
# server, a program) lets it go before it runs; run and resume, chats, let it go when they
# first wait for the person's next line (cli/chat/plain.py).
_SHORT = frozenset(
    {
        "list",
        "check",
        "new",
        "instances",
        "inspect",
        "history",
        "why",
        "export",
        "fill",
        "undo",
        "redo",
        "retract",
        "submit",
        "abandon",
        "migrate",
        "reopen",
        "withdraw",
        "resolve",
        "run",
        "resume",
    }
)


def _named(args: list[str]) -> str | None:
    """The command named on the command line (the first word that is neither an option nor
    ``--store``'s value), or None."""
    return next((a for n, a in enumerate(args) if not a.startswith("-") and args[n - 1 : n] != ["--store"]), None)


def _redacted_traceback(kind: type[BaseException], exc: BaseException, tb: "Optional[TracebackType]") -> None:
    """Python's traceback for ``--debug``, with every secret written [secret] (formctl.redact)."""
    import traceback

    from formctl.redact import redact

    sys.stderr.write(redact("".join(traceback.format_exception(kind, exc, tb))))


def main(argv: list[str] | None = None) -> None:
    """The console script. ``--debug`` may appear anywhere before ``--``."""
    args = list(sys.argv[1:] if argv is None else argv)
    end = args.index("--") if "--" in args else len(args)
    was = base.debugging()  # --debug holds for this command only (see base._root)
    if "--debug" in args[:end]:
        args.remove("--debug")
        base.set_debugging()
    command = _only_the_command_run(args[:end])
    if _named(args[:end]) not in _SHORT and _named(args[:end]) is not None:
        collector.settled()
    try:
        if signal.getsignal(signal.SIGINT) is _interrupted_while_starting:
            signal.signal(signal.SIGINT, signal.default_int_handler)  # the command handles Ctrl-C itself
        command(args=args, prog_name="formctl")
    except KeyboardInterrupt:  # between here and the command: still nothing done
        sys.exit(130)
    except Exception:  # only under --debug does one get here: let through, its traceback without secrets
        if base.debugging():  # the interpreter prints it as the process ends (a host calling main handles it)
            sys.excepthook = _redacted_traceback
        raise
    finally:
        base.set_debugging(was)


if __name__ == "__main__":
    main()
