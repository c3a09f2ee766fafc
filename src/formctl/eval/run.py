"""One eval run: a scenario's simulated person talks to a model through the real chat loop.

The same pieces a chat uses: a fresh in-memory store, the :class:`~formctl.agent.loop.ChatLoop`
with the form's tools, formctl asking the person about values their words do not hold, and
the transcript recorder writing the conversation as it goes. The person speaks first (the
persona's opening line), then answers each model turn; when the form waits on a checkpoint the
scenario's host decides it (as ``formctl resolve`` would) and the person asks after it. The run
ends when the form is closed (complete or abandoned), when it waits with no host to decide, when
the person leaves, or after ``max_turns`` + :data:`EXTRA_TURNS` turns.

Two budgets end a run early, as a failure with one line (:class:`RunLimits`): its wall time
(``--run-timeout``: the turn under way is cancelled, the model call in flight abandoned) and the model
failing several calls in a row (a dead server is not called until the turn budget runs out).
Anything else that breaks inside a run (a grading bug, a recorder that cannot write, a host
action that raises) fails that run with one line; it never ends the eval.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from formctl.agent.events import ModelCall, ModelTurn, ToolResult
from formctl.agent.person import Person
from formctl.agent.usage import Usage
from formctl.errors import ScenarioError
from formctl.eval.conversation import ChatLine, conversation, invention_attempts
from formctl.eval.grade import Grade, grade, held_by, same_value
from formctl.eval.person import SimulatedPerson
from formctl.eval.scenario import Scenario
from formctl.forms.lifecycle import Status, is_awaiting, is_ended
from formctl.forms.quotes import PersonMessage
from formctl.json_types import JsonObject
from formctl.transcripts.play import ModelFactory

if TYPE_CHECKING:
    from formctl.agent.events import Event
    from formctl.agent.loop import ChatLoop, Turn
    from formctl.forms.compile import CompiledField, CompiledForm
    from formctl.forms.instance import Instance
    from formctl.forms.registry import FormRegistry
    from formctl.forms.runner import FormRunner
    from formctl.transcripts.record import Recorder

__all__ = [
    "EVAL_SUBJECT",
    "EXTRA_TURNS",
    "ModelFactory",
    "RunLimits",
    "RunResult",
    "RunSetup",
    "broken_run",
    "check_against_form",
    "run_scenario",
]

EVAL_SUBJECT = "eval-person"
# A run may go past its turn budget (and fail on it), so the report can say by how much; this
# many turns past it, it is stopped: a model stuck in a loop must not run up a bill.
EXTRA_TURNS = 10
# What a scenario may expect the form to end in: any stored status this version writes.
_EXPECTABLE = tuple(s for s in Status if s is not Status.STALE)


@dataclass(frozen=True, slots=True)
class RunLimits:
    """What may end a run early, as a failure: ``timeout`` seconds of wall time (None: no limit),
    and ``model_errors`` failed model calls in a row (the default 3: a model that failed three
    turns running is down, and each further turn would be another failed, perhaps paid, request)."""

    timeout: float | None = None
    model_errors: int = 3


@dataclass(frozen=True, slots=True)
class RunSetup:
    """How to run one scenario: the model's label (as reports and transcripts name it), which run
    of the scenario this is, the transcript file to write (its folder is made), and the limits."""

    model_label: str
    run: int = 1
    record: str | Path | None = None
    limits: RunLimits = field(default_factory=RunLimits)


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
    sdk_retries: int = 0  # requests the SDK sent again after a failed one (not in model_calls)
    tool_calls: int = 0
    tool_errors: int = 0
    usage: Usage = field(default_factory=Usage)
    person_usage: Usage = field(default_factory=Usage)
    seconds: float = 0.0
    transcript: str | None = None
    error: str | None = None  # the model failed, the run was stopped, or it could not run
    values: JsonObject = field(default_factory=dict)
    expected: JsonObject = field(default_factory=dict)
    conversation: list[ChatLine] = field(default_factory=list)


def broken_run(scenario: Scenario, setup: RunSetup, line: str, seconds: float = 0.0) -> RunResult:
    """A run that could not finish (it raised, or overran its time and did not stop): failed, with ``line``."""
    g = Grade()
    g.fail(line)
    g.missing = list(scenario.expect.values)
    return RunResult(
        scenario=scenario.name,
        model=setup.model_label,
        run=setup.run,
        passed=False,
        grade=g,
        status=None,
        seconds=seconds,
        transcript=str(setup.record) if setup.record is not None else None,
        error=line,
        expected=dict(scenario.expect.values),
    )


def check_against_form(scenario: Scenario, compiled: CompiledForm) -> None:
    """An expectation that names a field or checkpoint the form does not have, or expects a value
    none of the persona's lines hold, is the scenario's mistake, said before any model is paid for."""
    fields = {f.id: f for f in compiled.fields}
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
    _check_persona_holds(scenario, fields)


# Number words a person may give a number in ("forty-one"): a model reads them, the quote checker does not.
_NUMBER_WORDS = re.compile(
    r"\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fifteen|twenty|thirty|forty|"
    r"fifty|sixty|seventy|eighty|ninety|hundred|thousand)\b",
    re.I,
)


def _check_persona_holds(scenario: Scenario, fields: dict[str, CompiledField]) -> None:
    """Each expected value of a field the conversation fills must be in one of the persona's lines:
    otherwise no honest model can pass, and a model that invents it would (a mistyped
    expectation, "221.4" for the "212.40" the person says, is the usual cause).

    Not checked: host fields and derived values (they come from elsewhere); choices and yes/no
    answers (a model reads "found you on Google" as ``web``, "nope" as no); a number when the
    persona gives numbers in words ("forty-one")."""
    from formctl.forms.quotes import value_kind

    texts = scenario.persona.texts()
    words = [PersonMessage(text, n, None) for n, text in enumerate(texts, 1)]
    in_words = any(_NUMBER_WORDS.search(t) for t in texts)
    for field_id, want in scenario.expect.values.items():
        f = fields[field_id]
        if getattr(f, "source", None) == "host" or getattr(f, "derive", None) is not None:
            continue
        found = value_kind(f.schema)
        kind = found.kind if found is not None else None
        if kind in ("choice", "bool", None) or (kind == "number" and in_words):
            continue
        if not held_by(words, want, f.schema):
            raise ScenarioError(
                f"`expect.values.{field_id}` = {want!r}: none of the persona's lines hold it, so no model can "
                "collect it honestly (add it to a fact's `says` or `value`)",
                path=scenario.path,
            )


class _Counts:
    """What the loop's events say about a run: model calls, tool calls and errors."""

    def __init__(self, rec: Recorder, said: list[str]) -> None:
        self.rec, self.said = rec, said
        self.model_calls = self.tool_calls = self.tool_errors = 0

    def __call__(self, ev: Event) -> None:
        self.rec.event(ev)
        if isinstance(ev, ModelCall):
            self.model_calls += 1
        elif isinstance(ev, ModelTurn) and ev.reply.text:
            self.said.append(ev.reply.text)
        elif isinstance(ev, ToolResult):
            self.tool_calls += 1
            self.tool_errors += int(bool(ev.is_error))


