"""A revisit: going back over every field of a finished step, one question each.

When a checkpoint sends the conversation back to a finished step (client intake's
``confirm`` jumps back to Contact), the engine keeps the step open only until the next write
to any of its fields (docs/engine.md, "Routing"). The guided model asks every field of the step
in turn all the same ("same" keeps the answer in force, "none" leaves an optional one out).

Whatever the chat acknowledges is stored when it says so, on every form, with or without a
review: a changed or new answer is written as it is given (a ``form_revise`` or ``form_fill``
quoted with its line), an optional answer left out is retracted then, so nothing is lost if the
conversation ends there (Ctrl-D, the end of piped input, ``quit``). The first such write ends
the engine's revisit; :func:`revisit_of` keeps going over the rest of the step until every field
has its answer. (Writing once at the end, as an earlier version did on forms without a review,
lost an answer the chat had said "Noted" to when the input ended before the last field.) Kept
answers need no write; when nothing else was written, they are written after the last field, to
end the engine's revisit.

Which fields were gone over is conversation state, not stored: a fresh model over a restored
conversation asks the step again while the engine still revisits it (nothing written yet), and
after a write takes up the question its last reply asked, then the form's own order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from formctl.json_types import JsonObject, JsonValue

if TYPE_CHECKING:
    from formctl.forms.compile import CompiledForm
    from formctl.forms.evaluate import Evaluation
    from formctl.forms.instance import Instance


SKIPPED = object()  # an optional field the person left out during the revisit


@dataclass(slots=True)
class Revisit:
    """The step being gone over, its fields in order, and the answers given so far."""

    instance_id: str
    step_id: str
    fields: list[str]
    answers: dict[str, JsonValue] = field(default_factory=dict)
    quotes: dict[str, str] = field(default_factory=dict)  # field id -> the person's line it came from
    kept: set[str] = field(default_factory=set)  # answered "same": the value in force stays
    wrote: bool = False  # something was written during the revisit (the engine's revisit ended)

    def next(self) -> str | None:
        """The next field to ask, or None once every one has an answer."""
        return next((f for f in self.fields if f not in self.answers), None)

    def rest(self, after: str) -> list[str]:
        """The fields still to ask after ``after``, in order (for several bare answers in one line)."""
        return [f for f in self.fields if f not in self.answers and f != after]

    def values(self) -> JsonObject:
        """What is still to write after the last field: the kept answers when nothing was written
        during the revisit (one write to the step ends it), else nothing; answers written as they
        were given and answers left out are never written again."""
        if self.wrote:
            return {}
        return {f: v for f, v in self.answers.items() if v is not SKIPPED and f in self.kept}


def revisit_of(
    current: Revisit | None, compiled: CompiledForm, ev: Evaluation | None, instance: Instance | None
) -> Revisit | None:
    """The revisit under way for the instance: the current one while the engine still revisits its
    step, a new one when the engine has just gone back to a step, else None."""
    if current is not None and instance is not None and current.instance_id == instance.id and current.wrote:
        # An answer written as it was given ended the engine's revisit: the rest of the step is
        # still gone over, until every field has its answer.
        return current if current.next() is not None else None
    if ev is None or instance is None or not ev.revisiting or ev.open_step is None:
        return None
    step = compiled.steps[ev.open_step]
    if current is not None and current.instance_id == instance.id and current.step_id == step.id:
        return current
    asked = [f.id for f in step.fields if ev.applicable[f.order]]
    return Revisit(instance.id, step.id, asked)
