"""``eval``: run scenario files against one or more models and measure how well each collects the form
(formctl.eval, imported when the command runs; docs/eval.md)."""

import signal
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, List, Optional

import typer

from formctl.cli.base import _Command, _example, _fail, _print_json, app
from formctl.json_types import JsonObject

if TYPE_CHECKING:
    from pathlib import Path

    from formctl.eval.gate import Gate
    from formctl.eval.run import RunResult
    from formctl.eval.scenario import Scenario
    from formctl.eval.suite import ModelSpec, SuitePlan
    from formctl.forms.registry import FormRegistry


_PathsArg = typer.Argument(
    ..., metavar="PATHS", help="Scenario files, or folders of them (or: compare OLD.json NEW.json)."
)
_ModelOpt = typer.Option(
    [], "--model", metavar="MODEL", help="A model to evaluate (repeatable): guided, anthropic:NAME, ..."
)
_RunsOpt = typer.Option(1, "--runs", "-k", min=1, metavar="K", help="Runs per scenario and model (pass^K).")
_JobsOpt = typer.Option(1, "--jobs", "-j", min=1, metavar="N", help="Runs played at once.")
_RunTimeoutOpt = typer.Option(
    None, "--run-timeout", min=0.001, metavar="S", help="Seconds one run may take; past it, it fails."
)
_ModelErrorsOpt = typer.Option(
    3, "--model-errors", min=0, metavar="N", help="Failed model calls in a row that end a run (0: no limit)."
)
_MinPassOpt = typer.Option(
    None, "--min-pass", metavar="P", help="Exit 0 only if each model's pass^1 is at least P (0.9 or 90%)."
)
_MinPassKOpt = typer.Option(None, "--min-pass-k", metavar="P", help="Exit 0 only if each model's pass^K is at least P.")
_PersonModelOpt = typer.Option(
    None, "--person-model", metavar="MODEL", help="A model plays the person [default: the scripted person]."
)
_JsonOpt = typer.Option(False, "--json", help="Print the whole report as JSON (schema: docs/eval.md).")
_JunitOpt = typer.Option(None, "--junit", metavar="FILE", help="Write a JUnit XML report.")
_HtmlOpt = typer.Option(None, "--html", metavar="FILE", help="Write the report as one HTML page.")
_RecordDirOpt = typer.Option(
    None, "--record-dir", metavar="DIR", help="Where each run's transcript goes [default: .formctl/eval/TIME]."
)
_PricesOpt = typer.Option(
    None, "--prices", metavar="FILE", help="A TOML price table over the built-in one (docs/eval.md)."
)
_FormsOpt = typer.Option(
    None,
    "--forms",
    envvar="FORMCTL_FORMS",
    metavar="DIR",
    help="Folder holding registry.toml [default: ./forms, else the nearest forms/ above the scenarios].",
)


@dataclass(frozen=True)
class _Outputs:
    """Where the report goes besides the table: ``--json`` (instead of it), ``--junit``, ``--html``."""

    as_json: bool
    junit: Optional[str]
    html: Optional[str]

    def check(self) -> None:
        for option, given in (("--junit", self.junit), ("--html", self.html)):
            if given:
                _check_writable(given, option)  # found now, not after an hour of paid runs


@app.command(
    "eval",
    cls=_Command,
    epilog=_example(
        "formctl eval scenarios/ --model guided --runs 3 --jobs 4 --html report.html --min-pass 0.9",
        "formctl eval scenarios/travel_claim --model anthropic:claude-sonnet-4-6 --runs 5 --junit eval.xml",
        "formctl eval scenarios/ --model guided --model anthropic:claude-haiku-4-5 --json > eval.json",
        "formctl eval scenarios/ --model anthropic:claude-sonnet-4-6 --person-model anthropic:claude-haiku-4-5",
        "formctl eval compare main.json eval.json      # what changed, regressions first (exit 1 on one)",
    ),
)
def eval_command(
    paths: List[str] = _PathsArg,
    model: List[str] = _ModelOpt,
    runs: int = _RunsOpt,
    jobs: int = _JobsOpt,
    run_timeout: Optional[float] = _RunTimeoutOpt,
    model_errors: int = _ModelErrorsOpt,
    min_pass: Optional[str] = _MinPassOpt,
    min_pass_k: Optional[str] = _MinPassKOpt,
    person_model: Optional[str] = _PersonModelOpt,
    as_json: bool = _JsonOpt,
    junit: Optional[str] = _JunitOpt,
    html: Optional[str] = _HtmlOpt,
    record_dir: Optional[str] = _RecordDirOpt,
    prices: Optional[str] = _PricesOpt,
    forms: Optional[str] = _FormsOpt,
) -> None:
    """Measure how well a model collects a form: each scenario's simulated person talks to each model K times.

    Prints a table (pass^1, pass^K, values right/wrong/missing, invented values, invention
    attempts, turns, model calls, SDK retries, tool errors, tokens, cost, time) and one summary
    line per model; every run is recorded as a transcript, and each failed run is listed with
    what went wrong and the command that replays it as a regression test. Exits 1 when any run
    failed, or, with --min-pass / --min-pass-k, when a model misses the bar.

    `formctl eval compare OLD.json NEW.json` compares two --json reports instead.
    """
    from formctl.eval.report import load_prices, report_json
    from formctl.eval.run import RunLimits
    from formctl.eval.suite import SuitePlan, person_factory

    if paths[0] == "compare":
        _compare(paths[1:], as_json)
        return
    gate = _gate(min_pass, min_pass_k, runs)
    outputs = _Outputs(as_json, junit, html)
    outputs.check()
    scenarios, registry, specs = _load(paths, model, forms)
    person_label, make_person = person_factory(person_model)
    price_table = load_prices(prices)
    folder = _record_folder(record_dir)
    plan = SuitePlan(runs, make_person, folder, jobs, RunLimits(run_timeout, model_errors))
    results, interrupted = _run_with_progress(scenarios, registry, specs, plan)
    report = report_json(results, k=runs, prices=price_table, person=person_label)
    report["record_dir"] = str(folder)
    met, gate_lines = gate.judge(report) if gate.given else (True, [])
    _publish(report, outputs, gate_lines, runs)
    if interrupted:
        raise typer.Exit(130)
    if not met or (not gate.given and any(not r.passed for r in results)):
        raise typer.Exit(1)


