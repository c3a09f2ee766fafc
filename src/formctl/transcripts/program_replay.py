"""Replaying a goal program's walk (``formctl run --program KEY --record FILE``, format 2): the
goal chats and each form's chat, in order, against a fresh in-memory store.

The program is put back as it stood when the walk began (``program_state``, at the same
version, so the recorded ``goal_update`` calls name the versions they read), the recorded model
turns are played back through the real chat loops (a goal chat: the goal tools; a form's chat:
the form tools and the goal tools), and every tool result and tier-0 line is compared with the
recording, then the program's end state (``[expect] program``). docs/transcripts.md, "A
program's walk".
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from formctl.transcripts import diff as _diff
from formctl.transcripts.compare import ReplayResult, compare_turn
from formctl.transcripts.format import Transcript, Turn
from formctl.transcripts.play import REPLAY_SUBJECT, answer_again, recorded_model, recorded_replies
from formctl.transcripts.record import OPENER, Recorder

if TYPE_CHECKING:
    from formctl.agent.loop import ChatLoop
    from formctl.forms.adapter import FormAdapter
    from formctl.forms.registry import FormRegistry
    from formctl.goals.state import GoalScope

__all__ = ["GOALS_SEGMENT", "replay_program"]

GOALS_SEGMENT = "goals"  # the turns of a goal chat; a form's chat is named by its form id


def _seeded(adapter: FormAdapter, transcript: Transcript) -> GoalScope:
    """The scope the walk's program is put back in, at the version it had when the walk began."""
    from formctl.goals.runner import goal_store_of
    from formctl.goals.state import GoalScope, state_from_json

    if not isinstance(transcript.program_state, dict):
        from formctl.errors import TranscriptError

        raise TranscriptError("a program's walk needs `program_state` (the program when the walk began)")
    state = state_from_json(transcript.program_state)
    scope = GoalScope(subject=REPLAY_SUBJECT, key=state.scope.key)
    store = goal_store_of(adapter)
    for version in range(1, state.version + 1):  # the history's versions, so the head's is the recorded one
        store.commit(
            scope,
            dataclasses.replace(state, scope=scope, version=version, transitions=()),
            if_version=version - 1 or None,
        )
    return scope


class _Walk:
    """The replayed walk: one store, one program, a chat loop per recorded chat."""

    def __init__(self, transcript: Transcript, registry: FormRegistry) -> None:
        from formctl.agent.goal_tools import GoalTools
        from formctl.agent.person import Person
        from formctl.forms.runner import FormRunner
        from formctl.goals.runner import GoalRunner
        from formctl.store.memory import MemoryAdapter

        adapter = MemoryAdapter("transcript-replay")
        self.goals = GoalRunner(adapter, scope=_seeded(adapter, transcript), actor="agent", source="chat")
        self.tools = GoalTools(self.goals)
        self.forms = FormRunner(adapter, registry=registry, subject=REPLAY_SUBJECT, actor="agent", source="chat")
        self.model = recorded_model(recorded_replies(transcript), transcript.model)
        self.recorder = Recorder(None, form_id=transcript.form, model=transcript.model, subject=REPLAY_SUBJECT)
        self.pending: list[str] = []
        self.person = Person(ask=self._answer, not_theirs=frozenset({OPENER}))
        self.loop: ChatLoop | None = None
        self.segment: str | None = None

    def _answer(self, question: str) -> str | None:
        return answer_again(self.pending, self.recorder)

    def turn(self, turn: Turn) -> Turn:
        from formctl.agent.loop import ChatLoop

        if self.loop is None or turn.segment != self.segment or turn.text == OPENER:  # a chat of its own
            form = None if turn.segment in (None, GOALS_SEGMENT) else turn.segment
            self.loop = ChatLoop(
                self.forms, self.model, form_id=form, on_event=self.recorder.event, person=self.person, goals=self.tools
            )
            self.segment = turn.segment
        new = self.recorder.person(turn.text)
        new.segment = turn.segment
        self.pending = list(turn.answers)
        self.loop.send(turn.text)
        return new


def replay_program(transcript: Transcript, registry: FormRegistry) -> ReplayResult:
    """Replay a program's walk exactly (see the module); never raises for a walk that diverges."""
    path = transcript.path or transcript.name
    if any(t.kind != "person" for t in transcript.turns):
        return ReplayResult(transcript.name, path, False, "  a program's walk holds person turns only")
    walk = _Walk(transcript, registry)
    for n, turn in enumerate(transcript.turns, 1):
        divergence = compare_turn(n, turn, walk.turn(turn))
        if divergence is not None:
            return ReplayResult(transcript.name, path, False, divergence.render(), "exact", len(transcript.turns))
    text = ""
    want = (transcript.expect or {}).get("program")
    status = walk.goals.inspect()
    got = walk.recorder.normaliser.value(status.to_dict()) if status is not None else None
    if want is not None and want != got:
        text = "  the program's end state differs:\n" + _diff.render(
            _diff.differences(want, got, "program"), indent="    "
        )
    elif walk.model.remaining:
        text = f"  {walk.model.remaining} recorded model call(s) were never played"
    return ReplayResult(transcript.name, path, not text, text, "exact", len(transcript.turns))