class _Run:
    """One run under way: the store, the model, the recorder and the loop, and why it stopped."""

    def __init__(self, scenario: Scenario, registry: FormRegistry, person: SimulatedPerson, setup: RunSetup) -> None:
        from formctl.forms.runner import FormRunner
        from formctl.store.memory import MemoryAdapter
        from formctl.transcripts.record import OPENER, Recorder

        self.scenario, self.person, self.setup = scenario, person, setup
        self.started = time.perf_counter()
        self.compiled = registry.load(scenario.form)
        check_against_form(scenario, self.compiled)
        # replaying=True: executors see ctx.replaying and skip outside calls, as in a transcript replay;
        # a simulated person's claim must not reach a real finance system.
        self.runner = FormRunner(MemoryAdapter("formctl-eval"), registry=registry, subject=EVAL_SUBJECT, replaying=True)
        record = setup.record
        if record is not None:
            Path(record).parent.mkdir(parents=True, exist_ok=True)
            Path(record).unlink(missing_ok=True)
        self.rec = Recorder(
            record,
            form_id=scenario.form,
            form_version=self.compiled.version,
            model=setup.model_label,
            subject=EVAL_SUBJECT,
            runner=self.runner,
        )
        self.said: list[str] = []  # the model's words this turn, as the person reads them
        self.counts = _Counts(self.rec, self.said)
        self.asked: list[tuple[int, str, str | None]] = []  # formctl's questions: (turn index, question, answer)
        self.opener = OPENER
        self.stopped: str | None = None  # why the run was ended early (one line), if it was
        self.error: str | None = None
        self.turns = 0

    def ask(self, question: str) -> str | None:
        answer = self.person.answer(question)
        self.asked.append((len(self.rec.transcript.turns) - 1, question, answer))
        if answer is not None:
            self.rec.answer(answer)
        return answer

    def build_loop(self, make_model: ModelFactory) -> ChatLoop:
        from formctl.agent.loop import ChatLoop

        self.model = make_model(self.runner)
        return ChatLoop(
            self.runner,
            self.model,
            form_id=self.scenario.form,
            on_event=self.counts,
            person=Person(ask=self.ask, not_theirs=frozenset({self.opener})),
        )

    def play(self, loop: ChatLoop) -> None:
        """The conversation, turn by turn, until it ends or a budget ends it."""
        limit = self.scenario.expect.max_turns + EXTRA_TURNS
        failed_in_a_row = 0
        decided: set[tuple[str, int]] = set()
        text: str | None = self.person.opening()
        while text is not None and self.turns < limit and self.stopped is None:
            self.said.clear()
            self.rec.person(text)
            turn = loop.send(text)
            if turn.stop_reason == "cancelled" and self.stopped is None:
                # The loop takes Ctrl-C as "stop this turn" (a chat goes on); nothing but the person
                # at the keyboard cancels an eval's turn, and they mean the whole eval.
                raise KeyboardInterrupt
            self.turns += 1
            failed_in_a_row = failed_in_a_row + 1 if turn.stop_reason == "error" else 0
            if self._model_failed(turn, failed_in_a_row):
                break
            instance = _instance(self.runner, loop.instance_id)
            if instance is not None and is_ended(instance):
                break
            if instance is not None and is_awaiting(instance):
                if not self._decide(instance, decided):
                    break  # nobody decides it: the run ends waiting
                text = self.person.after_wait()
                continue
            text = self.person.reply("\n".join(self.said))

    def _model_failed(self, turn: Turn, in_a_row: int) -> bool:
        """Whether this turn's model failure ends the run (a rejected key; the error budget spent)."""
        if not (turn.error and turn.stop_reason == "error"):
            return False
        self.error = turn.error
        if turn.code == "key_rejected":
            return True
        budget = self.setup.limits.model_errors
        if budget and in_a_row >= budget:
            self.stopped = f"the model failed {in_a_row} calls in a row, so the run was stopped: {turn.error}"
            return True
        return False

    def _decide(self, instance: Instance, decided: set[tuple[str, int]]) -> bool:
        """The scenario's host decision on the checkpoint the form waits on (recorded as a host turn)."""
        from formctl.transcripts.play import perform_host_action

        host = self.scenario.host_for(instance.blocked_on)
        occurrence = (str(instance.blocked_on), instance.version)
        if host is None or occurrence in decided:
            return False
        decided.add(occurrence)
        args: JsonObject = {"checkpoint": host.checkpoint, "actor": host.actor}
        if host.decision == "reject":
            args["fail"] = host.reason or "Rejected."
        elif host.reason:
            args["reason"] = host.reason
        result = perform_host_action(self.runner, "resolve", args)
        self.rec.host("resolve", result=result, **args)
        return True

    def result(self, loop: ChatLoop) -> RunResult:
        """Grade the end state, write the transcript's ``[expect]``, and add it all up."""
        from formctl.transcripts.record import end_state

        instance_id = loop.instance_id or self.rec.instance_id
        end = end_state(self.runner, instance_id, self.rec.normaliser)
        if end is not None:
            end["history"] = self.rec.normaliser.value(_every_value(self.runner, instance_id))
        transcript = self.rec.masked()
        fields = {f.id: f for f in self.compiled.fields}
        graded = grade(self.scenario, end, fields, turns=self.turns, attempts=tuple(invention_attempts(transcript)))
        if self.stopped:
            graded.fail(self.stopped)
        elif self.error and not graded.passed:
            graded.problems.append(f"the model failed: {self.error}")
        self.rec.transcript.expect = _regression_expect(self.scenario, end, graded)
        self.rec.flush()
        person_usage = getattr(self.person, "usage", None)
        # The HTTP requests the model's calls sent, retries included (the loop adds up what each
        # reply and error says; 0 for a model with no HTTP under it, as the guided one).
        attempts = loop.attempts
        return RunResult(
            scenario=self.scenario.name,
            model=self.setup.model_label,
            run=self.setup.run,
            passed=graded.passed,
            grade=graded,
            status=end.get("status") if end else None,
            turns=self.turns,
            model_calls=self.counts.model_calls,
            sdk_retries=max(0, attempts - self.counts.model_calls),
            tool_calls=self.counts.tool_calls,
            tool_errors=self.counts.tool_errors,
            usage=loop.usage,
            person_usage=person_usage if isinstance(person_usage, Usage) else Usage(),
            seconds=time.perf_counter() - self.started,
            transcript=str(self.setup.record) if self.setup.record is not None else None,
            error=self.stopped or self.error,
            values=dict(end.get("values") or {}) if end else {},
            expected=dict(self.scenario.expect.values),
            conversation=conversation(transcript, tuple(self.asked)),
        )