def _gate(min_pass: Optional[str], min_pass_k: Optional[str], runs: int) -> "Gate":
    """The bars ``--min-pass`` and ``--min-pass-k`` set, each checked before any run."""
    from formctl.eval.gate import Gate

    gate = Gate(_share(min_pass, "--min-pass"), _share(min_pass_k, "--min-pass-k"))
    if gate.min_pass_k is not None and runs < 2:
        _fail("--min-pass-k needs --runs 2 or more (with one run, pass^K is pass^1: use --min-pass)", 2)
    return gate


def _record_folder(record_dir: Optional[str]) -> "Path":
    """The folder each run's transcript goes to, made now: one that cannot be made is one line before any run."""
    from pathlib import Path

    folder = Path(record_dir) if record_dir else Path(".formctl") / "eval" / time.strftime("%Y%m%d-%H%M%S")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _fail(f"--record-dir {folder}: cannot make that folder ({exc.strerror or exc})", 2)
    return folder


def _publish(report: JsonObject, outputs: _Outputs, gate_lines: list[str], runs: int) -> None:
    """The report as --junit and --html asked, then on stdout: JSON, or the table and its lines."""
    from pathlib import Path

    from formctl.eval.report import write_junit

    if outputs.junit:
        write_junit(outputs.junit, report)
    if outputs.html:
        from formctl.eval.html import page

        Path(outputs.html).write_text(page(report, gate_lines=gate_lines), encoding="utf-8")
    if outputs.as_json:
        _print_json(report)
    else:
        _print_table(report, outputs.html, gate_lines, runs)
    if outputs.as_json and gate_lines:
        sys.stderr.write("\n".join(gate_lines) + "\n")
    sys.stdout.flush()


def _print_table(report: JsonObject, html: Optional[str], gate_lines: list[str], runs: int) -> None:
    """The table, the failed runs, where the transcripts are, a line per model, the page and the gate."""
    from rich.console import Console

    from formctl.eval.report import failures, summary_line, table

    # A pipe or a CI log is not 80 columns of terminal: give the table room for its columns.
    out = Console() if Console().is_terminal else Console(width=200)
    out.print(table(report))
    folder = report["record_dir"]
    lines = [*failures(report), f"transcripts: {folder}", *(summary_line(m, runs) for m in report["models"])]
    for line in [*lines, *([f"report: {html}"] if html else []), *gate_lines]:
        out.print(line, markup=False, highlight=False, soft_wrap=True)


def _share(text: Optional[str], option: str) -> Optional[float]:
    from formctl.eval.gate import parse_share

    if text is None:
        return None
    try:
        return parse_share(text)
    except ValueError:
        _fail(f"{option} {text}: give a share from 0 to 1 (0.9) or a percentage (90%)", 2)


def _check_writable(path: str, option: str) -> None:
    """A report file formctl could not write is one line before any run, not a lost report after."""
    from pathlib import Path

    target = Path(path)
    if target.is_dir():
        _fail(f"{option} {path}: that is a folder; name a file", 2)
    existed = target.exists()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        _fail(f"{option} {path}: cannot write there ({exc.strerror or exc})", 2)
    if not existed:
        target.unlink(missing_ok=True)


