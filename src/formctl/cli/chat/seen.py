"""What the person has been shown of the form, kept apart from what a colleague changed.

A chat keeps what the person was last shown of its instance (a
:func:`~formctl.agent.notices.snapshot`, saved with the conversation as ``seen``) and tells the
model, in a notice, whatever changed since by anything but its own turn (docs/chat.md, "The
chat always knows what it asked"). When a turn ends, the person has been shown what the turn's
own writes did, but not a colleague's write that landed during the turn: two chats on one
instance sending at the same moment each commit while the other's turn runs. Marking the
instance *as it is stored* at the end of the turn swallowed the colleague's write, so in two of
four trials neither chat said "Changed elsewhere" and one's last words disagreed with its status
bar.

So the chat's runners report every commit they make (:data:`~formctl.forms.write.OnCommit`):
the instance each was made over and the instance it produced. :class:`OwnCommits` keeps them
until the next time the person is shown the form, and :func:`shown_after` folds them over what
was shown before: a field or a status that one of the chat's own commits changed has been
shown; anything else that differs in the store came from elsewhere, and stays as the person
last saw it, so the next notice says it. Versions tell the two apart: a commit made over the
version the chat's last write produced follows it directly; any other version in between was
someone else's.

A colleague's answer that this chat's own later commit replaced in the same turn is said too
("Purpose of trip was answered there too, as Workshop, just before the answer here replaced
it"): what is stored is the person's own value, but two people answered the same question at
once, and each should know (docs/chat.md, "Two chats on one instance").
"""

from __future__ import annotations

import threading
from typing import Final, NotRequired, TypedDict

from formctl.forms.compile import CompiledForm
from formctl.forms.evaluate import Evaluation, evaluate
from formctl.forms.instance import Instance
from formctl.json_types import JsonObject

__all__ = ["REPLACED", "OwnCommits", "Snapshot", "as_snapshot", "shown_after", "snapshot_of"]

# Under this key of ``seen``: the sentences for answers given elsewhere that this chat's own
# commits replaced in the same turn. The store no longer holds them, so comparing it with what
# was shown cannot find them; they are said with the next notice (session.changes).
REPLACED: Final = "replaced_elsewhere"


class Snapshot(TypedDict):
    """What the person was shown of an instance (:func:`~formctl.agent.notices.snapshot`), as it
    is saved with the conversation (``seen``)."""

    instance: str
    version: int | None  # None: the form before its first commit
    status: str | None
    blocked_on: str | None
    answers: dict[str, str]  # field id → a digest of the value shown
    replaced_elsewhere: NotRequired[list[str]]  # REPLACED


def as_snapshot(data: JsonObject) -> Snapshot:
    """A snapshot as :func:`~formctl.agent.notices.snapshot` made it or a conversation kept it."""
    shown = Snapshot(
        instance=data.get("instance", ""),
        version=data.get("version"),
        status=data.get("status"),
        blocked_on=data.get("blocked_on"),
        answers=data.get("answers") or {},
    )
    if REPLACED in data:
        shown[REPLACED] = data[REPLACED]
    return shown


def snapshot_of(compiled: CompiledForm, evaluation: Evaluation, instance: Instance) -> Snapshot:
    """The instance as the person is shown it now."""
    from formctl.agent.notices import snapshot

    return as_snapshot(snapshot(compiled, evaluation, instance))


Commit = tuple[Instance | None, Instance]  # (the instance it was made over, or None for a start; what it produced)


