"""``tmp_path`` as pytest makes it, without listing the base temporary folder for every test.

pytest names a test's ``tmp_path`` after the test with the next free number (``test_fill0``,
``test_fill1``, ...), and finds that number by listing the whole base temporary folder, which
by then holds a folder for every test the process has run: the listings grow with the tests run
so far, quadratic over a run (in a serial ``-m "not e2e"`` run 3,943 listings took 2.1 CPU-s,
more than the slowest test module of the engine). Here the process keeps the count of each name
itself, and a folder that exists already (one ``tmp_path_factory.mktemp`` made) is skipped.

What stays as pytest has it: the folder is directly under ``tmp_path_factory.getbasetemp()``
(one per xdist worker, the last three runs kept), named the test's name with every non-word
character as ``_``, cut to 30 characters, then a number; it is made empty, only for its owner
(mode 0700), and ``NAMEcurrent`` links to it; ``tmp_path_retention_policy = failed`` removes
it when the test passed.

The conftest imports the fixture and the hook; ``-p helpers.tmp_folders`` loads them as a plugin
(how tests/architecture/test_suite_tmp_folders.py tries them in a pytest session of their own).
"""

from __future__ import annotations

import collections
import itertools
import re
import shutil
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

# The next number to try, by base folder and name (a pytest session of a test's own has its own base).
_next_number: collections.defaultdict[tuple[Path, str], itertools.count[int]] = collections.defaultdict(itertools.count)
_passed = pytest.StashKey[dict[str, bool]]()


@pytest.fixture
def tmp_path(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A new empty folder for this test, under the run's base temporary folder (as pytest's)."""
    name = re.sub(r"[\W]", "_", request.node.name)[:30]
    base = tmp_path_factory.getbasetemp()
    while True:
        path = base / f"{name}{next(_next_number[base, name])}"
        try:
            path.mkdir(mode=0o700)
            break
        except FileExistsError:
            continue
    _point(base / f"{name}current", path)
    yield path
    passed = request.node.stash.get(_passed, {}).get("call", True)
    if passed and request.config.getini("tmp_path_retention_policy") == "failed":
        shutil.rmtree(path, ignore_errors=True)  # best effort, as pytest's


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    item.stash.setdefault(_passed, {})[report.when] = report.passed
    return report


def _point(link: Path, to: Path) -> None:
    """``NAMEcurrent`` names the newest folder of that name, as pytest's does (best effort, like pytest)."""
    try:
        link.unlink()
    except OSError:
        pass
    try:
        link.symlink_to(to)
    except OSError:
        pass
