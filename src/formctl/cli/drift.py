"""Drift at the command line: an instance started on an older version of its form.

Such an instance reads ``stale`` (computed on every read, never stored) when the registered
version has no ``migrate`` to carry it forward. It can always be read (``instances``,
``inspect``, ``history``, ``export`` show its answers, marked stale), closed (``abandon``)
or moved: ``formctl migrate ID`` takes it to the registered version through the ordinary
commit cycle, keeping every answer that version accepts and listing the rest (their logs
stay stored, so ``history`` still shows them).

``formctl run`` and ``resume`` meet a stale instance before the chat opens: in a terminal
they ask whether to move it; piped (stdin is the person's answers, so nothing can be asked)
they move it with ``--migrate`` and otherwise say how on stderr, in one message, and exit 1
without opening the chat (which could only say the same again, in other words).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Callable, Protocol

from formctl.json_types import FieldValue

if TYPE_CHECKING:
    from formctl.forms.compile import CompiledForm
    from formctl.forms.instance import Instance
    from formctl.forms.project import MigrateResult


class Migrating(Protocol):
    """What :func:`offer_migration` asks of a chat about to open (cli/chat/session.py's ChatSession,
    which imports this module: a protocol, not that class, keeps the import one-way)."""

    compiled: CompiledForm

    def stale_instance(self) -> Instance | None: ...

    def migrate(self) -> MigrateResult: ...

    def labels(self) -> dict[str, str]: ...


def migrate_lines(result: MigrateResult, labels: dict[str, str]) -> list[str]:
    """What a migration did, for a person: the versions, then each answer it could not keep."""
    instance_id = result.view.instance_id
    if result.from_version == result.to_version:
        return [f"{instance_id} is already on version {result.to_version} of {result.view.def_id}; nothing to move."]
    lines = [
        f"moved {instance_id} from version {result.from_version} to version {result.to_version} of {result.view.def_id}"
    ]
    for r in result.rejected:
        lines.append(
            f"  not kept: {labels.get(r.field, r.field)} — version {result.to_version} refuses it: "
            f"{r.message} (it will be asked again)"
        )
    for field, value in result.dropped.items():
        lines.append(f"  not kept: {field} = {_value(value)} — version {result.to_version} has no such field")
    if result.rejected or result.dropped:
        lines.append(f"  every answer stays in the instance's history (formctl history {instance_id})")
    else:
        lines.append("  every answer was kept")
    return lines


def _value(value: FieldValue) -> str:
    import json

    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "…"


def stale_text(instance: Instance, compiled: CompiledForm) -> str:
    return (
        f"{instance.id} was started on version {instance.def_version} of {instance.def_id}; version "
        f"{compiled.version} is registered now, and it can't be continued as it is."
    )


def how_to_move(instance: Instance) -> str:
    return (
        f"To move it to the registered version (keeping the answers it accepts): formctl migrate {instance.id}, "
        f"or formctl run {instance.def_id} --migrate. To close it: formctl abandon {instance.id} --reason REASON. "
        f"Its answers are kept either way (formctl export {instance.id})."
    )


def offer_migration(session: Migrating, *, migrate: bool, ask: Callable[[str], bool] | None) -> bool:
    """Before a chat opens on a stale instance: move it (``migrate``, or the person says yes), or
    say how on stderr. True when it moved."""
    instance = session.stale_instance()
    if instance is None:
        return False
    compiled = session.compiled
    question = (
        f"{stale_text(instance, compiled)} Move it to version {compiled.version} now? Answers version "
        f"{compiled.version} accepts are kept, the others are listed. [y/N] "
    )
    if migrate or (ask is not None and ask(question)):
        result = session.migrate()
        for line in migrate_lines(result, session.labels()):
            print(line)
        return True
    sys.stderr.write(f"{stale_text(instance, compiled)} {how_to_move(instance)}\n")
    return False


def ask_line(question: str) -> str | None:
    """The line typed in answer to ``question`` at the terminal; None when the person left (Ctrl-D)."""
    try:
        return input(question)
    except EOFError:
        return None


def ask_in_terminal(question: str) -> bool:
    try:
        answer = input(question)
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")
