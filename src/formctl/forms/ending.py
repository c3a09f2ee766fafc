"""Taking back a write that ended a form, in one commit.

When a model's write ends the form (an executor's routing rule closes it) and the person says
the answer was wrong, the form must open again *and* lose the answers that write gave: both or
neither. Done as two writes (a reopen, then an undo per field), a failure between them left the
form open with the wrong answers in it, and the tool's result said nothing of either. Here it is
one write through the ordinary commit cycle (:meth:`~formctl.forms.write.Write.cycle`): the
cursors of ``fields`` move back one, and when the instance is closed the same commit opens it
(status settled from the answers left, closing reason cleared), recorded as two acts, a
``reopen`` and one ``undo`` naming every field it moved, with the same reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from formctl.forms.acts import Act, act_dispatch, moved_detail
from formctl.forms.history import cursor_move
from formctl.forms.instance import Commit, Instance
from formctl.forms.lifecycle import is_closed, open_again

if TYPE_CHECKING:
    from formctl.forms.staging import Staged
    from formctl.forms.write import Write

__all__ = ["revert_ending"]


def revert_ending(write: Write, instance: Instance, fields: list[str], *, reason: str | None, actor: str) -> Instance:
    """Reopen ``instance`` (if it is closed) and undo each of ``fields``, in one commit of ``write``;
    the instance it produced. Raises NothingToMoveError before any work when a field has nothing
    to undo."""
    for field_id in fields:
        cursor_move(instance, field_id, -1)

    def plan(inst: Instance) -> tuple[list[Staged], dict[str, int]]:
        return [], {field_id: cursor_move(inst, field_id, -1)[1] for field_id in fields}

    def record(inst: Instance, commit: Commit) -> None:
        at = write.prov.timestamp
        details = [moved_detail(f, inst.entries[f], cursor_move(inst, f, -1)[1]) for f in fields]
        dispatches = act_dispatch(inst, Act("undo", actor, at, reason, "; ".join(details)))
        if is_closed(inst):
            # Opened at "active" here; the commit cycle then settles it from the answers left.
            dispatches.update(act_dispatch(inst, Act("reopen", actor, at, reason, f"{inst.status} → open")))
            open_again(commit)
        commit.dispatches = dispatches

    committed, _ = write.cycle(instance, plan, amend=record, reopens=True)
    return committed