def _load(
    paths: List[str], model: List[str], forms: Optional[str]
) -> "tuple[list[Scenario], FormRegistry, list[ModelSpec]]":
    """The scenarios, the registry and the models, every mistake said before any run."""
    from formctl.eval.run import check_against_form
    from formctl.eval.scenario import load_scenario, scenario_files
    from formctl.eval.suite import model_spec
    from formctl.transcripts.replay import find_registry

    if not model:
        _fail("name a model to evaluate: --model guided, --model anthropic:NAME (repeatable)", 2)
    specs = [model_spec(m) for m in model]  # a model that cannot run is one line, before any run
    files = scenario_files(paths)
    if not files:
        _fail("no scenario files (TOML with `eval = 1`) in " + ", ".join(paths), 2)
    scenarios = [load_scenario(f) for f in files]
    registry = find_registry(files[0], forms)
    for s in scenarios:  # an expectation the form or the persona cannot meet: said before any model is paid for
        check_against_form(s, registry.load(s.form))
    return scenarios, registry, specs


def _run_with_progress(
    scenarios: "list[Scenario]", registry: "FormRegistry", specs: "list[ModelSpec]", plan: "SuitePlan"
) -> "tuple[list[RunResult], bool]":
    """Run the suite under one progress bar (stderr, a terminal only); Ctrl-C as docs/eval.md says.

    The first Ctrl-C lets the runs under way finish and starts no other (a live eval costs money,
    and a run cut in half measures nothing); a second stops at once. Either way the runs that
    finished are reported."""
    from formctl.eval.suite import run_suite

    watch = _Watch(len(scenarios) * len(specs) * plan.runs, plan.jobs)
    interrupted = False
    with watch.progress:
        previous = signal.signal(signal.SIGINT, watch.on_sigint)
        try:
            run_suite(scenarios, registry, specs, plan, on_run=watch.on_run, should_stop=watch.should_stop)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            signal.signal(signal.SIGINT, previous)
    interrupted = interrupted or watch.should_stop()
    if interrupted:
        watch.say(f"interrupted: {len(watch.results)} of {watch.total} runs finished")
        if not watch.results:
            raise typer.Exit(130)
    return sorted(watch.results, key=lambda r: _position(r, scenarios, specs)), interrupted


class _Watch:
    """What the person sees of a suite under way (a progress bar on stderr, a terminal only), the
    runs finished so far, and the Ctrl-Cs pressed."""

    def __init__(self, total: int, jobs: int) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.total = total
        self.results: list[RunResult] = []
        self._sigints = 0
        self._err = Console(stderr=True)
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self._err,
            transient=True,
            disable=not self._err.is_terminal,
        )
        self._task = self.progress.add_task(f"eval · {jobs} at a time" if jobs > 1 else "eval", total=total)

    def on_run(self, r: "RunResult") -> None:
        self.results.append(r)
        self.progress.update(self._task, advance=1, description=f"{r.scenario} · {r.model}")

    def on_sigint(self, signum: int, frame: object) -> None:
        """The first Ctrl-C: start no other run; the second: stop now."""
        self._sigints += 1
        if self._sigints > 1:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            raise KeyboardInterrupt
        self.say("stopping after the runs under way (Ctrl-C again to stop now)")

    def should_stop(self) -> bool:
        return self._sigints > 0

    def say(self, line: str) -> None:
        self._err.print(line, markup=False, highlight=False)


def _position(r: "RunResult", scenarios: "list[Scenario]", specs: "list[ModelSpec]") -> tuple[int, int, int]:
    """Where a run stands in a sequential eval, (scenario, model, run): the report's order, whatever
    order the runs finished in."""
    s = next((i for i, sc in enumerate(scenarios) if sc.name == r.scenario), len(scenarios))
    m = next((i for i, sp in enumerate(specs) if sp.label == r.model), len(specs))
    return s, m, r.run


def _compare(files: List[str], as_json: bool) -> None:
    """``formctl eval compare OLD.json NEW.json``: Markdown on stdout, exit 1 on a regression."""
    from pathlib import Path

    from formctl.eval.compare import compare, markdown, read_report

    if len(files) != 2:
        _fail("compare takes two result files: formctl eval compare OLD.json NEW.json", 2)
    reports = []
    for name in files:
        try:
            text = Path(name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            _fail(f"{name}: cannot read it ({getattr(exc, 'strerror', None) or exc})", 2)
        try:
            reports.append(read_report(text, name))
        except ValueError as exc:
            _fail(str(exc), 2)
    result = compare(reports[0], reports[1], old_name=files[0], new_name=files[1])
    if as_json:
        _print_json(
            {
                "regressions": [
                    {"scenario": c.scenario, "model": c.model, "worse": [w for _, w in sorted(c.worse)], "why": c.why}
                    for c in result.regressions
                ],
                "improved": [
                    {"scenario": c.scenario, "model": c.model, "better": c.better} for c in result.improvements
                ],
                "added": [{"scenario": c.scenario, "model": c.model} for c in result.added],
                "gone": [{"scenario": c.scenario, "model": c.model} for c in result.gone],
                "unchanged": result.unchanged,
            }
        )
    else:
        sys.stdout.write(markdown(result))
    sys.stdout.flush()
    if result.regressions:
        raise typer.Exit(1)
