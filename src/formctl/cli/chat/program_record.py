"""``formctl run --program KEY --record FILE``: the whole walk as one transcript (format 2).

Every chat of the walk is recorded into one :class:`~formctl.transcripts.record.Recorder`: the
goal chats' turns as segment ``goals``, each form's chat as a segment named by its form id (a
form's :class:`ChatSession` is given this recording as its recorder). The program as it stood
when the walk began is kept (``program_state``) and its end state (``[expect] program``), so
``formctl replay`` plays the walk again exactly (:mod:`formctl.transcripts.program_replay`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from formctl.agent.events import Event
    from formctl.forms.runner import FormRunner
    from formctl.goals.runner import GoalRunner
    from formctl.goals.view import GoalStatus
    from formctl.transcripts.format import Turn

__all__ = ["ProgramRecording"]


class ProgramRecording:
    """One walk's transcript, written as it goes; ``segment`` names the chat being recorded."""

    def __init__(self, path: str, goals: GoalRunner, model: str) -> None:
        from formctl.errors import AlreadyExistsError
        from formctl.goals.state import state_to_json
        from formctl.transcripts.record import Recorder

        if Path(path).exists():  # a transcript is a regression test: recording over one would lose it
            raise AlreadyExistsError(f"{path} already exists: record to a new path, or remove it first.")
        state = goals.store.get(goals.scope)
        program = state.program.key if state is not None else goals.scope.key
        self.recorder = Recorder(path, form_id=program, model=model, subject=goals.scope.subject)
        transcript = self.recorder.transcript
        transcript.program = program
        if state is not None:  # its transitions' hooks ran in the store recorded: a replay has none to run
            transcript.program_state = {**self.recorder.normaliser.value(state_to_json(state)), "transitions": []}
        self.segment = "goals"
        self.recorder.flush()

    # What a form's ChatSession calls on its recorder, and the goal chats too.

    def person(self, text: str) -> Turn:
        turn = self.recorder.person(text)
        turn.segment = self.segment
        return turn

    def answer(self, text: str) -> None:
        self.recorder.answer(text)

    def event(self, ev: Event) -> None:
        self.recorder.event(ev)

    def host(self, action: str, *, result: object = None, error: str | None = None, **args: object) -> Turn:
        return self.recorder.host(action, result=result, error=error, **args)

    def finish(self, runner: FormRunner | None = None, instance_id: str | None = None) -> None:
        """A form's chat ended: the walk goes on (the end state is written by :meth:`end`)."""
        self.recorder.flush()

    def end(self, status: GoalStatus | None) -> None:
        """The walk ended: its program's state is what a replay must reach."""
        if status is not None:
            self.recorder.transcript.expect = {"program": self.recorder.normaliser.value(status.to_dict())}
        self.recorder.flush()
