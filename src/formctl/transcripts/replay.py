"""Replay a transcript: the regression test of a form definition.

**Exact** (the default, offline). A fresh in-memory store and a fixed subject; the
recorded person turns go through the real chat loop, the recorded model turns are played
back by :class:`~formctl.agent.models.scripted.ScriptedModel`, and the tools and executors
run for real (executors see ``ctx.replaying``, so one that calls an outside service can
skip it). Host actions (Finance resolving a checkpoint) are performed at the point they
were recorded. After every turn the replay is normalised the way the recording was
(:mod:`.normalise`) and compared with it:

- the tier-0 line each model call was sent, and the fixed system prompt and tools: a
  model turn whose *request* no longer matches what was recorded is a divergence, since
  the recorded reply answered a different question;
- every tool result and host-action result;
- the end state (``[expect]``: status, live values, held values, checkpoints fired).

The first divergence is reported as a readable diff naming the turn, the step and the
field (:mod:`.diff`); later ones are usually its echoes.

**Update** (``update=True``) rewrites the file from a new run and reports, turn by turn,
everything that changed (:mod:`.changes`); it never writes a transcript that contradicts
itself. The guided model's turns follow from the form, so for a transcript it spoke
(``model = "guided"``) it answers every turn again. A real model's turns cannot be made
again offline: its replies are kept, the tool results and ``[expect]`` rewritten, and a
reply written after a tool result that has now changed is listed, and the file left as
it was, unless ``accept_text=True`` keeps those words. A second update is a no-op.

**Live** (``live=True``). The person turns (and host actions) of a transcript, usually a
hand-written one with only ``[expect]``, are played against a real model (``model``: a
``ChatModel``, a model name for :func:`pick_model`, or ``None`` for the offline guided
model) and graded on ``[expect]`` (the diff calls the author's values "expected"). The
conversation opens as ``formctl run`` opens it (``Hello.``), so the first person line is an
answer like every other. ``status`` and ``checkpoints`` must match, and every
value listed in ``values``/``held`` must be there (a model may also fill optional fields
the author did not list). ``live=True, update=True`` records the model's turns into the
file, turning a hand-written transcript into an exact one: that is how the shipped set
was made. A transcript with no model turns is replayed live against the guided model even
without ``live=True``, since there is nothing to play back.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from formctl.transcripts import changes as _changes
from formctl.transcripts import diff as _diff
from formctl.transcripts.format import (
    HOST_ACTIONS,
    Transcript,
    TranscriptError,
    Turn,
    dump,
    dumps,
    leading_comments,
    load,
)
from formctl.transcripts.record import OPENER, Recorder, end_state, opens_conversation

REPLAY_SUBJECT = "transcript-replay"
GUIDED = "guided"  # the offline model's name: its turns can be made again, a real model's cannot
_STEP = re.compile(r'step (\d+/\d+) "([^"]*)"')
_registries: dict[str, Any] = {}


@dataclass
class ReplayResult:
    """The outcome of one transcript. ``diff`` is the failure message (or, after ``update``, what changed)."""

    name: str
    path: str
    passed: bool
    diff: str = ""
    mode: str = "exact"
    turns: int = 0
    updated: bool = False
    seconds: float = 0.0
    stale_words: list[Any] = field(default_factory=list)  # kept replies that may no longer fit (update)

    def __bool__(self) -> bool:  # pragma: no cover - convenience
        return self.passed


@dataclass
class Divergence:
    turn: int
    where: str
    details: str
    step: str | None = None

    def render(self) -> str:
        head = f"  diverged at turn {self.turn} ({self.where})"
        if self.step:
            head += f", step {self.step}"
        return f"{head}:\n{self.details}"


# --------------------------------------------------------------------------- registry


def find_registry(path: str | os.PathLike[str] | None = None, forms: str | os.PathLike[str] | None = None) -> Any:
    """The forms registry: ``forms`` (a folder or registry.toml) > ``$FORMCTL_FORMS`` >
    the nearest ``forms/registry.toml`` above the transcript > ``./forms``. Cached per file."""
    from formctl.forms.registry import FormRegistry

    candidates: list[Path] = []
    given = forms or os.environ.get("FORMCTL_FORMS")
    if given:
        candidates.append(Path(given))
    else:
        if path is not None:
            for parent in Path(path).resolve().parents:
                candidates.append(parent / "forms")
        candidates.append(Path("forms"))
    for c in candidates:
        reg = c if c.suffix == ".toml" else c / "registry.toml"
        if reg.is_file():
            key = str(reg.resolve())
            if key not in _registries:
                _registries[key] = FormRegistry.from_toml(reg)
            return _registries[key]
    raise TranscriptError(
        "no forms registry found (looked for forms/registry.toml above the transcript and in the current "
        "folder); pass --forms DIR or set FORMCTL_FORMS",
        path=path,
    )


# --------------------------------------------------------------------------- entry points


def replay_file(
    path: str | os.PathLike[str],
    *,
    update: bool = False,
    live: bool = False,
    model: Any = None,
    registry: Any = None,
    forms: str | os.PathLike[str] | None = None,
    coverage: Any = None,
    accept_text: bool = False,
) -> ReplayResult:
    """Replay one transcript file. Never raises for a bad file: that is a failed result naming the line."""
    started = time.perf_counter()
    name = Path(path).stem
    try:
        transcript = load(path)
        if registry is None:
            registry = find_registry(path, forms)
        result = replay(transcript, registry, update=update, live=live, model=model, coverage=coverage,
                        accept_text=accept_text)
    except TranscriptError as exc:
        result = ReplayResult(name, str(path), False, f"  {exc}", mode="live" if live else "exact")
    except Exception as exc:  # one broken transcript (or form) must not stop the rest of the run
        message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        result = ReplayResult(name, str(path), False, f"  replay failed: {type(exc).__name__}: {message}",
                              mode="live" if live else "exact")
    result.seconds = time.perf_counter() - started
    return result


def replay(
    transcript: Transcript,
    registry: Any,
    *,
    update: bool = False,
    live: bool = False,
    model: Any = None,
    coverage: Any = None,
    accept_text: bool = False,
) -> ReplayResult:
    """Replay a loaded transcript against ``registry`` (see the module docstring for the modes)."""
    path = transcript.path or transcript.name
    live = live or not transcript.recorded
    try:
        compiled = registry.load(transcript.form)
    except Exception as exc:
        message = getattr(exc, "message", None) or str(exc)
        return ReplayResult(transcript.name, path, False, f"  cannot load form {transcript.form!r}: {message}",
                            mode="live" if live else "exact")
    if transcript.resumed and not live:
        return ReplayResult(
            transcript.name, path, False,
            "  recorded over an instance that already had answers (formctl resume); a replay starts from an "
            "empty store, so it cannot reproduce it. Record from the start with `formctl run FORM --record`.",
        )
    if live:
        return _live(transcript, registry, compiled, model=model, update=update, coverage=coverage)
    if update and transcript.model == GUIDED:
        return _regenerate(transcript, registry, compiled, coverage=coverage)
    return _exact(transcript, registry, compiled, update=update, coverage=coverage, accept_text=accept_text)


# --------------------------------------------------------------------------- running a conversation


def _runner(registry: Any) -> Any:
    from formctl.forms.runner import FormRunner
    from formctl.store.memory import MemoryAdapter

    return FormRunner(MemoryAdapter("transcript-replay"), registry=registry, subject=REPLAY_SUBJECT, replaying=True)


def _replies(transcript: Transcript) -> list[Any]:
    from formctl.agent.models.base import ModelReply

    out: list[Any] = []
    for turn in transcript.turns:
        for it in turn.iterations:
            if it.stop_reason == "error":
                out.append(turn.error or "The model failed.")
                continue
            content: list[dict[str, Any]] = []
            if it.text:
                content.append({"type": "text", "text": it.text})
            for c in it.calls:
                content.append({"type": "tool_use", "id": c.id, "name": c.name, "input": c.input})
            out.append(ModelReply(content=content, stop_reason=it.stop_reason or ("tool_use" if it.calls else "end_turn")))
    return out


def _recorded_model(replies: list[Any], name: str) -> Any:
    """A ScriptedModel that also re-raises the model errors the recording saw, at the same point.

    It does not keep a deep copy of every request as ScriptedModel does: the replay compares
    what was sent through the loop's events (the tier-0 line, the fixed system prompt and
    tools), and copying the whole growing conversation on every call made replay quadratic
    in its length (70% of the time of a twenty-turn replay).
    """
    from formctl.agent.models.base import ModelError, ModelReply
    from formctl.agent.models.scripted import ScriptedModel

    class _Recorded(ScriptedModel):
        def respond(self, request, on_text=None):  # type: ignore[override]
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

    return _Recorded(replies, name=name)


def _names_instance(value: Any) -> bool:
    from formctl.transcripts.normalise import INSTANCE

    if isinstance(value, str):
        return INSTANCE in value
    if isinstance(value, dict):
        return any(_names_instance(v) for v in value.values())
    if isinstance(value, list):
        return any(_names_instance(v) for v in value)
    return False


def _with_instance(value: Any, instance_id: str) -> Any:
    from formctl.transcripts.normalise import INSTANCE

    if isinstance(value, str):
        return value.replace(INSTANCE, instance_id)
    if isinstance(value, dict):
        return {k: _with_instance(v, instance_id) for k, v in value.items()}
    if isinstance(value, list):
        return [_with_instance(v, instance_id) for v in value]
    return value


def _newest_instance(messages: list[dict[str, Any]]) -> str | None:
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
                return data["instance_id"]
    return None


def perform_host_action(runner: Any, action: str, args: dict[str, Any]) -> Any:
    """Do what a host did mid-conversation; returns the result as JSON (errors too, as data)."""
    from formctl.forms.errors import FormError
    from formctl.transcripts.record import host_result

    if action not in HOST_ACTIONS:
        raise TranscriptError(f"unknown host action {action!r}")
    try:
        if action == "resolve":
            out = runner.resolve_checkpoint(fail=args.get("fail"), values=args.get("values"),
                                            checkpoint=args.get("checkpoint"), actor=args.get("actor"),
                                            reason=args.get("reason"))
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
        else:  # reopen
            out = runner.reopen()
    except FormError as exc:
        return {"status": "error", "message": exc.message, "code": exc.code}
    except KeyError as exc:
        raise TranscriptError(f"host action {action!r} needs `{exc.args[0]}` in its args") from None
    return host_result(out)


def _play(transcript: Transcript, registry: Any, compiled: Any, make_model: Any, *, coverage: Any,
          on_turn: Any = None) -> tuple[Recorder, Any, Any]:
    """Feed the transcript's person turns and host actions through a fresh runner and loop.

    ``on_turn(n, recorded_turn, new_turn)`` is called after each turn; returning True stops.
    """
    from formctl.agent.loop import ChatLoop

    runner = _runner(registry)
    rec = Recorder(None, form_id=transcript.form, form_version=compiled.version, model=transcript.model,
                   subject=REPLAY_SUBJECT, runner=runner)
    rec.transcript.masked = list(transcript.masked)
    name = transcript.name
    loop_box: list[Any] = []

    def on_event(ev: Any) -> None:
        rec.event(ev)
        if coverage is not None and ev.kind == "tool_result":
            coverage.sample(runner, loop_box[0].instance_id if loop_box else None, name)

    model = make_model(runner)
    loop = ChatLoop(runner, model, form_id=transcript.form, on_event=on_event)
    loop_box.append(loop)
    for n, turn in enumerate(transcript.turns, 1):
        if turn.kind == "host":
            result = perform_host_action(runner, turn.action or "", turn.args)
            new = rec.host(turn.action or "", result=result, **turn.args)
            if coverage is not None:
                coverage.sample(runner, loop.instance_id, name)
        else:
            new = rec.person(turn.text)
            loop.send(turn.text)
        if on_turn is not None and on_turn(n, turn, new):
            break
    rec.transcript.expect = end_state(runner, loop.instance_id, rec.normaliser)
    return rec, runner, model


# --------------------------------------------------------------------------- exact


def _step_label(tier0: str | None, result: Any) -> str | None:
    data = result.get("data") if isinstance(result, dict) else None
    step = data.get("step") if isinstance(data, dict) else None
    if isinstance(step, dict) and step.get("title"):
        return f'{step.get("position", "")} "{step["title"]}"'.strip()
    match = _STEP.search(tier0 or "")
    if match:
        return f'{match.group(1)} "{match.group(2)}"'
    return None


def compare_turn(n: int, old: Turn, new: Turn) -> Divergence | None:
    """The first way the replayed turn ``new`` differs from the recorded ``old``, or None."""
    where = old.label()
    if old.kind == "host":
        if old.result is not None and new.result is not None:
            diffs = _diff.differences(old.result, new.result)
            if diffs:
                return Divergence(n, where, "    the host action's result changed:\n" + _diff.render(diffs, indent="      "),
                                  _step_label(None, old.result))
        return None
    for k, (a, b) in enumerate(zip(old.iterations, new.iterations), 1):
        at = f"{where}, model call {k}" if len(old.iterations) > 1 else where
        if a.tier0 is not None and b.tier0 is not None and a.tier0 != b.tier0:
            return Divergence(
                n, at,
                "    the model was sent a different tier-0 line, so the recorded reply answers another question:\n"
                + _diff.text_diff(a.tier0, b.tier0, indent="      "),
                _step_label(a.tier0, None),
            )
        for c_old, c_new in zip(a.calls, b.calls):
            if c_old.result is None:
                return Divergence(n, at, f"    {c_old.name}: no result was recorded (`formctl replay --update` records one)",
                                  _step_label(a.tier0, None))
            # Plain equality first (C speed, and nearly always true); the field-by-field walk
            # only runs to explain a difference.
            diffs = _changes.result_differences(c_old.result, c_new.result) if c_old.result != c_new.result else []
            if diffs:
                return Divergence(
                    n, at,
                    f"    {_changes.call_line(c_old.name, c_old.input)} returned something else:\n" + _diff.render(diffs, indent="      "),
                    _step_label(a.tier0, c_old.result),
                )
    if len(old.iterations) != len(new.iterations) or (old.error or None) != (new.error or None):
        details = f"    recorded {len(old.iterations)} model call(s), the replay made {len(new.iterations)}"
        if new.error and new.error != old.error:
            details += f"\n    the turn ended with an error: {new.error}"
        elif old.error and not new.error:
            details += f"\n    the recording ended with an error the replay did not hit: {old.error}"
        return Divergence(n, where, details)
    return None


def compare_end(old: dict[str, Any] | None, new: dict[str, Any] | None, *, exact: bool = True) -> str | None:
    """The end-state diff (``[expect]``), or None. Non-exact (live) grading accepts extra values."""
    if old is None:
        return None
    if new is None:
        return "    no form instance was started"
    lines: list[str] = []
    for key in ("status", "values", "held", "checkpoints"):
        if key not in old:
            continue
        want, got = old[key], new.get(key)
        if not exact and key in ("values", "held") and isinstance(want, dict) and isinstance(got, dict):
            got = {k: got[k] for k in want if k in got}
        if key == "checkpoints" and not exact:
            want, got = sorted(want or []), sorted(got or [])
        diffs = _diff.differences(want, got, key)
        if diffs:
            lines.append(_diff.render(diffs, indent="    ", labels=_diff.RECORDED if exact else _diff.EXPECTED))
    return "\n".join(lines) or None


def _exact(transcript: Transcript, registry: Any, compiled: Any, *, update: bool, coverage: Any,
           accept_text: bool = False) -> ReplayResult:
    path = transcript.path or transcript.name
    model = _recorded_model(_replies(transcript), transcript.model)
    divergences: list[Divergence] = []

    def on_turn(n: int, old: Turn, new: Turn) -> bool:
        d = compare_turn(n, old, new)
        if d is not None:
            divergences.append(d)
            return not update
        return False

    rec, _, _ = _play(transcript, registry, compiled, lambda runner: model, coverage=coverage, on_turn=on_turn)
    new_t = rec.transcript
    request_changed = _request_diff(transcript, new_t)
    if update:
        return _update_kept_words(transcript, rec.masked(), model, request_changed, accept_text)
    if request_changed and not divergences:
        divergences.insert(0, Divergence(1, transcript.turns[0].label() if transcript.turns else "start", request_changed))
    end = None
    if not divergences:
        end = compare_end(transcript.expect, new_t.expect)
        if end is not None and model.remaining:
            end = f"    {model.remaining} recorded model call(s) were never played\n" + end
    played_all = model.remaining == 0
    text = "\n".join(d.render() for d in divergences[:1])
    if end:
        text = (text + "\n" if text else "") + "  the end state differs:\n" + end
    elif not divergences and not played_all:
        text = f"  {model.remaining} recorded model call(s) were never played"
    return ReplayResult(transcript.name, path, not text, text, "exact", len(transcript.turns))


def _update_kept_words(old: Transcript, new: Transcript, model: Any, request: str | None,
                       accept_text: bool) -> ReplayResult:
    """``--update`` of a real model's transcript: its replies are kept as they were recorded.

    The tool results and ``[expect]`` are the new run's. A reply whose words were written
    after a tool result (or tier-0 line) that has now changed may say something the form no
    longer does: unless ``accept_text``, such a file is not written, and the replies are
    listed so the author can re-record the conversation or accept the words as they are.
    """
    path = old.path or old.name
    end = compare_end(old.expect, new.expect)
    text = _changes.describe(old, new, end=end, request=request)
    if model.remaining:
        text = (text + "\n" if text else "") + f"  {model.remaining} recorded model call(s) were never played"
    stale = _changes.stale_words(old, new)
    if stale and not accept_text:
        text = (text + "\n" if text else "") + (
            f"  {len(stale)} kept model repl{'y was' if len(stale) == 1 else 'ies were'} written after a tool "
            "result that has changed, so the words may no longer fit (not written):\n"
            + "\n".join(s.render() for s in stale)
            + "\n  re-record the conversation (formctl run FORM --record PATH), or keep the words as they are "
              "with --update --accept-text"
        )
        return ReplayResult(old.name, path, False, text, "exact", len(old.turns), stale_words=stale)
    written = _rewrite(old, new)  # sensitive values never reach the file
    return ReplayResult(old.name, path, True, text if written else "", "exact", len(old.turns),
                        updated=written, stale_words=stale)


def _regenerate(transcript: Transcript, registry: Any, compiled: Any, *, coverage: Any) -> ReplayResult:
    """``--update`` of a guided-model transcript: the guided model answers every turn again.

    Its replies follow from the form, so a changed form changes what it says; keeping the old
    words beside the new tool results would write a transcript that contradicts itself.
    """
    path = transcript.path or transcript.name
    rec, _, _ = _play(transcript, registry, compiled, _model_factory(None, transcript.form), coverage=coverage)
    new_t = rec.masked()  # sensitive values never reach the file
    text = _changes.describe(transcript, new_t, end=compare_end(transcript.expect, new_t.expect),
                             request=_request_diff(transcript, new_t))
    written = _rewrite(transcript, new_t)
    return ReplayResult(transcript.name, path, True, text if written else "", GUIDED, len(transcript.turns),
                        updated=written)


def _request_diff(old: Transcript, new: Transcript) -> str | None:
    parts = []
    if old.system is not None and new.system is not None and old.system != new.system:
        parts.append("    the system prompt changed:\n" + _diff.text_diff(old.system, new.system, indent="      "))
    if old.tools_digest and new.tools_digest and old.tools_digest != new.tools_digest:
        parts.append(
            f"    the tool definitions sent to the model changed ({old.tools_digest} → {new.tools_digest}); "
            "if that is intended, `formctl replay --update` records the new ones"
        )
    return "\n".join(parts) or None


def _rewrite(old: Transcript, new: Transcript) -> bool:
    """Write the replayed transcript over the old file; False when the file already said exactly that."""
    new.path = old.path
    new.model = old.model
    new.masked = old.masked or new.masked
    if not old.path:
        return False
    try:
        before = Path(old.path).read_text(encoding="utf-8")
    except OSError:
        before = ""
    header = leading_comments(before) or None
    if before == dumps(new, header=header):
        return False
    dump(new, old.path, header=header)
    return True


# --------------------------------------------------------------------------- live


def _live(transcript: Transcript, registry: Any, compiled: Any, *, model: Any, update: bool, coverage: Any) -> ReplayResult:
    path = transcript.path or transcript.name
    if not transcript.recorded and not opens_conversation(transcript.turns[0] if transcript.turns else None):
        # A hand-written scenario lists answers. `formctl run` opens every conversation with
        # the same first message, so the model speaks first and each line is an answer: so
        # does a live replay (and `--update` records that opening turn).
        transcript = replace(transcript, turns=[Turn("person", text=OPENER), *transcript.turns])
    rec, _, chat_model = _play(transcript, registry, compiled, _model_factory(model, transcript.form), coverage=coverage)
    new_t = rec.transcript
    problems = [f"    turn {n} ({t.label()}): {t.error}" for n, t in enumerate(new_t.turns, 1) if t.error]
    if transcript.expect is None:
        end = "    the transcript has no [expect] table to grade against"
    else:
        end = compare_end(transcript.expect, new_t.expect, exact=False)
    text = ""
    if end:
        text = "  the end state differs from [expect]:\n" + end
        if problems:
            text += "\n  the model reported:\n" + "\n".join(problems)
    passed = not text
    if update and new_t.expect is not None:
        transcript.model = getattr(chat_model, "name", new_t.model)
        written = _rewrite(transcript, rec.masked())  # sensitive values never reach the file
        return ReplayResult(transcript.name, path, passed, text, "live", len(transcript.turns), updated=written)
    return ReplayResult(transcript.name, path, passed, text, "live", len(transcript.turns))


def _model_factory(model: Any, form_id: str) -> Any:
    """How to get the live model for a replay's runner: one given, one named (``pick_model``), or guided."""
    if model is not None and not isinstance(model, str):
        return lambda runner: model

    def build(runner: Any) -> Any:
        from formctl.agent.models import pick_model

        return pick_model(runner, model_name=model, offline=model is None, form_id=form_id)

    return build
