"""``formctl replay``: replay transcripts as regression tests of the forms.

Imported by the CLI at start-up, so only typer and the standard library load here; the
engine, the chat loop and the models load inside the command.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import typer

from formctl.transcripts.paths import transcript_files

if TYPE_CHECKING:
    from formctl.transcripts.compare import ReplayResult
    from formctl.transcripts.coverage import Coverage
    from formctl.transcripts.replay import ReplayOptions

# "\b" stops click from re-wrapping the example lines.
EXAMPLES = (
    "\b\nExamples:\n"
    "  formctl replay transcripts/                    # all of them, exact and offline\n"
    "  formctl replay transcripts/cap.toml --update   # accept the new behaviour, show what changed\n"
    "  formctl replay transcripts/ --update --accept-text   # keep a real model's words as recorded\n"
    "  formctl replay hand-written.toml --live        # play it to the guided model, grade [expect]\n"
    "  formctl replay transcripts/ --junit report.xml --coverage\n"
)


def write_junit(path: Path, results: list[ReplayResult], *, suite: str = "formctl-transcripts") -> None:
    """A JUnit XML report (one testcase per transcript, the diff as the failure text)."""
    import xml.etree.ElementTree as ET

    failures = sum(1 for r in results if not r.passed)
    total = sum(r.seconds for r in results)
    root = ET.Element("testsuites", name=suite, tests=str(len(results)), failures=str(failures), time=f"{total:.3f}")
    node = ET.SubElement(
        root, "testsuite", name=suite, tests=str(len(results)), failures=str(failures), errors="0", time=f"{total:.3f}"
    )
    for r in results:
        case = ET.SubElement(node, "testcase", classname=f"transcripts.{r.mode}", name=r.path, time=f"{r.seconds:.3f}")
        if not r.passed:
            first = next((line.strip() for line in r.diff.splitlines() if line.strip()), "diverged")
            fail = ET.SubElement(case, "failure", message=first[:200], type="TranscriptDivergence")
            fail.text = r.diff
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def register(app: typer.Typer) -> None:
    """Add the ``replay`` command to the formctl CLI."""
    app.command("replay", epilog=EXAMPLES)(replay_command)


def replay_command(
    paths: list[str] = typer.Argument(..., metavar="FILES|DIRS", help="Transcript files, or folders of them."),
    update: bool = typer.Option(
        False,
        "--update",
        help="Rewrite the transcripts from this run (the guided model's turns are made again); show what changed.",
    ),
    accept_text: bool = typer.Option(
        False,
        "--accept-text",
        help="With --update: keep a real model's recorded "
        "words even where the tool results they followed have changed.",
    ),
    live: bool = typer.Option(False, "--live", help="Play the person's turns to a model and grade on [expect]."),
    model: str | None = typer.Option(
        None,
        "--model",
        envvar="FORMCTL_MODEL",
        metavar="PROVIDER:NAME",
        help="With --live: the model, as formctl run takes it (anthropic:NAME, openai:NAME, guided); default guided.",
    ),
    offline: bool = typer.Option(
        False, "--offline", help="With --live: the offline guided model, even with a model key set."
    ),
    junit: str | None = typer.Option(None, "--junit", metavar="PATH", help="Write a JUnit XML report."),
    coverage: bool = typer.Option(
        False, "--coverage", help="Report steps, fields, gates, checkpoints and effects exercised."
    ),
    forms: str | None = typer.Option(
        None,
        "--forms",
        envvar="FORMCTL_FORMS",
        metavar="DIR",
        help="Folder holding registry.toml [default: ./forms, else the nearest forms/ above the "
        "transcript, up to its project root].",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Only failures and the summary line."),
) -> None:
    """Replay recorded transcripts against the current forms; exit 1 if any diverges.

    The forms are --forms (or FORMCTL_FORMS) when given, else ./forms as for every other
    command; only where the current folder has none, the nearest forms/registry.toml above
    the transcript, looking no higher than its project root (a folder holding .git or
    pyproject.toml).
    """
    from formctl.transcripts.coverage import Coverage
    from formctl.transcripts.replay import ReplayOptions

    files = _files_to_replay(paths, update=update, accept_text=accept_text)
    live_model = _live_model(model) if live and not offline else None
    cov = Coverage() if coverage else None
    options = ReplayOptions(update=update, live=live, model=live_model, coverage=cov, accept_text=accept_text)
    results = _replay_each(files, options, forms=forms, quiet=quiet)
    _summarise(results, options.coverage, junit=junit)


def _replay_each(files: list[Path], options: ReplayOptions, *, forms: str | None, quiet: bool) -> list[ReplayResult]:
    """Replay the files in order, saying each one's outcome as it finishes."""
    from formctl.transcripts.replay import replay_file

    results = []
    for path in files:
        r = replay_file(path, options, forms=forms)
        results.append(r)
        _say_outcome(r, update=options.update, quiet=quiet)
    return results


def _summarise(results: list[ReplayResult], coverage: Coverage | None, *, junit: str | None) -> None:
    """The JUnit report and the coverage when asked for, then the count; exit 1 if any failed."""
    if junit is not None:
        write_junit(Path(junit), results)
    if coverage is not None:
        typer.echo(coverage.render())
    passed = sum(1 for r in results if r.passed)
    failed = len(results) - passed
    typer.echo(f"{passed} passed, {failed} failed")
    if failed:
        raise typer.Exit(1)


def _refuse(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def _files_to_replay(paths: list[str], *, update: bool, accept_text: bool) -> list[Path]:
    """The transcripts named, folders searched; a missing one, none at all, or --accept-text
    without --update end the command with one line and exit 2."""
    files = transcript_files([Path(p) for p in paths])
    missing = [p for p in files if not p.exists()]
    if missing:
        _refuse(f"no such file or folder: {missing[0]}")
    if not files:
        _refuse("no transcripts (*.toml) found in " + ", ".join(map(str, paths)))
    if accept_text and not update:
        _refuse("--accept-text goes with --update")
    return files


def _live_model(model: str | None) -> str | None:
    """The model --live plays to, checked before any transcript runs (None: the guided model)."""
    if not model:
        return None
    from formctl.agent.models import choose_model
    from formctl.errors import ModelError

    try:
        choice = choose_model(model)
    except ModelError as exc:
        _refuse(exc.message)
    if choice.provider == "guided" and model.strip().lower() != "guided":
        typer.echo(f"note: no model key is set, so --model {model} falls back to the guided model", err=True)
    return model


def _say_outcome(r: ReplayResult, *, update: bool, quiet: bool) -> None:
    """One transcript's line (and its diff, when it changed or failed)."""
    mode = "" if r.mode == "exact" else f" ({r.mode})"
    if update and r.updated:
        how = " (the guided model's turns made again)" if r.mode == "guided" else mode
        if r.stale_words:
            how += f" (kept {len(r.stale_words)} model repl{'y' if len(r.stale_words) == 1 else 'ies'} as recorded)"
        typer.echo(f"updated {r.path}{how}")
        if r.diff:
            typer.echo(r.diff)
    elif r.passed:
        if not quiet:
            typer.echo(f"ok      {r.path}{mode}{' (unchanged)' if update else ''}")
    else:
        typer.echo(f"FAILED  {r.path}{mode}{' (not updated)' if update else ''}")
        typer.echo(r.diff)
