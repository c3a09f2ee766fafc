"""Running a set of scenarios K times per model: the work behind ``formctl eval``.

Models are named as ``formctl run`` names them (``guided``, ``anthropic:NAME``, ...); each
name is checked before the first run, so a missing key is one line, not a failure per run.
Each run gets a fresh store and a fresh person, and is recorded as a transcript under
``record_dir/<scenario>/<model>-<run>.toml``.

**In parallel** (``jobs``): each run is played on a thread of its own, at most ``jobs`` at a
time. Threads, not processes: a run spends its time waiting on a model's HTTP reply, every
run has its own store, model, person and recorder, and the form registry is shared behind its
lock. The results come back in the order of a sequential eval (scenario, model, run), whatever
order the runs finished in, so ``--jobs 4`` reports exactly what ``--jobs 1`` does for a
deterministic model. A run that raises is a failed run with one line; the others go on. A run
past its ``--run-timeout`` is cancelled (its model call in flight abandoned); one still going
:data:`LEFT_BEHIND_AFTER` seconds later (a model that cannot abandon its call) is reported as
failed and left behind on its daemon thread, so the eval never waits on it.
"""

from __future__ import annotations

import queue
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from formctl.errors import ModelError
from formctl.eval.person import ModelPerson, ScriptedPerson, SimulatedPerson
from formctl.eval.run import ModelFactory, RunLimits, RunResult, RunSetup, broken_run, run_scenario
from formctl.eval.scenario import Scenario

if TYPE_CHECKING:
    from formctl.agent.models.base import ChatModel
    from formctl.forms.registry import FormRegistry
    from formctl.forms.runner import FormRunner

__all__ = ["LEFT_BEHIND_AFTER", "ModelSpec", "SuitePlan", "model_spec", "person_factory", "run_suite"]

# Seconds past its --run-timeout a run may take to stop (the adapters abandon a call within a tick;
# a model that cannot, or a tool call under way, may take longer) before it is left behind as failed.
LEFT_BEHIND_AFTER = 5.0


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A model to evaluate: its label (as reports and transcripts name it) and how to build it for a runner."""

    label: str
    # (runner, form_id) -> the model; the runner is None for a model playing the person, which drives no form
    build: Callable[[FormRunner | None, str], ChatModel]

    def factory(self, form_id: str) -> ModelFactory:
        return lambda runner: self.build(runner, form_id)


def model_spec(name: str) -> ModelSpec:
    """``guided``, ``anthropic:NAME`` (or a bare ``claude-…``), or any ``PROVIDER:NAME`` the
    installed formctl's model choice knows. Raises :class:`ModelError` for one that cannot run."""
    spec = name.strip()
    if spec.lower() in ("guided", "guided:guided"):

        def guided(runner: FormRunner | None, form_id: str) -> ChatModel:
            from formctl.agent.models.guided import GuidedModel

            return GuidedModel(runner, form_id=form_id)

        return ModelSpec("guided", guided)
    from formctl.agent import models

    choice = models.choose_model(spec)  # PROVIDER:NAME, with the environment's keys checked up front
    if choice.provider == "guided":
        # `formctl run` falls back to the guided model without a key; an eval must not: the
        # figures would be the guided model's under another model's name.
        raise ModelError(
            f"--model {spec}: no model key is set (ANTHROPIC_API_KEY, OPENAI_API_KEY or OPENAI_BASE_URL); "
            "set one, or evaluate the offline model with --model guided."
        )

    def chosen(runner: FormRunner | None, form_id: str) -> ChatModel:
        return models.pick_model(runner, model_name=choice.spec, form_id=form_id)

    return ModelSpec(choice.spec, chosen)


def person_factory(person_model: str | None) -> tuple[str, Callable[[Scenario], SimulatedPerson]]:
    """Who plays the person: the scripted person, or a model named like ``--model`` (not guided:
    the guided model interviews, it cannot play a person)."""
    if person_model is None:
        return "scripted", lambda s: ScriptedPerson(s.persona)
    spec = model_spec(person_model)
    if spec.label == "guided":
        raise ModelError(
            "The guided model interviews; it cannot play a person. Leave out --person-model for the scripted "
            "person, or name a model (anthropic:NAME)."
        )
    return spec.label, lambda s: ModelPerson(s.persona, spec.build(None, s.form))


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "model"


@dataclass(frozen=True, slots=True)
class SuitePlan:
    """How to run a set of scenarios: ``runs`` per scenario and model, who plays the person, where
    transcripts go (None: nowhere), how many runs at once, and each run's limits."""

    runs: int
    make_person: Callable[[Scenario], SimulatedPerson]
    record_dir: str | Path | None = None
    jobs: int = 1
    limits: RunLimits = field(default_factory=RunLimits)


