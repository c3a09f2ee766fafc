"""The person's ``/commands`` in a chat: reads of the form, and host writes as ``actor="person"``.

:class:`Commands` is mixed into :class:`~formctl.cli.chat.session.ChatSession`, whose runners,
compiled form and recorder it uses.
"""

from __future__ import annotations

import shlex
from typing import Any

from formctl.cli import render
from formctl.cli.workspace import default_subject
from formctl.errors import FormError, HostOnlyError, InvalidArgumentError, NotFoundError

HELP = (
    ("/status", "the open step, in full"),
    ("/inspect [STEP|FIELD]", "the outline, or one step or field"),
    ("/history FIELD", "every answer given to a field"),
    ("/undo [FIELD]", "take back the last answer (or a field's)"),
    ("/redo [FIELD]", "put an undone answer back"),
    ("/resolve [--fail REASON | --reason WHY]", "answer the checkpoint the form waits on (--as-host only)"),
    ("/abandon REASON", "close the form without finishing (answers are kept)"),
    ("/usage", "the tokens this conversation has cost so far"),
    ("/help", "this list"),
    ("/quit", "leave; formctl resume ID comes back here"),
)


def help_table() -> Any:
    """The ``/commands`` as a rich table: one column for the command, one for what it does."""
    from rich.table import Table

    table = Table(box=None, show_header=False, pad_edge=False, padding=(0, 2, 0, 0))
    table.add_column("command", no_wrap=True, style="bold")
    table.add_column("what it does")
    for command, what in HELP:
        table.add_row(command, what)
    return table


class Commands:
    """The ``/commands`` of a chat session."""

    _err: Any = None  # where the running command's errors go (see command)

    def command(self, line: str, out: Any, err: Any = None) -> bool:
        """Run a ``/command``, printing to ``out`` (a rich console) and its errors to ``err``
        (another, stderr in a pipe; ``out`` if not given). Returns False to leave."""
        err = self._err = err or out
        name, _, rest = line[1:].strip().partition(" ")
        name, rest = name.lower(), rest.strip()
        if name in ("quit", "exit", "q"):
            return False
        if name in ("help", "?", ""):
            out.print(help_table())
            return True
        handler = getattr(self, f"_cmd_{name}", None)
        if handler is None:
            err.print(f"Unknown command /{name}; /help lists them.", style="red", markup=False)
            return True
        try:
            handler(rest, out)
        except FormError as exc:
            err.print(f"error: {exc.message}", style="red", markup=False, highlight=False)
        return True

    def _need_instance(self) -> str:
        if self.instance_id is None:
            raise NotFoundError("The form has not been started yet.")
        return self.instance_id

    def _cmd_usage(self, rest: str, out: Any) -> None:
        out.print(
            self.usage_line() or f"No tokens: the {self.model.name} model runs offline.", markup=False, highlight=False
        )

    def _cmd_status(self, rest: str, out: Any) -> None:
        render.print_view(self.person.status(instance_id=self._need_instance()), out)

    def _cmd_inspect(self, rest: str, out: Any) -> None:
        instance_id = self._need_instance()
        if not rest:
            view = self.person.inspect("outline", instance_id=instance_id)
        elif self.compiled.resolve_step(rest) is not None:
            view = self.person.inspect("step", rest, instance_id=instance_id)
        elif self.compiled.resolve_field(rest) is not None:
            view = self.person.inspect("field", rest, instance_id=instance_id)
        else:
            raise NotFoundError(f'No step or field "{rest}" on this form.')
        render.print_view(view, out)

    def _cmd_history(self, rest: str, out: Any) -> None:
        instance_id = self._need_instance()
        if rest:
            histories = [self.person.history(rest, instance_id=instance_id).to_dict()]
        else:
            instance = self.person.open_instance(instance_id)
            histories = [
                self.person.history(f.id, instance_id=instance_id).to_dict()
                for f in self.compiled.fields
                if f.id in instance.entries
            ]
        render.print_histories(histories, out)

    def _cmd_undo(self, rest: str, out: Any) -> None:
        self._move("undo", rest or None, out)

    def _cmd_redo(self, rest: str, out: Any) -> None:
        self._move("redo", rest or None, out)

    def _move(self, action: str, field: str | None, out: Any) -> None:
        """``/undo`` and ``/redo``: move the cursor, then say which field now holds what (the result says)."""
        instance_id = self._need_instance()
        result = getattr(self.person, action)(field, instance_id=instance_id)
        self._host(action, result, field=field)
        moved = result.moved
        if result.unknown or moved is None:
            envelope = {"status": "success", "data": result.to_dict()}
            line = render.activity_line("form_revise", envelope, self.labels())
            if result.unknown:  # a field that isn't there: an error line (stderr in a pipe)
                self._err.print(line, style="red", markup=False, highlight=False)
                return
        else:
            line = f"{'undid' if action == 'undo' else 'redid'} {moved.label} → {render.moved_text(moved)}"
        out.print(line, style="dim", markup=False, highlight=False)

    def _cmd_resolve(self, rest: str, out: Any) -> None:
        instance_id = self._need_instance()
        if not self.options.as_host:
            # Resolving is the host's decision, never the person's own (README, "Who may do what").
            instance = self.person.open_instance(instance_id)
            what = f'"{instance.blocked_on}"' if instance is not None and instance.blocked_on else "a checkpoint"
            raise HostOnlyError(
                f"Only a host can resolve {what}: from a host's terminal, run formctl resolve "
                f"{instance_id} (or --fail REASON). A form author trying the form can play the host "
                "with formctl run FORM --as-host."
            )
        fail = reason = None
        if rest:
            words = shlex.split(rest)
            if words[0] not in ("--fail", "--reason") or len(words) < 2:
                raise InvalidArgumentError("Use /resolve, /resolve --reason WHY, or /resolve --fail REASON.")
            if words[0] == "--fail":
                fail = " ".join(words[1:])
            else:
                reason = " ".join(words[1:])
        actor = default_subject()
        result = self.person.resolve_checkpoint(instance_id, fail=fail, actor=actor, reason=reason)
        self._host("resolve", result, fail=fail, actor=actor, reason=reason)
        what = f"rejected: {fail}" if fail else "approved"
        out.print(
            f"checkpoint {what} · {self.status_lines(self.person)[0]}", style="dim", markup=False, highlight=False
        )

    def _cmd_abandon(self, rest: str, out: Any) -> None:
        instance_id = self._need_instance()
        if not rest:
            raise InvalidArgumentError("Say why: /abandon REASON.")
        instance = self.person.abandon(rest, instance_id=instance_id)
        self._host("abandon", instance, reason=rest)
        out.print(f"abandoned {instance.id}: {rest} (answers are kept)", style="dim", markup=False, highlight=False)

    def _host(self, action: str, result: Any, **args: Any) -> None:
        if self.recorder is not None:
            self.recorder.host(action, result=result, **args)