class OwnCommits:
    """The commits this chat's own runners made since the person was last shown the form.

    ``record`` is the runners' ``on_commit``; it is called from whichever thread writes (a
    turn's worker, a ``/command`` on the main thread), so the list is guarded."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._commits: list[Commit] = []

    def record(self, before: Instance | None, after: Instance) -> None:
        with self._lock:
            self._commits.append((before, after))

    def take(self) -> list[Commit]:
        """The commits recorded so far, oldest first; the ledger is empty afterwards."""
        with self._lock:
            commits, self._commits = self._commits, []
        return commits


def shown_after(
    seen: Snapshot | None,
    commits: list[Commit],
    compiled: CompiledForm,
    instance: Instance,
    evaluation: Evaluation,
) -> Snapshot:
    """What the person has been shown once a turn that made ``commits`` has ended, with
    ``instance`` (evaluated as ``evaluation``) as stored now.

    The stored state itself when every version since ``seen`` is one of the chat's own commits.
    Otherwise ``seen`` with what the own commits changed applied to it, and the version before
    the first change made elsewhere, so a notice compares the stored state with it and says the
    rest."""
    now = snapshot_of(compiled, evaluation, instance)
    chain = [(before, after) for before, after in commits if after.id == instance.id]
    start = _starting_point(seen, chain, compiled, instance)
    if start is None:
        return now
    seen, version = start
    behind = _version_behind(chain, version, instance)
    if behind is None:
        return now
    shown: Snapshot = {**seen, "answers": dict(seen.get("answers") or {}), "version": behind}
    replaced = _apply_own_commits(shown, seen, chain, compiled, instance)
    if replaced:
        shown[REPLACED] = replaced
    return shown


def _starting_point(
    seen: Snapshot | None, chain: list[Commit], compiled: CompiledForm, instance: Instance
) -> tuple[Snapshot, int | None] | None:
    """What the person saw before the turn, and its version: ``seen`` itself when it is of this
    instance; a form not shown yet (a new conversation, a form the model just started) from the
    chat's first commit to it; None when there is neither (the stored state is what they see)."""
    if seen is not None and seen.get("instance") == instance.id:
        return seen, seen.get("version")
    if not chain:
        return None
    first = chain[0][0]
    if first is None:
        return _empty(instance.id), None
    return _snap(compiled, first), first.version


def _version_behind(chain: list[Commit], version: int | None, instance: Instance) -> int | None:
    """The version before the first change made elsewhere (None: every version since is the chat's own)."""
    behind: int | None = None
    for before, after in chain:
        if before is not None and before.version != version:
            behind = version if behind is None else behind
        version = after.version
    if instance.version != version and behind is None:
        behind = version
    return behind


def _apply_own_commits(
    shown: Snapshot, seen: Snapshot, chain: list[Commit], compiled: CompiledForm, instance: Instance
) -> list[str]:
    """Apply to ``shown`` what the chat's own commits changed; the sentences for answers given
    elsewhere that one of them then replaced (the commit was made over them)."""
    replaced: list[str] = list(seen.get(REPLACED) or [])
    last, version = dict(seen.get("answers") or {}), seen.get("version")
    for before, after in chain:
        was = _snap(compiled, before) if before is not None else _empty(instance.id)
        made = _snap(compiled, after)
        # What a change made elsewhere just before this commit set (the commit was made over it).
        foreign = (
            {f for f in set(last) | set(was["answers"]) if last.get(f) != was["answers"].get(f)}
            if before is not None and before.version != version
            else set()
        )
        for field_id in set(was["answers"]) | set(made["answers"]):
            if was["answers"].get(field_id) != made["answers"].get(field_id):
                if field_id in made["answers"]:
                    shown["answers"][field_id] = made["answers"][field_id]
                else:
                    shown["answers"].pop(field_id, None)
                if field_id in foreign and before is not None:
                    replaced.append(_replaced(compiled, before, field_id))
        if (was["status"], was["blocked_on"]) != (made["status"], made["blocked_on"]):
            shown["status"], shown["blocked_on"] = made["status"], made["blocked_on"]
        last, version = made["answers"], after.version
    return replaced


def _replaced(compiled: CompiledForm, before: Instance, field_id: str) -> str:
    """The sentence for an answer given elsewhere that this chat's own commit then replaced."""
    from formctl.agent.notices import shown_value
    from formctl.forms.validate import to_jsonable

    field = compiled.field_by_id[field_id]
    values = evaluate(compiled, before).values
    if field.sensitive or field_id not in values:
        given = "an answer (hidden)" if field.sensitive else "an answer"
    else:
        given = shown_value(to_jsonable(values[field_id]))
    return f"{field.label} was answered there too, as {given}, just before the answer here replaced it"


def _snap(compiled: CompiledForm, instance: Instance) -> Snapshot:
    return snapshot_of(compiled, evaluate(compiled, instance), instance)


def _empty(instance_id: str) -> Snapshot:
    return Snapshot(instance=instance_id, version=None, status=None, blocked_on=None, answers={})