@dataclass(slots=True)
class _Job:
    index: int
    scenario: Scenario
    spec: ModelSpec
    setup: RunSetup
    started: float = 0.0


def _jobs(scenarios: list[Scenario], models: list[ModelSpec], plan: SuitePlan) -> list[_Job]:
    jobs: list[_Job] = []
    for scenario in scenarios:
        for spec in models:
            for n in range(1, plan.runs + 1):
                record = (
                    Path(plan.record_dir).joinpath(*map(_slug, scenario.name.split("/")))
                    / f"{_slug(spec.label)}-{n}.toml"
                    if plan.record_dir is not None
                    else None
                )
                setup = RunSetup(spec.label, run=n, record=record, limits=plan.limits)
                jobs.append(_Job(len(jobs), scenario, spec, setup))
    return jobs


def _play(job: _Job, registry: FormRegistry, person: SimulatedPerson, done: queue.Queue[tuple[int, RunResult]]) -> None:
    """One run on its own thread; whatever happens, one result goes to ``done``."""
    try:
        result = run_scenario(job.scenario, registry, job.spec.factory(job.scenario.form), person, job.setup)
    except BaseException as exc:  # noqa: BLE001 - a run that breaks is one failed run, never the eval's end
        line = f"the run could not finish: {type(exc).__name__}: {' '.join(str(exc).split())}".rstrip(": ")
        result = broken_run(job.scenario, job.setup, line, time.perf_counter() - job.started)
    done.put((job.index, result))


def run_suite(
    scenarios: list[Scenario],
    registry: FormRegistry,
    models: list[ModelSpec],
    plan: SuitePlan,
    on_run: Callable[[RunResult], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> list[RunResult]:
    """Every scenario ``plan.runs`` times per model, ``plan.jobs`` at a time; the results in the
    order (scenario, model, run). ``on_run`` is called on this thread as each run finishes.

    ``should_stop`` is asked before each run starts: once it says yes, no further run starts,
    the runs under way finish, and the results so far are returned (the CLI's first Ctrl-C sets
    it, so a run is never cut in half). A KeyboardInterrupt here (a second Ctrl-C) leaves at once.
    """
    suite = _Suite(_jobs(scenarios, models, plan), registry, plan, on_run)
    while suite.pending or suite.running:
        while (
            suite.pending and len(suite.running) < max(1, plan.jobs) and not (should_stop is not None and should_stop())
        ):
            suite.start(suite.pending.popleft())
        if not suite.running:
            break  # told to stop, and nothing is under way
        suite.wait()
    return [suite.results[i] for i in sorted(suite.results)]


class _Suite:
    """The runs of one eval: those waiting, those under way on their threads, and the results so far
    (by job index). Only the thread that calls :func:`run_suite` touches it; a run's thread hands its
    result over through ``done``."""

    def __init__(
        self, jobs: list[_Job], registry: FormRegistry, plan: SuitePlan, on_run: Callable[[RunResult], None] | None
    ) -> None:
        self.pending = deque(jobs)
        self.running: dict[int, _Job] = {}
        self.results: dict[int, RunResult] = {}
        self.done: queue.Queue[tuple[int, RunResult]] = queue.Queue()
        self.registry, self.plan, self.on_run = registry, plan, on_run

    def start(self, job: _Job) -> None:
        """Play ``job`` on a thread of its own, with a person of its own."""
        job.started = time.perf_counter()
        self.running[job.index] = job
        person = self.plan.make_person(job.scenario)
        threading.Thread(
            target=_play, args=(job, self.registry, person, self.done), name=f"formctl-eval-{job.index}", daemon=True
        ).start()

    def wait(self) -> None:
        """Take the next run's result, or after a fifth of a second leave the overdue runs behind."""
        try:
            self.finished(*self.done.get(timeout=0.2))
        except queue.Empty:
            timeout = self.plan.limits.timeout
            for job in _left_behind(self.running.values(), timeout):
                line = (
                    f"the run took longer than its {timeout:g}s (--run-timeout) and did not stop "
                    "(a model call that does not return); it was left behind"
                )
                self.finished(job.index, broken_run(job.scenario, job.setup, line, time.perf_counter() - job.started))

    def finished(self, index: int, result: RunResult) -> None:
        if self.running.pop(index, None) is None:
            return  # a run already reported as left behind finished after all: its result is not used
        self.results[index] = result
        if self.on_run is not None:
            self.on_run(result)


def _left_behind(running: Iterable[_Job], timeout: float | None) -> list[_Job]:
    if timeout is None:
        return []
    now = time.perf_counter()
    return [job for job in list(running) if now - job.started > timeout + LEFT_BEHIND_AFTER]