def run_scenario(
    scenario: Scenario,
    registry: FormRegistry,
    make_model: ModelFactory,
    person: SimulatedPerson,
    setup: RunSetup,
) -> RunResult:
    """Play one run and grade it (see the module docstring for how it ends)."""
    run = _Run(scenario, registry, person, setup)
    loop = run.build_loop(make_model)
    timeout = setup.limits.timeout
    timer = None
    if timeout is not None:

        def overran() -> None:
            run.stopped = f"the run took longer than its {timeout:g}s (--run-timeout), so it was stopped"
            loop.cancel()

        timer = threading.Timer(timeout, overran)
        timer.daemon = True
        timer.start()
    try:
        run.play(loop)
    finally:
        if timer is not None:
            timer.cancel()
    return run.result(loop)


def _instance(runner: FormRunner, instance_id: str | None) -> Instance | None:
    if instance_id is None:
        return None
    try:
        return runner.open_instance(instance_id)
    except Exception:
        return None


def _every_value(runner: FormRunner, instance_id: str | None) -> dict[str, list[JsonObject]]:
    """Every value each field was ever given (its whole answer log, retractions aside), oldest
    first, each with how it arrived (``{"value", "how"}``: said, confirmed, assumed, ...)."""
    from formctl.forms.instance import provenance_kind

    instance = _instance(runner, instance_id)
    if instance is None:
        return {}
    return {
        field_id: [
            {"value": e.value, "how": provenance_kind(e.provenance)}
            for e in log.revisions
            if not e.retracted and e.value is not None
        ]
        for field_id, log in instance.entries.items()
    }


def _regression_expect(scenario: Scenario, end: JsonObject | None, graded: Grade) -> JsonObject | None:
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
    out: JsonObject = {"status": scenario.expect.status, "values": values}
    out["checkpoints"] = (
        list(scenario.expect.checkpoints)
        if scenario.expect.checkpoints is not None
        else list(end.get("checkpoints") or [])
    )
    return out
