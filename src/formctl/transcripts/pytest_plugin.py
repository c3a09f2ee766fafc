"""pytest plugin: each transcript is a test, its replay diff the failure message.

Registered through the ``pytest11`` entry point, so pytest imports this module in *every*
run of every project that has formctl installed: it imports only pytest and the standard
library here, and loads the engine only when a transcript is actually collected.

Turn it on with ``--formctl-transcripts``, or for a project in its pytest configuration::

    [tool.pytest.ini_options]
    formctl_transcripts = ["transcripts", "examples/*.toml"]

Then every transcript is an ordinary pytest item, wherever it lives:

- ``pytest PATH`` collects every transcript under PATH (a ``*.toml`` file whose top-level
  keys are a transcript's: ``format = 1`` and ``form = "..."``); naming one file runs that one;
- with no path, the configured folders and globs are collected beside ``testpaths`` (with
  only the flag: ``<rootdir>/transcripts``, when there is one);
- each item carries the ``transcript`` marker, so ``pytest -m transcript`` runs only them;
- a transcript is replayed exactly and offline (one without model turns, live against the
  guided model) and a failure's report is the replay diff.

``--formctl-forms DIR`` (or the ini option ``formctl_forms``) names the forms folder; by
default it is ``$FORMCTL_FORMS``, else ``./forms``, else the nearest ``forms/`` above the
transcript up to its project root, as for ``formctl replay`` (docs/transcripts.md, "Which forms").
"""

from __future__ import annotations

import glob
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from _pytest._code.code import TerminalRepr, TracebackStyle

MARKER = "transcript"
_TOP_KEY = re.compile(r"^\s*(format|form)\s*=", re.MULTILINE)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("formctl")
    group.addoption(
        "--formctl-transcripts",
        action="store_true",
        default=False,
        help="collect formctl transcripts (*.toml) as tests, each replayed exactly (formctl replay)",
    )
    group.addoption(
        "--formctl-forms",
        default=None,
        metavar="DIR",
        help="the forms folder (holding registry.toml) for the transcripts",
    )
    parser.addini(
        "formctl_transcripts",
        type="args",
        default=[],
        help="folders and globs of formctl transcripts to collect (turns the plugin on)",
    )
    parser.addini("formctl_forms", default="", help="the forms folder (holding registry.toml) for the transcripts")


def _enabled(config: pytest.Config) -> bool:
    return bool(config.getoption("formctl_transcripts") or config.getini("formctl_transcripts"))


def _base(config: pytest.Config) -> Path:
    inipath = getattr(config, "inipath", None)
    return Path(inipath).parent if inipath else Path(str(config.rootpath))


def _configured_paths(config: pytest.Config) -> list[str]:
    """The ini option's folders and globs, relative to the configuration file, that exist."""
    base = _base(config)
    out: list[str] = []
    entries = config.getini("formctl_transcripts") or []
    if not entries:
        default = Path(str(config.rootpath)) / "transcripts"
        return [str(default)] if default.is_dir() else []
    for entry in entries:
        pattern = str(base / entry)
        matches = sorted(glob.glob(pattern, recursive=True)) if any(c in entry for c in "*?[") else [pattern]
        # Only what will be collected: pytest before 9 fails a run on a path that yields no test.
        out.extend(m for m in matches if Path(m).is_dir() or (Path(m).is_file() and is_transcript(Path(m))))
    return out


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}: a formctl transcript, replayed as a regression test of its form")
    if not _enabled(config):
        return
    # With no paths on the command line, the transcripts are collected beside `testpaths`.
    source = getattr(config, "args_source", None)
    if source is None or source.name == "ARGS":
        return
    # A path under one already given is collected from there (pytest before 9 would otherwise
    # collect only the paths added here and leave out the rest of the folder).
    given = [Path(arg).resolve() for arg in config.args]
    for path in _configured_paths(config):
        resolved = Path(path).resolve()
        if not any(resolved == g or g in resolved.parents for g in given):
            config.args.append(path)


def is_transcript(path: Path) -> bool:
    """Does this TOML file look like a transcript? Its top-level keys (which TOML puts before
    any table) include ``format`` and ``form``; reading stops at the first table header."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            head = fh.read(65536)
    except OSError:
        return False
    top = head.split("\n[", 1)[0]
    return {m.group(1) for m in _TOP_KEY.finditer(top)} == {"format", "form"}


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> TranscriptFile | None:
    if file_path.suffix != ".toml" or not _enabled(parent.config):
        return None
    if not is_transcript(file_path):
        return None
    return TranscriptFile.from_parent(parent, path=file_path)


class TranscriptDiverged(Exception):
    """A transcript whose replay no longer matches its recording."""


class TranscriptFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        item = TranscriptItem.from_parent(self, name=self.path.stem)
        item.add_marker(MARKER)
        yield item


class TranscriptItem(pytest.Item):
    def runtest(self) -> None:
        from formctl.transcripts.replay import replay_file

        forms = self.config.getoption("formctl_forms") or self.config.getini("formctl_forms") or None
        if forms and not Path(forms).is_absolute() and self.config.getini("formctl_forms") == forms:
            forms = str(_base(self.config) / forms)  # the ini option is relative to its file
        result = replay_file(self.path, forms=forms)
        if not result.passed:
            raise TranscriptDiverged(result.diff)

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: TracebackStyle | None = None
    ) -> str | TerminalRepr:
        if isinstance(excinfo.value, TranscriptDiverged):
            return f"{self.path.name}\n{excinfo.value}"
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, None, str]:
        return self.path, None, f"transcript {self.path.name}"
