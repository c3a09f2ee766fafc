"""A revisit: going back over every field of a finished step, one question each.

When a checkpoint sends the conversation back to a finished step (client intake's
``confirm`` jumps back to Contact), the engine keeps the step open only until the next write
to any of its fields (docs/engine.md, "Routing"). Writing each answer as it is given
would end the revisit, and complete the form, after the first one: Email and Phone would never
be confirmed. So the guided model asks every field of the step in turn, keeps the answers
("same" keeps the one in force, "skip" leaves an optional one out), and writes them together in
one ``form_fill`` after the last, so the form completes only then and once.

A form with a review (``review=True``) cannot complete before the person says "yes" to the
read-back, so there a changed answer is written as soon as it is given: what the chat said it
noted is stored even if the conversation ends there. That first write ends the engine's
revisit; the model still goes over the rest of the step (:func:`revisit_of` keeps it).

The answers kept are conversation state, not stored: a fresh model over a restored
conversation finds the engine still revisiting (nothing was written) and asks the step again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SKIPPED = object()  # an optional field the person left out during the revisit


@dataclass(slots=True)
class Revisit:
    """The step being gone over, its fields in order, and the answers given so far."""

    instance_id: str
    step_id: str
    fields: list[str]
    answers: dict[str, Any] = field(default_factory=dict)
    quotes: dict[str, str] = field(default_factory=dict)  # field id -> the person's line it came from
    kept: set[str] = field(default_factory=set)  # answered "same": the value in force stays
    saved: set[str] = field(default_factory=set)  # written as given (a form with a review)
    wrote: bool = False  # something was written during the revisit (the engine's revisit ended)

    def next(self) -> str | None:
        """The next field to ask, or None once every one has an answer."""
        return next((f for f in self.fields if f not in self.answers), None)

    def rest(self, after: str) -> list[str]:
        """The fields still to ask after ``after``, in order (for several bare answers in one line)."""
        return [f for f in self.fields if f not in self.answers and f != after]

    def values(self) -> dict[str, Any]:
        """What to write at the end: every answer but the ones left out, and but the ones kept
        ("same") when anything else is written (one write to the step ends the revisit; a kept
        answer needs no new revision, and "same" is not the value's own words)."""
        given = {f: v for f, v in self.answers.items() if v is not SKIPPED}
        changed = {f: v for f, v in given.items() if f not in self.kept and f not in self.saved}
        return changed if changed or self.wrote else given


def revisit_of(current: Revisit | None, snap: Any) -> Revisit | None:
    """The revisit under way for ``snap``: the current one while the engine still revisits its
    step, a new one when the engine has just gone back to a step, else None."""
    ev, instance = snap.ev, snap.instance
    if current is not None and instance is not None and current.instance_id == instance.id and current.wrote:
        # An answer written as it was given ended the engine's revisit: the rest of the step is
        # still gone over, until every field has its answer.
        return current if current.next() is not None else None
    if ev is None or instance is None or not ev.revisiting or ev.open_step is None:
        return None
    step = snap.compiled.steps[ev.open_step]
    if current is not None and current.instance_id == instance.id and current.step_id == step.id:
        return current
    asked = [f.id for f in step.fields if ev.applicable[f.order]]
    return Revisit(instance.id, step.id, asked)
