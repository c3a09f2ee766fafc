"""``eval``: run scenario files against one or more models and measure how well each collects the form
(formctl.eval, imported when the command runs; docs/eval.md)."""

import signal
from typing import Any, List, Optional

import typer

from formctl.cli.base import _Command, _example, _fail, _print_json, app


@app.command(
    "eval",
    cls=_Command,
    epilog=_example(
        "formctl eval scenarios/ --model guided --runs 3",
        "formctl eval scenarios/travel_claim --model anthropic:claude-sonnet-4-6 --runs 5 --junit eval.xml",
        "formctl eval scenarios/ --model guided --model anthropic:claude-haiku-4-5 --json > eval.json",
        "formctl eval scenarios/ --model anthropic:claude-sonnet-4-6 --person-model anthropic:claude-haiku-4-5",
    ),
)
def eval_command(
    paths: List[str] = typer.Argument(..., metavar="PATHS", help="Scenario files, or folders of them."),
    model: List[str] = typer.Option(
        [], "--model", metavar="MODEL", help="A model to evaluate (repeatable): guided, anthropic:NAME, ..."
    ),
    runs: int = typer.Option(1, "--runs", "-k", min=1, metavar="K", help="Runs per scenario and model (pass^K)."),
    person_model: Optional[str] = typer.Option(
        None, "--person-model", metavar="MODEL", help="A model plays the person [default: the scripted person]."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the whole report as JSON (schema: docs/eval.md)."),
    junit: Optional[str] = typer.Option(None, "--junit", metavar="FILE", help="Write a JUnit XML report."),
    record_dir: Optional[str] = typer.Option(
        None,
        "--record-dir",
        metavar="DIR",
        help="Where each run's transcript goes [default: .formctl/eval/TIME].",
    ),
    prices: Optional[str] = typer.Option(
        None, "--prices", metavar="FILE", help="A TOML price table over the built-in one (docs/eval.md)."
    ),
    forms: Optional[str] = typer.Option(
        None,
        "--forms",
        envvar="FORMCTL_FORMS",
        metavar="DIR",
        help="Folder holding registry.toml [default: ./forms, else the nearest forms/ above the scenarios].",
    ),
) -> None:
    """Measure how well a model collects a form: each scenario's simulated person talks to each model K times.

    Prints a table (pass^1, pass^K, values right/wrong/missing, invented values, turns, model
    calls, tool errors, tokens, cost, time) and one summary line per model; every run is
    recorded as a transcript, and each failed run is listed with what went wrong and the
    command that replays it as a regression test. Exits 1 when any run failed.
    """
    import sys
    import time
    from pathlib import Path

    from formctl.eval.report import failures, load_prices, report_json, summary_line, table, write_junit
    from formctl.eval.scenario import load_scenario, scenario_files
    from formctl.eval.suite import model_spec, person_factory, run_suite
    from formctl.transcripts.replay import find_registry

    if not model:
        _fail("name a model to evaluate: --model guided, --model anthropic:NAME (repeatable)", 2)
    specs = [model_spec(m) for m in model]  # a model that cannot run is one line, before any run
    person_label, make_person = person_factory(person_model)
    price_table = load_prices(prices)
    files = scenario_files(paths)
    if not files:
        _fail("no scenario files (TOML with `eval = 1`) in " + ", ".join(paths), 2)
    scenarios = [load_scenario(f) for f in files]
    registry = find_registry(files[0], forms)
    for s in scenarios:  # an expectation naming a field the form lacks: said before any model is paid for
        from formctl.eval.run import check_against_form

        check_against_form(s, registry.load(s.form))
    folder = Path(record_dir) if record_dir else Path(".formctl") / "eval" / time.strftime("%Y%m%d-%H%M%S")

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    err = Console(stderr=True)
    total = len(scenarios) * len(specs) * runs
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    )
    results: list[Any] = []
    interrupted = False
    with progress:
        task = progress.add_task("eval", total=total)

        def on_run(r: object) -> None:
            results.append(r)
            progress.update(task, advance=1, description=f"{getattr(r, 'scenario', '')} · {getattr(r, 'model', '')}")

        # Ctrl-C: report the runs that finished (a live eval costs money). The first Ctrl-C lets
        # the run under way finish and starts no other: a KeyboardInterrupt raised inside a run
        # would be taken by the chat loop as the person stopping a turn (docs/chat.md), and the
        # suite would go on. A second Ctrl-C stops at once.
        asked: list[int] = []

        def on_sigint(signum: int, frame: object) -> None:
            asked.append(signum)
            if len(asked) > 1:
                signal.signal(signal.SIGINT, signal.default_int_handler)
                raise KeyboardInterrupt
            err.print("stopping after the run under way (Ctrl-C again to stop now)", markup=False, highlight=False)

        previous = signal.signal(signal.SIGINT, on_sigint)
        try:
            run_suite(
                scenarios,
                registry,
                specs,
                runs=runs,
                make_person=make_person,
                record_dir=folder,
                on_run=on_run,
                should_stop=lambda: bool(asked),
            )
        except KeyboardInterrupt:
            interrupted = True
        finally:
            signal.signal(signal.SIGINT, previous)
        interrupted = interrupted or bool(asked)
    if interrupted:
        err.print(f"interrupted: {len(results)} of {total} runs finished", markup=False, highlight=False)
        if not results:
            raise typer.Exit(130)
    report = report_json(results, k=runs, prices=price_table, person=person_label)
    report["record_dir"] = str(folder)
    if junit:
        write_junit(junit, report)
    if as_json:
        _print_json(report)
    else:
        # A pipe or a CI log is not 80 columns of terminal: give the table room for its columns.
        out = Console() if Console().is_terminal else Console(width=200)
        out.print(table(report))
        for line in failures(report):
            out.print(line, markup=False, highlight=False, soft_wrap=True)
        out.print(f"transcripts: {folder}", markup=False, highlight=False, soft_wrap=True)
        for m in report["models"]:
            out.print(summary_line(m, runs), markup=False, highlight=False, soft_wrap=True)
    sys.stdout.flush()
    if interrupted:
        raise typer.Exit(130)
    if any(not r.passed for r in results):
        raise typer.Exit(1)
