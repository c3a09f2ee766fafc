"""The ``formctl`` typer app itself: its error handling, ``--debug`` and ``--version``.

Errors: every command runs inside :class:`_Group.invoke`, which turns a
:class:`~formctl.errors.FormError` (and any other unexpected exception) into one
line on stderr and exit status 1. ``--debug`` (anywhere on the line) or ``FORMCTL_DEBUG=1``
shows the traceback instead. Usage errors are typer's own (exit status 2).
"""

import json
import os
import sys
from typing import TYPE_CHECKING, NoReturn, Optional, TextIO

import typer
from typer.models import Default

from formctl.cli._lean_typer import LeanCommand as _Command  # noqa: F401  (the commands' class)

__all__ = ["_Command"]  # and the names below, which the commands import by name
from formctl.cli._lean_typer import LeanGroup

if TYPE_CHECKING:
    from typer._click.core import Context as ClickContext  # see cli/_lean_typer.py


def _asked_by_environment() -> bool:
    return os.environ.get("FORMCTL_DEBUG", "") not in ("", "0")


_debug = _asked_by_environment()


def debugging() -> bool:
    """Whether tracebacks are shown instead of one-line errors (``--debug``, ``FORMCTL_DEBUG=1``)."""
    return _debug


def set_debugging(on: bool = True) -> None:
    """``--debug`` on (or back off): tracebacks instead of one-line errors, and formctl's log on stderr."""
    global _debug
    _debug = on
    if on:
        _log_to_stderr()


def _log_to_stderr() -> None:
    """Under ``--debug``, formctl's own log (an executor's fault, with its traceback) goes to stderr."""
    import logging

    class DebugHandler(logging.StreamHandler):  # type: ignore[type-arg]
        """Writes to sys.stderr as it is at the time, and only while debugging."""

        @property
        def stream(self) -> TextIO:
            return sys.stderr

        @stream.setter
        def stream(self, value: TextIO) -> None:
            pass

        def emit(self, record: logging.LogRecord) -> None:
            if _debug:
                super().emit(record)

        def format(self, record: logging.LogRecord) -> str:
            from formctl.redact import redact

            return redact(super().format(record))  # a record may quote a value or a message

    logger = logging.getLogger("formctl")
    if not any(type(h).__name__ == "DebugHandler" for h in logger.handlers):
        handler = DebugHandler()
        handler.setFormatter(logging.Formatter("debug: %(name)s: %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)


class _Group(LeanGroup):
    """Turns errors from any command into one line on stderr and a non-zero exit."""

    def parse_args(self, ctx: "ClickContext", args: list[str]) -> list[str]:
        ctx.meta["formctl.args"] = list(args)  # the command line as given, for the error hints
        return super().parse_args(ctx, args)

    def invoke(self, ctx: "ClickContext") -> object:
        from formctl.cli.workspace import closing_stores

        args = ctx.meta.get("formctl.args", [])
        try:
            with closing_stores():  # what the command opened is closed as it ends
                return super().invoke(ctx)
        except KeyboardInterrupt:
            raise typer.Exit(130) from None
        except Exception as exc:
            if type(exc).__module__.startswith(("typer", "click")) or _debug:
                raise  # typer's own exits and usage errors, or --debug: let them through
            from formctl.errors import FormError

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
    it can't be continued, but nothing is lost, and export reads it as it is."""
    from formctl.cli.workspace import is_instance_id

    iid = next((a for a in args if isinstance(a, str) and is_instance_id(a)), "ID")
    return (
        f" It can't be continued; its answers are kept: formctl export {iid} shows them, "
        f"formctl abandon {iid} --reason REASON closes it."
    )


def _first_line(exc: BaseException) -> str:
    """An exception's message cut to its first line: errors here are one line (pydantic's
    schema errors run to a paragraph and a URL)."""
    return (str(exc).strip().splitlines() or [""])[0]


def _fail(message: str, code: int = 1) -> NoReturn:
    sys.stderr.write(f"error: {message}\n")
    raise typer.Exit(code)


def command_group(
    name: str, help: str, epilog: str, context_settings: Optional[dict[str, list[str]]] = None
) -> typer.Typer:
    """A group of commands (``formctl``, ``formctl store``, ...) as every group of formctl's is set up:
    plain help (no rich markup), no pretty tracebacks, and its help when run with no command."""
    return typer.Typer(
        name=name,
        cls=_Group,
        help=help,
        rich_markup_mode=None,
        pretty_exceptions_enable=False,
        no_args_is_help=True,
        epilog=epilog,
        # Default(None), typer's own "not given": a group given none keeps the settings it inherits
        context_settings=Default(None) if context_settings is None else context_settings,
    )


app = command_group(
    "formctl",
    "Run conversational forms in a terminal: a model collects typed values, every answer kept.",
    "\b\nExamples:\n  formctl run travel-claim\n  formctl instances --status awaiting\n"
    "  formctl resolve form_lx2k9_ab12cd",
    context_settings={"help_option_names": ["-h", "--help"]},
)
store_app = command_group(
    "store",
    "Set up, check, copy or repair the store (a folder, or a PostgreSQL database).",
    "\b\nExamples:\n  formctl store check --store ./.formctl\n  formctl store reindex\n  formctl store repair form_mx230koo_lwhzx5 --as 'Sam Jones'",
)
app.add_typer(store_app)


def _example(*lines: str) -> str:
    # "\b" stops click from re-wrapping the example lines.
    return "\b\nExample:\n" + "\n".join(f"  {line}" for line in lines)


def _print_json(data: object) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


def _print_version(value: bool) -> None:
    if value:
        from formctl import __version__

        typer.echo(f"formctl {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks instead of one-line errors."),
    version: bool = typer.Option(
        False, "--version", help="Print the version and exit.", is_eager=True, callback=_print_version
    ),
    store: Optional[str] = typer.Option(
        None,
        "--store",
        metavar="DIR",
        help="Store folder, or a postgresql:// DSN, for the command that follows (as FORMCTL_STORE does).",
    ),
) -> None:
    # --debug (or FORMCTL_DEBUG=1) holds for this command only: a host that runs several commands
    # in one process gets the next one's errors as one line again, as a shell's next command does.
    # FORMCTL_DEBUG is read as the command runs, not only when this module was imported: a host
    # may set it between two commands.
    was = _debug
    if debug or _debug or _asked_by_environment():
        set_debugging()
    ctx.call_on_close(lambda: set_debugging(was))
    if store is not None:
        # ``formctl --store X instances``: the command's own --store still wins, and X wins over
        # the FORMCTL_STORE the shell had; put back when the command is done.
        had = os.environ.get("FORMCTL_STORE")
        os.environ["FORMCTL_STORE"] = store

        def restore() -> None:
            if had is None:
                os.environ.pop("FORMCTL_STORE", None)
            else:
                os.environ["FORMCTL_STORE"] = had

        ctx.call_on_close(restore)
