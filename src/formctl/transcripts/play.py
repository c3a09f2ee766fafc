"""Running a transcript's conversation again: a fresh in-memory runner, the real chat loop, the
recorded model turns played back (or a model that answers anew), host actions at their turn."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from formctl.errors import TranscriptError
from formctl.json_types import JsonObject, JsonValue
from formctl.transcripts.format import HOST_ACTIONS, Transcript, Turn
from formctl.transcripts.record import OPENER, Recorder, end_state

if TYPE_CHECKING:
    from formctl.agent.events import Event
    from formctl.agent.models.base import ChatModel, ModelReply, ModelRequest, TextSink
    from formctl.forms.compile import CompiledForm
    from formctl.forms.registry import FormRegistry
    from formctl.forms.runner import FormRunner
    from formctl.transcripts.coverage import Coverage

REPLAY_SUBJECT = "transcript-replay"

ModelFactory = Callable[["FormRunner"], "ChatModel"]
"""How a replay (or an eval run) gets its model: built for the fresh runner it will drive."""

TurnCheck = Callable[[int, Turn, Turn], bool]
"""``on_turn(n, recorded_turn, new_turn)`` after each played turn: True stops the playback."""


def fresh_runner(registry: FormRegistry) -> FormRunner:
    from formctl.forms.runner import FormRunner
    from formctl.store.memory import MemoryAdapter

    return FormRunner(MemoryAdapter("transcript-replay"), registry=registry, subject=REPLAY_SUBJECT, replaying=True)


def recorded_replies(transcript: Transcript) -> list[ModelReply | str]:
    """The recorded model replies in order; a model call that failed is its error message."""
    from formctl.agent.models.base import ModelReply

    out: list[ModelReply | str] = []
    for turn in transcript.turns:
        for it in turn.iterations:
            if it.stop_reason == "error":
                out.append(turn.error or "The model failed.")
                continue
            content: list[JsonObject] = []
            if it.text:
                content.append({"type": "text", "text": it.text})
            for c in it.calls:
                content.append({"type": "tool_use", "id": c.id, "name": c.name, "input": c.input})
            out.append(
                ModelReply(content=content, stop_reason=it.stop_reason or ("tool_use" if it.calls else "end_turn"))
            )
    return out


def recorded_model(replies: list[ModelReply | str], name: str) -> RecordedModel:
    """The model of a replay: ``replies`` played back in order (see :class:`RecordedModel`)."""
    return RecordedModel(replies, name=name)


class RecordedModel:
    """A :class:`~formctl.agent.models.base.ChatModel` that plays a transcript's model turns back, in
    order, and re-raises the model errors the recording saw (a reply that is a string), at the same point.

    It keeps no copy of the requests, unlike :class:`~formctl.agent.models.scripted.ScriptedModel`:
    the replay compares what was sent through the loop's events (the tier-0 line, the fixed system
    prompt and tools), and copying the whole growing conversation on every call made replay
    quadratic in its length (70% of the time of a twenty-turn replay).
    """

    def __init__(self, replies: list[ModelReply | str], *, name: str = "scripted") -> None:
        self.name = name
        self._replies = list(replies)
        self.played = 0

    @property
    def remaining(self) -> int:
        """How many recorded turns have not been played yet."""
        return len(self._replies) - self.played

    def respond(self, request: ModelRequest, on_text: TextSink | None = None) -> ModelReply:
        from formctl.agent.models.base import ModelReply
        from formctl.errors import ModelError

        if self.played >= len(self._replies):
            raise ModelError(f"The script has no more model turns ({self.played} played).")
        recorded = self._replies[self.played]
        self.played += 1
        if isinstance(recorded, str):
            raise ModelError(recorded)
        # No copy: these replies were built for this replay alone, and each is played once.
        content = recorded.content
        if any(b.get("type") == "tool_use" and _names_instance(b.get("input")) for b in content):
            # The recording normalised an instance id the model copied into a call
            # (instance_id: "<instance>"): give it this replay's id, the newest a result named.
            current = _newest_instance(request.messages)
            if current is not None:
                content = [
                    {**b, "input": _with_instance(b.get("input"), current)} if b.get("type") == "tool_use" else b
                    for b in content
                ]
        reply = ModelReply(content=content, stop_reason=recorded.stop_reason)
        if on_text is not None and reply.text:
            on_text(reply.text)
        return reply


def _names_instance(value: JsonValue) -> bool:
    from formctl.transcripts.normalise import INSTANCE

    if isinstance(value, str):
        return INSTANCE in value
    if isinstance(value, dict):
        return any(_names_instance(v) for v in value.values())
    if isinstance(value, list):
        return any(_names_instance(v) for v in value)
    return False


def _with_instance(value: JsonValue, instance_id: str) -> JsonValue:
    from formctl.transcripts.normalise import INSTANCE

    if isinstance(value, str):
        return value.replace(INSTANCE, instance_id)
    if isinstance(value, dict):
        return {k: _with_instance(v, instance_id) for k, v in value.items()}
    if isinstance(value, list):
        return [_with_instance(v, instance_id) for v in value]
    return value


def _newest_instance(messages: list[JsonObject]) -> str | None:
    """The instance id the newest tool result named (what a model copying an id would have copied)."""
    import json

    for message in reversed(messages):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block in reversed(content):
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            try:
                data = json.loads(block.get("content") or "").get("data")
            except (ValueError, AttributeError):
                continue
            if isinstance(data, dict) and isinstance(data.get("instance_id"), str):
                found: str = data["instance_id"]
                return found
    return None


def perform_host_action(runner: FormRunner, action: str, args: JsonObject) -> JsonValue:
    """Do what a host did mid-conversation; returns the result as JSON (errors too, as data)."""
    from formctl.errors import FormError
    from formctl.transcripts.record import host_result

    if action not in HOST_ACTIONS:
        raise TranscriptError(f"unknown host action {action!r}")
    out: object  # a fill result, a view, or the abandoned instance: host_result makes each JSON
    try:
        if action == "resolve":
            out = runner.resolve_checkpoint(
                fail=args.get("fail"),
                values=args.get("values"),
                checkpoint=args.get("checkpoint"),
                actor=args.get("actor"),
                reason=args.get("reason"),
            )
        elif action == "fill":
            out = runner.fill(args.get("values") or {})
        elif action == "revise":
            out = runner.revise(args["field"], args.get("value"), reason=args.get("reason"))
        elif action == "retract":
            out = runner.retract(args["field"], reason=args.get("reason"))
        elif action == "undo":
            out = runner.undo(args.get("field"))
        elif action == "redo":
            out = runner.redo(args.get("field"))
        elif action == "abandon":
            out = runner.abandon(args.get("reason") or "Abandoned by the host.")
        elif action == "withdraw":
            out = runner.withdraw(reason=args.get("reason"))
        else:  # reopen
            out = runner.reopen(reason=args.get("reason"))
    except FormError as exc:
        return {"status": "error", "message": exc.message, "code": exc.code}
    except KeyError as exc:
        raise TranscriptError(f"host action {action!r} needs `{exc.args[0]}` in its args") from None
    return host_result(out)


def play(
    transcript: Transcript,
    registry: FormRegistry,
    compiled: CompiledForm,
    make_model: ModelFactory,
    *,
    coverage: Coverage | None,
    on_turn: TurnCheck | None = None,
) -> tuple[Recorder, FormRunner, ChatModel]:
    """Feed the transcript's person turns and host actions through a fresh runner and loop.

    ``on_turn(n, recorded_turn, new_turn)`` is called after each turn; returning True stops.
    """
    playback = _Playback(transcript, registry, compiled, make_model, coverage)
    for n, turn in enumerate(transcript.turns, 1):
        new = playback.turn(turn)
        if on_turn is not None and on_turn(n, turn, new):
            break
    rec, runner = playback.recorder, playback.runner
    rec.transcript.expect = end_state(runner, playback.loop.instance_id, rec.normaliser)
    return rec, runner, playback.model


class _Playback:
    """One transcript played again: a fresh runner and chat loop, recorded as it goes; the person's
    recorded answers to formctl's own questions given back when it asks them."""

    def __init__(
        self,
        transcript: Transcript,
        registry: FormRegistry,
        compiled: CompiledForm,
        make_model: ModelFactory,
        coverage: Coverage | None,
    ) -> None:
        from formctl.agent.loop import ChatLoop
        from formctl.agent.person import Person

        self.runner = fresh_runner(registry)
        self.recorder = Recorder(
            None,
            form_id=transcript.form,
            form_version=compiled.version,
            model=transcript.model,
            subject=REPLAY_SUBJECT,
            runner=self.runner,
        )
        self.recorder.transcript.masked = list(transcript.masked)
        self.name = transcript.name
        self.coverage = coverage
        self.pending: list[str] = []  # the recorded answers of the turn being played
        self.model = make_model(self.runner)
        self.loop = ChatLoop(
            self.runner,
            self.model,
            form_id=transcript.form,
            on_event=self._on_event,
            person=Person(ask=self._answer, not_theirs=frozenset({OPENER})),
        )

    def turn(self, turn: Turn) -> Turn:
        """Play one recorded turn (the person's words, or a host's act); the turn as recorded now."""
        if turn.kind == "host":
            result = perform_host_action(self.runner, turn.action or "", turn.args)
            new = self.recorder.host(turn.action or "", result=result, **turn.args)
            self._sample()
            return new
        new = self.recorder.person(turn.text)
        self.pending = list(turn.answers)
        self.loop.send(turn.text)
        return new

    def _on_event(self, ev: Event) -> None:
        self.recorder.event(ev)
        if ev.kind == "tool_result":
            self._sample()

    def _sample(self) -> None:
        if self.coverage is not None:
            self.coverage.sample(self.runner, self.loop.instance_id, self.name)

    def _answer(self, question: str) -> str | None:
        return answer_again(self.pending, self.recorder)


def answer_again(pending: list[str], recorder: Recorder) -> str | None:
    """The person's next recorded answer to formctl's own question (None when none is left), taken
    from ``pending`` and recorded again."""
    if not pending:
        return None
    given = pending.pop(0)
    recorder.answer(given)
    return given
