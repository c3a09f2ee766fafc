"""Running a set of scenarios K times per model: the work behind ``formctl eval``.

Models are named as ``formctl run`` names them (``guided``, ``anthropic:NAME``, ...); each
name is checked before the first run, so a missing key is one line, not a failure per run.
Each run gets a fresh store and a fresh person, and is recorded as a transcript under
``record_dir/<scenario>/<model>-<run>.toml``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from formctl.errors import ModelError
from formctl.eval.person import ModelPerson, ScriptedPerson, SimulatedPerson
from formctl.eval.run import ModelFactory, RunResult, run_scenario
from formctl.eval.scenario import Scenario

__all__ = ["ModelSpec", "model_spec", "person_factory", "run_suite"]


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A model to evaluate: its label (as reports and transcripts name it) and how to build it for a runner."""

    label: str
    build: Callable[[Any, str], Any]  # (runner, form_id) -> ChatModel

    def factory(self, form_id: str) -> ModelFactory:
        return lambda runner: self.build(runner, form_id)


def model_spec(name: str) -> ModelSpec:
    """``guided``, ``anthropic:NAME`` (or a bare ``claude-…``), or any ``PROVIDER:NAME`` the
    installed formctl's model choice knows. Raises :class:`ModelError` for one that cannot run."""
    spec = name.strip()
    if spec.lower() in ("guided", "guided:guided"):

        def guided(runner: Any, form_id: str) -> Any:
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

    def chosen(runner: Any, form_id: str) -> Any:
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


def run_suite(
    scenarios: list[Scenario],
    registry: Any,
    models: list[ModelSpec],
    *,
    runs: int,
    make_person: Callable[[Scenario], SimulatedPerson],
    record_dir: str | Path | None,
    on_run: Callable[[RunResult], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> list[RunResult]:
    """Every scenario ``runs`` times per model, in order (scenario, model, run).

    ``should_stop`` is asked before each run: once it says yes, no further run starts and the
    runs so far are returned (the CLI's first Ctrl-C sets it, so a run is never cut in half).
    """
    results: list[RunResult] = []
    for scenario in scenarios:
        for spec in models:
            for n in range(1, runs + 1):
                if should_stop is not None and should_stop():
                    return results
                record = (
                    Path(record_dir).joinpath(*map(_slug, scenario.name.split("/"))) / f"{_slug(spec.label)}-{n}.toml"
                    if record_dir is not None
                    else None
                )
                result = run_scenario(
                    scenario,
                    registry,
                    spec.factory(scenario.form),
                    make_person(scenario),
                    model_label=spec.label,
                    run=n,
                    record=record,
                )
                results.append(result)
                if on_run is not None:
                    on_run(result)
    return results
