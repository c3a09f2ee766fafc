"""One eval run: a scenario's simulated person talks to a model through the real chat loop.

The same pieces a chat uses: a fresh in-memory store, the :class:`~formctl.agent.loop.ChatLoop`
with the form's tools, formctl asking the person about values their words do not hold, and
the transcript recorder writing the conversation as it goes. The person speaks first (the
persona's opening line), then answers each model turn; when the form waits on a checkpoint the
scenario's host decides it (as ``formctl resolve`` would) and the person asks after it. The run
ends when the form is closed (complete or abandoned), when it waits with no host to decide, when
the person leaves, or after ``max_turns`` + :data:`EXTRA_TURNS` turns.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from formctl.agent.person import Person
from formctl.agent.usage import Usage
from formctl.errors import ScenarioError
from formctl.eval.grade import Grade, grade, same_value
from formctl.eval.person import SimulatedPerson
from formctl.eval.scenario import Scenario
from formctl.forms.lifecycle import Status, is_awaiting, is_ended

__all__ = ["EVAL_SUBJECT", "EXTRA_TURNS", "ModelFactory", "RunResult", "check_against_form", "run_scenario"]

EVAL_SUBJECT = "eval-person"
# A run may go past its turn budget (and fail on it), so the report can say by how much; this
# many turns past it, it is stopped: a model stuck in a loop must not run up a bill.
EXTRA_TURNS = 10
# What a scenario may expect the form to end in: any stored status this version writes.
_EXPECTABLE = tuple(s for s in Status if s is not Status.STALE)

ModelFactory = Callable[[Any], Any]  # runner -> ChatModel


@dataclass(slots=True)
class RunResult:
    """What one run did and how it was graded."""

    scenario: str
    model: str
    run: int
    passed: bool
    grade: Grade
    status: str | None
    turns: int = 0
    model_calls: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    usage: Usage = field(default_factory=Usage)
    person_usage: Usage = field(default_factory=Usage)
    seconds: float = 0.0
    transcript: str | None = None
    error: str | None = None  # the model failed, or the run could not start
    values: dict[str, Any] = field(default_factory=dict)


def check_against_form(scenario: Scenario, compiled: Any) -> None:
    """An expectation that names a field or checkpoint the form does not have is the scenario's
    mistake, said before any model is paid for."""
    fields = {f.id for f in compiled.fields}
    checkpoints = {c.id for c in compiled.checkpoints}
    for where, names in (
        ("expect.values", list(scenario.expect.values)),
        ("expect.missing", list(scenario.expect.missing)),
    ):
        for name in names:
            if name not in fields:
                hint = compiled.did_you_mean(name)
                extra = f" (did you mean {', '.join(hint)}?)" if hint else ""
                raise ScenarioError(
                    f"`{where}.{name}`: the form {compiled.id} has no field {name!r}{extra}", path=scenario.path
                )
    for cp in [*(scenario.expect.checkpoints or ()), *(h.checkpoint for h in scenario.host)]:
        if cp not in checkpoints:
            raise ScenarioError(f"the form {compiled.id} has no checkpoint {cp!r}", path=scenario.path)
    if scenario.expect.status not in _EXPECTABLE:
        raise ScenarioError(
            f"`expect.status` {scenario.expect.status!r} is not a status ({', '.join(_EXPECTABLE)})",
            path=scenario.path,
        )


def run_scenario(
    scenario: Scenario,
    registry: Any,
    make_model: ModelFactory,
    person: SimulatedPerson,
    *,
    model_label: str,
    run: int = 1,
    record: str | Path | None = None,
) -> RunResult:
    """Play one run and grade it. ``record``: the transcript file to write (its folder is made)."""
    from formctl.agent.loop import ChatLoop
    from formctl.forms.runner import FormRunner
    from formctl.store.memory import MemoryAdapter
    from formctl.transcripts.play import perform_host_action
    from formctl.transcripts.record import OPENER, Recorder, end_state

    started = time.perf_counter()
    compiled = registry.load(scenario.form)
    check_against_form(scenario, compiled)
    # replaying=True: executors see ctx.replaying and skip outside calls, as in a transcript replay;
    # a simulated person's claim must not reach a real finance system.
    runner = FormRunner(MemoryAdapter("formctl-eval"), registry=registry, subject=EVAL_SUBJECT, replaying=True)
    if record is not None:
        Path(record).parent.mkdir(parents=True, exist_ok=True)
        Path(record).unlink(missing_ok=True)
    model = make_model(runner)
    rec = Recorder(
        record,
        form_id=scenario.form,
        form_version=compiled.version,
        model=model_label,
        subject=EVAL_SUBJECT,
        runner=runner,
    )
    counts = {"model_calls": 0, "tool_calls": 0, "tool_errors": 0}
    said: list[str] = []  # the model's words this turn, as the person reads them

    def on_event(ev: Any) -> None:
        rec.event(ev)
        if ev.kind == "model_call":
            counts["model_calls"] += 1
        elif ev.kind == "model_turn" and ev.reply.text:
            said.append(ev.reply.text)
        elif ev.kind == "tool_result":
            counts["tool_calls"] += 1
            counts["tool_errors"] += int(bool(ev.is_error))

    def ask(question: str) -> str | None:
        answer = person.answer(question)
        if answer is not None:
            rec.answer(answer)
        return answer

    opening = person.opening()
    loop = ChatLoop(
        runner,
        model,
        form_id=scenario.form,
        on_event=on_event,
        person=Person(ask=ask, not_theirs=frozenset({OPENER})),
    )
    limit = scenario.expect.max_turns + EXTRA_TURNS
    turns, error = 0, None
    decided: set[tuple[str, int]] = set()
    text: str | None = opening
    while text is not None and turns < limit:
        said.clear()
        rec.person(text)
        turn = loop.send(text)
        if turn.stop_reason == "cancelled":
            # The loop takes Ctrl-C as "stop this turn" (a chat goes on); nothing but the person at
            # the keyboard cancels an eval's turn, and they mean the whole eval.
            raise KeyboardInterrupt
        turns += 1
        if turn.error and turn.stop_reason == "error":
            error = turn.error
            if turn.code == "key_rejected":
                break
        instance = _instance(runner, loop.instance_id)
        if instance is not None and is_ended(instance):
            break
        if instance is not None and is_awaiting(instance):
            host = scenario.host_for(instance.blocked_on)
            occurrence = (str(instance.blocked_on), instance.version)
            if host is None or occurrence in decided:
                break  # nobody decides it: the run ends waiting
            decided.add(occurrence)
            args: dict[str, Any] = {"checkpoint": host.checkpoint, "actor": host.actor}
            if host.decision == "reject":
                args["fail"] = host.reason or "Rejected."
            elif host.reason:
                args["reason"] = host.reason
            result = perform_host_action(runner, "resolve", args)
            rec.host("resolve", result=result, **args)
            text = person.after_wait()
            continue
        text = person.reply("\n".join(said))
    end = end_state(runner, loop.instance_id or rec.instance_id, rec.normaliser)
    if end is not None:
        end["history"] = _every_value(runner, loop.instance_id or rec.instance_id)
    fields = {f.id: f for f in compiled.fields}
    graded = grade(scenario, end, fields, turns=turns)
    if error and not graded.passed:
        graded.problems.append(f"the model failed: {error}")
    rec.transcript.expect = _regression_expect(scenario, end, graded)
    rec.flush()
    person_usage = getattr(person, "usage", None)
    return RunResult(
        scenario=scenario.name,
        model=model_label,
        run=run,
        passed=graded.passed,
        grade=graded,
        status=end.get("status") if end else None,
        turns=turns,
        model_calls=counts["model_calls"],
        tool_calls=counts["tool_calls"],
        tool_errors=counts["tool_errors"],
        usage=loop.usage,
        person_usage=person_usage if isinstance(person_usage, Usage) else Usage(),
        seconds=time.perf_counter() - started,
        transcript=str(record) if record is not None else None,
        error=error,
        values=dict(end.get("values") or {}) if end else {},
    )


def _instance(runner: Any, instance_id: str | None) -> Any:
    if instance_id is None:
        return None
    try:
        return runner.open_instance(instance_id)
    except Exception:
        return None


def _every_value(runner: Any, instance_id: str | None) -> dict[str, list[Any]]:
    """Every value each field was ever given (its whole answer log, retractions aside), oldest first."""
    instance = _instance(runner, instance_id)
    if instance is None:
        return {}
    return {
        field_id: [e.value for e in log.revisions if not e.retracted and e.value is not None]
        for field_id, log in instance.entries.items()
    }


def _regression_expect(scenario: Scenario, end: dict[str, Any] | None, graded: Grade) -> dict[str, Any] | None:
    """The run transcript's ``[expect]``: what the run *should* have ended with.

    The values the run stored, less anything invented, banned or expected missing, with the
    scenario's expected values over them; the expected status and checkpoints. So replaying
    the file (``formctl replay FILE`` with the recorded model turns, or ``--live`` against a
    model) passes exactly when the conversation ends as the scenario says it should: a failed
    run's file is its regression test.
    """
    if end is None:
        return {"status": scenario.expect.status, "values": dict(scenario.expect.values)}
    bad = {i.field for i in graded.invented} | set(scenario.expect.missing)
    values = {
        k: v
        for k, v in (end.get("values") or {}).items()
        if k not in bad and not any(same_value(b, v) for b in scenario.expect.never_stored)
    }
    values.update(scenario.expect.values)
    out: dict[str, Any] = {"status": scenario.expect.status, "values": values}
    out["checkpoints"] = (
        list(scenario.expect.checkpoints)
        if scenario.expect.checkpoints is not None
        else list(end.get("checkpoints") or [])
    )
    return out
