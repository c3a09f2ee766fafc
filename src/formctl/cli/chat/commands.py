"""The person's ``/commands`` in a chat: reads of the form, and host writes as ``actor="person"``.

One table, :data:`COMMANDS`, says every command: its names, its usage and what it does (which
``/help`` prints) and the function that runs it. :class:`ChatCommands` is the chat session's
collaborator that looks a line up in the table and runs it; it reaches the session only through
:class:`CommandHost`, the few things a command needs of it. Adding a command is one function
and one row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from formctl.cli import render
from formctl.cli.workspace import default_subject
from formctl.errors import FormError, InvalidArgumentError, NotFoundError

if TYPE_CHECKING:  # pragma: no cover
    from rich.console import Console
    from rich.table import Table

    from formctl.agent.models.base import ChatModel
    from formctl.cli.chat.opening import ChatRecorder
    from formctl.cli.chat.options import ChatOptions
    from formctl.forms.compile import CompiledForm
    from formctl.forms.runner import FormRunner


class CommandHost(Protocol):
    """What a ``/command`` uses of the chat session."""

    @property
    def person(self) -> FormRunner: ...  # the runner acting as the person (actor="person")
    @property
    def compiled(self) -> CompiledForm: ...  # the chat's compiled form
    @property
    def options(self) -> ChatOptions: ...  # ``as_host``
    @property
    def recorder(self) -> ChatRecorder | None: ...  # the transcript recorder, or None
    @property
    def model(self) -> ChatModel: ...
    @property
    def instance_id(self) -> str | None: ...
    def usage_line(self) -> str | None: ...
    def labels(self, def_id: str | None = None) -> dict[str, str]: ...
    def status_lines(self, runner: FormRunner | None = None) -> list[str]: ...


@dataclass(frozen=True)
class Call:
    """One run of a command: the session, the words after the command's name, and where to print
    (``err`` is stderr in a pipe, ``out`` in a terminal)."""

    host: CommandHost
    rest: str
    out: Console
    err: Console

    def instance_id(self) -> str:
        if self.host.instance_id is None:
            raise NotFoundError("The form has not been started yet.")
        return self.host.instance_id

    def said(self, line: str) -> None:
        self.out.print(line, style="dim", markup=False, highlight=False)

    def host_write(self, action: str, result: object, **args: str | None) -> None:
        """A host write made from the chat goes into the transcript being recorded, if any."""
        if self.host.recorder is not None:
            self.host.recorder.host(action, result=result, **args)


@dataclass(frozen=True)
class Command:
    names: tuple[str, ...]  # the first is the one /help shows
    usage: str
    what: str
    run: Callable[[Call], None] | None  # None: leave the chat


def _status(call: Call) -> None:
    render.print_view(call.host.person.status(instance_id=call.instance_id()), call.out)


def _inspect(call: Call) -> None:
    instance_id, rest, host = call.instance_id(), call.rest, call.host
    if not rest:
        view = host.person.inspect("outline", instance_id=instance_id)
    elif host.compiled.resolve_step(rest) is not None:
        view = host.person.inspect("step", rest, instance_id=instance_id)
    elif host.compiled.resolve_field(rest) is not None:
        view = host.person.inspect("field", rest, instance_id=instance_id)
    else:
        raise NotFoundError(f'No step or field "{rest}" on this form.')
    render.print_view(view, call.out)


def _history(call: Call) -> None:
    instance_id, person = call.instance_id(), call.host.person
    if call.rest:
        histories = [person.history(call.rest, instance_id=instance_id).to_dict()]
    else:
        instance = person.open_instance(instance_id)
        if instance is None:
            raise NotFoundError(f'No form instance "{instance_id}".')
        histories = [
            person.history(f.id, instance_id=instance_id).to_dict()
            for f in call.host.compiled.fields
            if f.id in instance.entries
        ]
    render.print_histories(histories, call.out)


def _move(action: str) -> Callable[[Call], None]:
    """``/undo`` and ``/redo``: move the cursor, then say which field now holds what (the result says)."""

    def run(call: Call) -> None:
        instance_id, field = call.instance_id(), call.rest or None
        person = call.host.person
        result = (person.undo if action == "undo" else person.redo)(field, instance_id=instance_id)
        call.host_write(action, result, field=field)
        moved = result.moved
        if result.unknown or moved is None:
            envelope = {"status": "success", "data": result.to_dict()}
            line = render.activity_line("form_revise", envelope, call.host.labels())
            if result.unknown:  # a field that isn't there: an error line (stderr in a pipe)
                call.err.print(line, style="red", markup=False, highlight=False)
                return
        else:
            line = f"{'undid' if action == 'undo' else 'redid'} {moved.label} → {render.moved_text(moved)}"
        call.said(line)

    return run


def _resolve(call: Call) -> None:
    # The role checks (a host only; nobody decides their own request) and the parser are
    # formctl resolve's own: formctl.cli.host.
    from formctl.cli import host as hosting

    instance_id, host = call.instance_id(), call.host
    actor = default_subject()
    result, options = hosting.chat_resolve(
        host.person, instance_id, call.rest, as_host=host.options.as_host, actor=actor
    )
    fail, reason = options["fail"], options["reason"]
    call.host_write("resolve", result, fail=fail, actor=actor, reason=reason)
    what = f"rejected: {fail}" if fail else "approved"
    call.said(f"checkpoint {what} · {host.status_lines(host.person)[0]}")


def _withdraw(call: Call) -> None:
    """The person takes back a request waiting for approval (runner.withdraw: recorded)."""
    instance_id, host = call.instance_id(), call.host
    result = host.person.withdraw(instance_id, reason=call.rest or None)
    call.host_write("withdraw", result, reason=call.rest or None)
    call.said(f"request withdrawn: your answers can be corrected · {host.status_lines(host.person)[0]}")


def _abandon(call: Call) -> None:
    instance_id = call.instance_id()
    if not call.rest:
        raise InvalidArgumentError("Say why: /abandon REASON.")
    instance = call.host.person.abandon(call.rest, instance_id=instance_id)
    call.host_write("abandon", instance, reason=call.rest)
    call.said(f"abandoned {instance.id}: {call.rest} (answers are kept)")


def _usage(call: Call) -> None:
    line = call.host.usage_line() or f"No tokens: the {call.host.model.name} model runs offline."
    call.out.print(line, markup=False, highlight=False)


def _help(call: Call) -> None:
    call.out.print(help_table())


COMMANDS: tuple[Command, ...] = (
    Command(("status",), "/status", "the open step, in full", _status),
    Command(("inspect",), "/inspect [STEP|FIELD]", "the outline, or one step or field", _inspect),
    Command(("history",), "/history FIELD", "every answer given to a field", _history),
    Command(("undo",), "/undo [FIELD]", "take back the last answer (or a field's)", _move("undo")),
    Command(("redo",), "/redo [FIELD]", "put an undone answer back", _move("redo")),
    Command(
        ("resolve",),
        "/resolve [--fail REASON | --reason WHY]",
        "answer the checkpoint the form waits on (--as-host only)",
        _resolve,
    ),
    Command(("withdraw",), "/withdraw [REASON]", "take back a request waiting for approval, to correct it", _withdraw),
    Command(("abandon",), "/abandon REASON", "close the form without finishing (answers are kept)", _abandon),
    Command(("usage",), "/usage", "the tokens this conversation has cost so far", _usage),
    Command(("help", "?", ""), "/help", "this list", _help),
    Command(("quit", "exit", "q"), "/quit", "leave; formctl resume ID comes back here", None),
)

_BY_NAME: dict[str, Command] = {name: command for command in COMMANDS for name in command.names}

HELP = tuple((command.usage, command.what) for command in COMMANDS)


def help_table() -> Table:
    """The ``/commands`` as a rich table: one column for the command, one for what it does."""
    from rich.table import Table

    table = Table(box=None, show_header=False, pad_edge=False, padding=(0, 2, 0, 0))
    table.add_column("command", no_wrap=True, style="bold")
    table.add_column("what it does")
    for usage, what in HELP:
        table.add_row(usage, what)
    return table


class ChatCommands:
    """The chat session's ``/commands``: looks a line up in :data:`COMMANDS` and runs it."""

    def __init__(self, host: CommandHost) -> None:
        self.host = host

    def run(self, line: str, out: Console, err: Console | None = None) -> bool:
        """Run a ``/command``, printing to ``out`` (a rich console) and its errors to ``err``
        (another, stderr in a pipe; ``out`` if not given). Returns False to leave."""
        err = err or out
        name, _, rest = line[1:].strip().partition(" ")
        command = _BY_NAME.get(name.lower())
        if command is None:
            err.print(f"Unknown command /{name.lower()}; /help lists them.", style="red", markup=False)
            return True
        if command.run is None:
            return False
        try:
            command.run(Call(self.host, rest.strip(), out, err))
        except FormError as exc:
            err.print(f"error: {exc.message}", style="red", markup=False, highlight=False)
        return True
