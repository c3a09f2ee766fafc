"""``formctl eval``: how well does a model collect this form? (docs/eval.md)

Scenario files (:mod:`.scenario`) give a form, a persona and an expectation; a simulated
person (:mod:`.person`) plays the persona to a model through the real chat loop (:mod:`.run`);
each run is graded (:mod:`.grade`) and recorded as a transcript, and the runs add up to
pass^1, pass^k, values right/wrong/missing, invented values and invention attempts, turns,
model calls and SDK retries, tokens and cost (:mod:`.report`). Runs go in parallel
(:mod:`.suite`); a gate decides the exit status (:mod:`.gate`), two result files are compared
(:mod:`.compare`), and one self-contained page shows it all (:mod:`.html`).
"""

from formctl.errors import ScenarioError
from formctl.eval.grade import Grade, grade
from formctl.eval.person import ModelPerson, ScriptedPerson, SimulatedPerson
from formctl.eval.report import pass_hat_k, report_json
from formctl.eval.run import RunLimits, RunResult, RunSetup, run_scenario
from formctl.eval.scenario import Scenario, load_scenario, scenario_files
from formctl.eval.suite import ModelSpec, SuitePlan, model_spec, run_suite

__all__ = [
    "Grade",
    "ModelPerson",
    "ModelSpec",
    "RunLimits",
    "RunResult",
    "RunSetup",
    "Scenario",
    "ScenarioError",
    "ScriptedPerson",
    "SimulatedPerson",
    "SuitePlan",
    "grade",
    "load_scenario",
    "model_spec",
    "pass_hat_k",
    "report_json",
    "run_scenario",
    "run_suite",
    "scenario_files",
]
