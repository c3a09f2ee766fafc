"""pytest plugin: each transcript is a test, its replay diff the failure message.

Registered through the ``pytest11`` entry point, so pytest imports this module in *every*
run of every project that has formctl installed: it imports only pytest and the standard
library here, and loads the engine only when a transcript is actually collected.

Opt in with ``--formctl-transcripts``::

    pytest --formctl-transcripts transcripts/

collects ``*.toml`` files under any folder named ``transcripts`` and replays each one
exactly and offline; with no paths given, ``<rootdir>/transcripts`` is collected along
with the usual ``testpaths``. ``--formctl-forms DIR``
names the forms folder (default: ``forms/`` above the transcript, or ``$FORMCTL_FORMS``).
"""

from __future__ import annotations

from pathlib import Path

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("formctl")
    group.addoption("--formctl-transcripts", action="store_true", default=False,
                    help="collect transcripts/**/*.toml as tests, each replayed exactly (formctl replay)")
    group.addoption("--formctl-forms", default=None, metavar="DIR",
                    help="the forms folder (holding registry.toml) for the transcripts")


def pytest_configure(config: pytest.Config) -> None:
    """``pytest --formctl-transcripts`` with no paths also collects ``<rootdir>/transcripts``.

    Without this, a project whose ``testpaths`` is ``tests`` would need the folder spelled
    out; with explicit paths on the command line, only those are collected.
    """
    if not config.getoption("formctl_transcripts"):
        return
    source = getattr(config, "args_source", None)
    if source is None or source.name == "ARGS":
        return
    folder = Path(str(config.rootpath)) / "transcripts"
    if folder.is_dir() and str(folder) not in config.args:
        config.args.append(str(folder))


def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    if not parent.config.getoption("formctl_transcripts"):
        return None
    if file_path.suffix != ".toml" or "transcripts" not in file_path.parts:
        return None
    return TranscriptFile.from_parent(parent, path=file_path)


class TranscriptDiverged(Exception):
    """A transcript whose replay no longer matches its recording."""


class TranscriptFile(pytest.File):
    def collect(self):
        yield TranscriptItem.from_parent(self, name=self.path.stem)


class TranscriptItem(pytest.Item):
    def runtest(self) -> None:
        from formctl.transcripts.replay import replay_file

        result = replay_file(self.path, forms=self.config.getoption("formctl_forms"))
        if not result.passed:
            raise TranscriptDiverged(result.diff)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, TranscriptDiverged):
            return f"{self.path.name}\n{excinfo.value}"
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, None, f"transcript {self.path.name}"
