"""Recording: build a transcript from the chat loop's events, and write it after every turn.

``formctl run FORM --record PATH`` wires it like this::

    rec = Recorder(path, form_id=form, form_version=compiled.version, model=model.name,
                   subject=runner.subject, runner=runner)
    loop = ChatLoop(runner, model, on_event=lambda ev: (draw(ev), rec.event(ev)))
    rec.person(text); loop.send(text)          # each turn; the file is rewritten at TurnEnd
    rec.host("resolve", fail=None)             # a host action seen mid-conversation
    rec.finish(runner)                         # the end state, as [expect]

The file is rewritten whole and atomically at the end of every turn (temp file, fsync,
rename), so a crash leaves the last complete turn on disk, never half a file. The replay
builds its own transcript with this same class (``path=None``), so a recording and a
replay are normalised by the same code.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from typing import TYPE_CHECKING

from formctl.forms.instance import Instance
from formctl.json_types import JsonObject, JsonValue
from formctl.redact import redact
from formctl.transcripts.format import Call, Iteration, Transcript, Turn, dump
from formctl.transcripts.normalise import Normaliser, learn_masks

if TYPE_CHECKING:
    from formctl.agent.events import Event, ModelCall, ModelTurn, ToolResult
    from formctl.forms.runner import FormRunner

OPENER = "Hello."
"""The person's side of a conversation's first message. ``formctl run`` sends it (with any
``--seed`` lines after it) so that the model speaks first and every line the person types is
an answer; a live replay of a hand-written scenario opens the same way, so its first line is
an answer too."""


def opens_conversation(turn: Turn | None) -> bool:
    """Is ``turn`` the opening message (``Hello.``, perhaps with ``--seed`` lines after it)?"""
    return turn is not None and turn.kind == "person" and turn.text.split("\n", 1)[0].strip() == OPENER


def tools_digest(tools: list[JsonObject]) -> str:
    text = json.dumps(tools, sort_keys=True, ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def end_state(runner: FormRunner, instance_id: str | None, normaliser: Normaliser) -> JsonObject | None:
    """The instance at the end: status, live values (parsed, as JSON), held values, checkpoints fired."""
    from formctl.forms.project import answers

    instance = runner.open_instance(instance_id) if instance_id else None
    if instance is None:
        found = runner.instances(subject=runner.subject, limit=1)
        instance = runner.open_instance(found[0].instance_id) if found else None
    if instance is None:
        return None
    view = runner.view(instance.id)
    compiled, instance = view.compiled, view.instance
    fired = [cp.id for cp in compiled.checkpoints if instance.occurrences.get(f"checkpoint:{cp.id}", 0) > 0]
    shown = answers(compiled, view.evaluation)
    state: JsonObject = normaliser.value(
        {
            "status": view.status,
            **shown,
            "checkpoints": fired,
            "provenance": provenance_kinds(instance, [*shown.get("values", {}), *shown.get("held", {})]),
        }
    )
    return state


def provenance_kinds(instance: Instance, fields: list[str]) -> dict[str, str]:
    """How each answer in force arrived (said, confirmed, assumed, ...), by field."""
    from formctl.forms.instance import provenance_kind

    out: dict[str, str] = {}
    for field_id in fields:
        log = instance.entries.get(field_id)
        entry = log.in_force if log is not None else None
        if entry is not None:
            out[field_id] = provenance_kind(entry.provenance)
    return out


def host_result(result: object) -> JsonValue:
    """A host action's outcome as JSON: a fill result's or view's ``to_dict()``, or a stored instance's status."""
    if result is None or isinstance(result, dict):
        return result
    if hasattr(result, "to_dict"):
        return result.to_dict()
    if isinstance(result, Instance):  # what runner.abandon gives back
        return {"instance_id": result.id, "status": result.status}
    return {"result": repr(result)}


def _has_answers(runner: FormRunner | None, form_id: str) -> bool:
    """Does the conversation start over an instance that already has answers (``formctl resume``)?"""
    if runner is None:
        return False
    try:
        instance = runner.open_instance()
    except Exception:
        return False
    return instance is not None and instance.def_id == form_id and bool(instance.entries)


class Recorder:
    """Collects one conversation into a :class:`Transcript` and keeps ``path`` up to date."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        *,
        form_id: str,
        form_version: int | None = None,
        model: str = "scripted",
        subject: str | None = None,
        runner: FormRunner | None = None,
    ) -> None:
        self.path = path
        self.runner = runner
        self.normaliser = Normaliser(subject)
        self.transcript = Transcript(
            form=form_id, form_version=form_version, model=model, path=str(path) if path else None
        )
        self.instance_id: str | None = None  # the raw id, as seen in tool results
        self._turn: Turn | None = None
        self._iteration: Iteration | None = None
        self.transcript.resumed = _has_answers(runner, form_id)

    # -- the conversation --------------------------------------------------------------

    def person(self, text: str) -> Turn:
        """The person's message, before it is sent to the loop (a key pasted in it left out, as the
        loop leaves it out: formctl.redact)."""
        turn = Turn("person", text=redact(text))
        self.transcript.turns.append(turn)
        self._turn, self._iteration = turn, None
        return turn

    def answer(self, text: str) -> None:
        """The person's answer to formctl's own question, during the current turn."""
        if self._turn is not None and self._turn.kind == "person":
            self._turn.answers.append(redact(text))

    def host(self, action: str, *, result: object = None, error: str | None = None, **args: JsonValue) -> Turn:
        """A host action at this point of the conversation (``resolve`` with ``fail=``/``values=``, ...)."""
        turn = Turn(
            "host",
            action=action,
            args=self.normaliser.value({k: v for k, v in args.items() if v is not None}),
            result=self.normaliser.value(host_result(result)),
            error=error,
        )
        self.transcript.turns.append(turn)
        self._turn, self._iteration = None, None
        self.flush()
        return turn

    def event(self, ev: Event) -> None:
        """Every loop event goes here; the ones a transcript keeps are recorded, the rest ignored."""
        from formctl.agent.events import LoopError, ModelCall, ModelTurn, ToolResult, TurnEnd

        if isinstance(ev, ModelCall):
            self._model_call(ev)
        elif isinstance(ev, ModelTurn):
            self._model_turn(ev)
        elif isinstance(ev, ToolResult):
            self._tool_result(ev)
        elif isinstance(ev, LoopError):
            if self._turn is not None:
                self._turn.error = ev.message
        elif isinstance(ev, TurnEnd):
            self.flush()

    def _model_call(self, ev: ModelCall) -> None:
        turn = self._turn if self._turn is not None else self.person("")
        request = ev.request
        if self.transcript.system is None and request is not None:
            self.transcript.system = self.normaliser.text(request.system or "")
            self.transcript.tools_digest = tools_digest(list(request.tools or []))
        # "error" until the reply arrives: a model call that never answered (a model error,
        # a cancel) is replayed as that same error, at the same point.
        self._iteration = Iteration(tier0=self.normaliser.text(ev.tier0 or ""), stop_reason="error")
        turn.iterations.append(self._iteration)

    def _model_turn(self, ev: ModelTurn) -> None:
        if self._iteration is None:
            return
        norm = self.normaliser
        reply = ev.reply
        if reply.usage:
            from formctl.agent.usage import Usage

            total = Usage.from_dict(self.transcript.usage)
            total.add(reply.usage)
            self.transcript.usage = total.to_dict()
        # The model's words can name volatile things too ("formctl resolve form_…"): the
        # same conversation must make the same file.
        self._iteration.text = norm.text(reply.text) if reply.text else reply.text
        self._iteration.stop_reason = reply.stop_reason
        self._iteration.calls = [
            Call(id=norm.tool_id(b.get("id", "")), name=b.get("name", ""), input=norm.value(b.get("input")))
            for b in reply.tool_calls
        ]

    def _tool_result(self, ev: ToolResult) -> None:
        data = ev.result.get("data") if isinstance(ev.result, dict) else None
        if isinstance(data, dict) and isinstance(data.get("instance_id"), str):
            self.instance_id = data["instance_id"]
        call = self._find_call(self.normaliser.tool_id(ev.id))
        if call is not None:
            call.result = self.normaliser.value(ev.result)
            call.is_error = bool(ev.is_error)

    def _find_call(self, call_id: str) -> Call | None:
        if self._iteration is None:
            return None
        for call in self._iteration.calls:
            if call.id == call_id:
                return call
        return None

    def finish(self, runner: FormRunner | None = None, instance_id: str | None = None) -> Transcript:
        """Record the end state as ``[expect]`` and write the file a last time."""
        runner = runner or self.runner
        if runner is not None:
            self.runner = runner
            self.transcript.expect = end_state(runner, instance_id or self.instance_id, self.normaliser)
            if self.transcript.form_version is None:
                try:
                    self.transcript.form_version = runner.compiled(self.transcript.form).version
                except Exception:
                    pass
        self.flush()
        return self.transcript

    # -- writing -----------------------------------------------------------------------

    def flush(self) -> None:
        """Rewrite the file with everything so far (masked). No-op without a path."""
        if self.path is None:
            return
        dump(self.masked(), self.path)

    def masked(self) -> Transcript:
        """The transcript with every value given to a ``sensitive=True`` field replaced by its stand-in."""
        fields = self._learn_sensitive()
        if not fields:
            return self.transcript
        t = copy.deepcopy(self.transcript)
        t.masked = sorted(fields)
        masker = self.normaliser.masker()
        for turn in t.turns:
            turn.text = masker.text(turn.text)
            turn.answers = [masker.text(a) for a in turn.answers]
            turn.args = masker.value(turn.args)
            turn.result = masker.value(turn.result)
            for it in turn.iterations:
                it.text = masker.text(it.text)
                it.tier0 = masker.text(it.tier0) if it.tier0 is not None else None
                for call in it.calls:
                    call.input = masker.value(call.input)
                    call.result = masker.value(call.result)
        if t.expect is not None:
            t.expect = masker.value(t.expect)
        return t

    def _learn_sensitive(self) -> set[str]:
        """Find the sensitive fields and every value given to them (from the store: all revisions)."""
        runner = self.runner
        if runner is None:
            return set(self.transcript.masked)
        try:
            compiled = runner.compiled(self.transcript.form)
            instance = runner.open_instance(self.instance_id) if self.instance_id else None
        except Exception:
            return set(self.transcript.masked)
        return learn_masks(self.normaliser, compiled, instance) | set(self.transcript.masked)
