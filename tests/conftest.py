"""The one definition of every fixture the test modules share.

* ``_clean_env`` (autouse): no ``FORMCTL_*``, ``ANTHROPIC_*`` or ``OPENAI_*`` setting of the
  developer's shell, and none of the variables rich reads for a terminal's size and colour
  (``COLUMNS`` would make a CLI test's output wrap where the shell is narrow), reach a test.
* ``_processes_only_in_e2e`` (autouse): a test that starts a Python process, forks or opens a
  pseudo-terminal fails unless it is marked ``@pytest.mark.e2e`` (``-m "not e2e"`` is the fast run).
* ``_in_example_project`` (autouse): the working folder is the example project, a
  temporary copy of ``tests/fixtures`` (see ``fixture_project.py``): no test reads ``./forms``.
* ``_no_fsync`` (autouse): the JSON store and ``formctl.files`` (conversations, transcripts, the
  registry) skip fsync, unless the test is marked ``@pytest.mark.durable``. Everything else (temp
  files, renames, locks) is as in production.
* ``_simulated_contention`` (autouse): a write that keeps meeting conflicts backs off on a
  simulated clock (its pauses advance it, nothing sleeps), so giving up takes no time.
* ``clock``: every reading of the engine's and the stores' clock is one second after the
  last, so "most recently updated" never rests on a tie or on sleeping.
* ``registry``: a FormRegistry with every form in ``example_forms.ALL_FORMS`` registered.
* ``adapter``: a fresh store, parametrised over the in-memory and the JSON-file adapter,
  so every test that uses it runs against both.
* ``store``: a path (a string, as the CLI takes it) for a JSON store in ``tmp_path``.
* ``cli``: ``formctl`` with that store and the example forms set through ``FORMCTL_STORE`` and
  ``FORMCTL_FORMS``: ``cli("fill", ...)``, ``cli.ok(...)``, ``cli.json(...)``, ``cli.process(...)``
  (the real entry point, in a child process), ``cli.start(seed)`` (see ``clitools.Cli``).
* ``runner``: a factory, ``runner(subject="s1", **kwargs)`` → FormRunner over the same
  ``adapter`` and ``registry`` (call it twice for two runners sharing one store).
* ``claim_runner``: a FormRunner over the shipped forms (``forms/registry.toml``) and an
  in-memory store, subject ``dana``.
* ``log``: a fresh :class:`example_forms.HookLog`.
* ``pg_server``, ``pg_dsn``, ``pg_adapter``, ``private_pg``: a PostgreSQL server for the
  store's tests, a fresh schema on it per test, an adapter there (``pg_server.py``).

Compiled modules: where Python may not write bytecode (``PYTHONDONTWRITEBYTECODE``), the suite
keeps it in ``.pytest_cache/d/pycache`` instead, for itself and the processes it starts
(``_keep_bytecode``), so a run neither rewrites every test module's asserts again nor compiles
formctl again in every ``formctl`` child.

``FORMCTL_TEST_CPU_LOG=FILE`` appends one line per test to FILE: its node id, the CPU seconds it
took (this process and the processes it started and waited for) and its wall seconds, setup and
teardown included (``benchmarks/suite.py --slowest N`` sets it and sums it up).

The CLI's helpers (``Cli``, and the lower-level ``invoke``, ``start``, ``formctl``) are in ``clitools.py``.
"""

from __future__ import annotations

import functools
import gc
import itertools
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import pg_server as pg_run
from pg_server import _pg_schemas, pg_adapter, pg_bare_dsn, pg_dsn, pg_server, private_pg  # noqa: F401  (the PostgreSQL fixtures)

if TYPE_CHECKING:
    from formctl import FormRegistry, FormRunner

# This module imports no part of formctl, nor the example forms, nor typer: the fixtures and hooks
# that use them import them when they run. The xdist controller, which runs no test, loads this
# module too, and before pytest_configure (_keep_bytecode) it compiled all of that from source.

pytest_plugins = ["helpers.tmp_folders"]  # pytest's tmp_path, without its numbering's listing of the whole folder

# What rich reads from the environment to size and colour a console, and formctl's own
# settings: a test sets the ones it means to test.
ENVIRONMENT = (
    "COLUMNS",
    "LINES",
    "JUPYTER_COLUMNS",
    "JUPYTER_LINES",
    "NO_COLOR",
    "FORCE_COLOR",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
    "COLORTERM",
)
PREFIXES = ("FORMCTL_", "ANTHROPIC_", "OPENAI_")
# The developer's choice of random seed for the crash test, the PostgreSQL server CI started, and
# the folder of the run's own (pg_server.py).
KEEP = ("FORMCTL_CRASH_SEED", "FORMCTL_TEST_PG_DSN", "FORMCTL_TEST_PG_DIR", "FORMCTL_TEST_PG_PORT", pg_run.RUN)


def pytest_configure(config: pytest.Config) -> None:
    _keep_bytecode(config)
    pg_run.configure()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Before the first test, in every process that runs tests (not the xdist controller).

    typer's CliRunner builds the app's whole click command tree again on every invoke: about 10 ms
    of CPU, nine tenths of an in-process CLI run (the console script builds only the command it
    runs, once per process). Built once per app here; a click command is not changed by running it."""
    import typer.testing

    if callable(getattr(typer.testing, "_get_command", None)) and not hasattr(typer.testing._get_command, "cache_info"):
        typer.testing._get_command = functools.cache(typer.testing._get_command)


def pytest_unconfigure(config: pytest.Config) -> None:
    pg_run.unconfigure()


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: one xdist worker per core, and one more when the e2e tests run.

    Much of the whole suite's time is spent waiting, not computing: a pseudo-terminal's next
    line, a ``formctl`` child starting, PostgreSQL restarting, a timeout a test is about. With one
    worker per core the cores sat idle about a quarter of a whole run (sampled from
    ``/proc/stat``); the extra worker runs tests in that time (80 s against 91 s, 2 cores). The
    in-process tests (``-m "not e2e"``) hardly wait: there a third worker only adds its start-up
    and collection, and one per core was the faster (five runs each, alternating: 26-38 s
    against 31-47 s). ``benchmarks/suite.py`` measures both. xdist's own
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still decides when set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    in_process_only = re.search(r"\bnot\s+e2e\b", config.getoption("markexpr", "") or "") is not None
    return cores if in_process_only else cores + 1


def _keep_bytecode(config: pytest.Config) -> None:
    """Keep compiled modules between runs in pytest's cache folder when Python may not write them
    beside the source (``PYTHONDONTWRITEBYTECODE``): ``sys.pycache_prefix`` (``PYTHONPYCACHEPREFIX``
    for the processes the tests start) points into ``.pytest_cache/d/pycache``, and nothing is
    written into the source tree.

    Without it every run paid, per xdist worker, for pytest rewriting the asserts of every test
    module (about 8 s of CPU: pytest caches a rewritten module as a ``.pyc`` only where bytecode
    may be written, and honours ``sys.pycache_prefix`` for where), and every ``formctl`` child
    compiled the formctl modules it imports from source (about 0.2 s of its 0.6 s of CPU).
    A ``.pyc`` is checked against its source's mtime and size, as in any ``__pycache__``.

    Where Python may write bytecode, or the developer chose a prefix, this does nothing; with
    ``-p no:cacheprovider`` (no cache folder) neither. The processes the tests start inherit the
    setting through the environment, so the xdist workers find it set from their first import."""
    if not sys.dont_write_bytecode or sys.pycache_prefix is not None:
        return
    cache = getattr(config, "cache", None)
    if cache is None:
        return
    import tempfile

    try:
        prefix = cache.mkdir("pycache")
    except OSError:
        return  # a cache folder that cannot be written (pytest then only warns): compile as before
    # The modules of temporary folders (a test's copy of a forms folder) are never met again:
    # dropped once per run so the cache does not grow with every run; all but this checkout's
    # own, when it is itself in the temporary folder (a clone for CI, an older commit checked
    # out to compare with), which compiled everything again on every run.
    temporary, checkout = (prefix / os.path.relpath(p, os.sep) for p in (tempfile.gettempdir(), config.rootpath))
    _drop_all_but(temporary, checkout)
    sys.pycache_prefix = str(prefix)
    sys.dont_write_bytecode = False
    os.environ["PYTHONPYCACHEPREFIX"] = str(prefix)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def _drop_all_but(folder: Path, keep: Path) -> None:
    """Remove ``folder`` and what it holds, except ``keep`` and what it holds (and the folders on the way)."""
    import shutil

    if not keep.is_relative_to(folder):
        shutil.rmtree(folder, ignore_errors=True)
        return
    if keep == folder or not folder.is_dir():
        return
    for entry in folder.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            _drop_all_but(entry, keep)
        else:
            entry.unlink(missing_ok=True)


# How many more modules than at the last freeze make the next one worth it (see _freeze_long_lived).
_FREEZE_AFTER_MODULES = 100
_frozen_at_modules = 0


# The collector is off from here (this module is imported before any test module) until the
# tests are collected: see pytest_collection below.
gc.disable()


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Any:
    """Collect with the garbage collector off, then freeze what collection made (``gc.freeze``).

    Importing the test modules (the SDKs' thousands of pydantic models above all) and building
    the test items makes about 300,000 objects that live as long as the process. The collector's
    automatic passes walked them again and again and found nearly nothing to free: 0.7 of the
    4.2 CPU-s of ``pytest --collect-only`` in every xdist worker. At the end they are frozen
    without a last collection: one full pass over them costs 0.4 CPU-s and would free only
    about 29,000 objects (the closures and nodes of pytest's own collection, a few MB, no file
    or connection among them), which are kept instead. After this, ``_freeze_long_lived`` runs
    as before, a collection first, when a test imports many modules.

    On the xdist controller, which collects no tests, this hook runs too (xdist answers it
    there), so the collector is back on there before the first report arrives."""
    global _frozen_at_modules
    try:
        return (yield)
    finally:
        gc.freeze()
        gc.enable()
        _frozen_at_modules = len(sys.modules)


def _freeze_long_lived() -> None:
    """Move what is alive now (modules, collected tests, caches) out of the garbage collector's
    sight (``gc.freeze``), so its full collections scan only what the tests made since.

    A full collection walks every object the collector tracks, and the imported SDKs are most of
    them: ``anthropic`` alone is 3,160 modules and about 140,000 objects, ``openai`` 44,000,
    collection another 190,000. In a serial ``-m "not e2e"`` run the collector took 11.9 of 70
    CPU-s, nearly all in about 40 full collections, each walking all of that again to find the
    few cycles the last tests left (and pytest collects five times more as each process ends).

    Called after a test that imported many modules (the first test that builds an Anthropic or
    OpenAI client, when collection did not import it): a collection first, so only what is alive
    is frozen (a connection the test dropped is closed, and warns, as it should).
    A frozen object is still freed when its last reference goes; only a cycle among frozen
    objects stays (modules and their classes, which live as long as the process anyway)."""
    global _frozen_at_modules
    gc.collect()
    gc.freeze()
    _frozen_at_modules = len(sys.modules)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    log = os.environ.get("FORMCTL_TEST_CPU_LOG")
    if log:
        import resource
        import time

        def cpu() -> float:
            own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
            return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

        cpu_before, wall_before = cpu(), time.perf_counter()
    yield
    if len(sys.modules) - _frozen_at_modules >= _FREEZE_AFTER_MODULES:
        _freeze_long_lived()  # counted in the test that imported them
    if log:
        line = f"{item.nodeid}\t{cpu() - cpu_before:.3f}\t{time.perf_counter() - wall_before:.3f}\n"
        with open(log, "a", encoding="utf-8") as fh:  # one short append per test: whole lines from every worker
            fh.write(line)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if (name in ENVIRONMENT or name.startswith(PREFIXES)) and name not in KEEP:
            monkeypatch.delenv(name)
    cli = sys.modules.get("formctl.cli.base")  # where --debug is kept
    if cli is not None:
        monkeypatch.setattr(cli, "_debug", False)


@pytest.fixture(autouse=True)
def _processes_only_in_e2e(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test that starts a Python process or a pseudo-terminal (a ``formctl`` command, a pexpect
    chat, a child that writes or is killed) is marked ``@pytest.mark.e2e``, so that
    ``pytest -m "not e2e"`` is the fast in-process run. An unmarked one fails here and says so."""
    if request.node.get_closest_marker("e2e") is not None:
        return
    import pty
    import subprocess

    def refuse(what: str) -> None:
        pytest.fail(f"{what}: a test that crosses a process boundary is marked @pytest.mark.e2e", pytrace=False)

    popen_init = subprocess.Popen.__init__

    def checked_init(self: subprocess.Popen, args: Any, *rest: Any, **kwargs: Any) -> None:
        program = args if isinstance(args, (str, bytes, os.PathLike)) else (args[0] if args else "")
        if os.path.basename(os.fsdecode(program)).startswith("python") or os.fsdecode(program) == sys.executable:
            refuse(f"this test starts {os.fsdecode(program)}")
        popen_init(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", checked_init)
    monkeypatch.setattr(os, "fork", lambda: refuse("this test forks"))
    monkeypatch.setattr(pty, "fork", lambda: refuse("this test opens a pseudo-terminal"))


@pytest.fixture(autouse=True)
def _in_example_project(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts in the example project (a temporary copy of tests/fixtures), so a
    command's default ``./forms`` is the example forms, never the checkout's own ``./forms``."""
    import fixture_project

    monkeypatch.chdir(fixture_project.ROOT)


@pytest.fixture(autouse=True)
def _no_fsync(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.node.get_closest_marker("durable") is None:
        from formctl.store import _durable

        monkeypatch.setattr(_durable, "fsync_enabled", False)
        # formctl.files is a leaf that imports no other part of formctl, so it has no switch of
        # its own: its module's `os` is swapped for one whose fsync does nothing. On a busy disk a
        # conversation save (two fsyncs) cost as much as the rest of a chat turn.
        from formctl import files

        monkeypatch.setattr(files, "os", _OsWithoutFsync())


class _OsWithoutFsync:
    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    @staticmethod
    def fsync(fd: int) -> None:
        pass


@pytest.fixture(autouse=True)
def _simulated_contention(monkeypatch: pytest.MonkeyPatch) -> None:
    from formctl.forms import contention

    now = [0.0]
    monkeypatch.setattr(contention, "clock", lambda: now[0])
    monkeypatch.setattr(contention, "sleep", lambda seconds: now.__setitem__(0, now[0] + seconds))


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch):
    """Replace ``now_iso`` wherever formctl has it: each call is one second after the last."""
    from formctl.forms import instance

    real = instance.now_iso
    ticks = itertools.count(1)

    def now() -> str:
        n = next(ticks)
        return f"2026-01-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000000Z"

    # The matching names first: a list of (name, module) pairs of every module (5,000 in a full
    # run, the SDKs imported) is 5,000 new objects a call, enough to set the garbage collector
    # off several times; 143 calls took 1.9 CPU-s, now about a tenth of that.
    for name in [name for name in sys.modules if name.startswith("formctl")]:
        module = sys.modules[name]
        if getattr(module, "now_iso", None) is real:
            monkeypatch.setattr(module, "now_iso", now)
    return now


def make_registry() -> FormRegistry:
    import example_forms
    from formctl import FormRegistry

    registry = FormRegistry()
    for form_id, factory in example_forms.ALL_FORMS.items():
        registry.register(form_id, name=form_id, description=f"Example form {form_id}.", load=factory)
    return registry


@pytest.fixture
def registry() -> FormRegistry:
    return make_registry()


@pytest.fixture(params=["memory", "jsonfile"])
def adapter(request, tmp_path):
    if request.param == "memory":
        from formctl import MemoryAdapter

        return MemoryAdapter()
    from formctl.store.jsonfile import JsonFileAdapter

    return JsonFileAdapter(tmp_path / "store")


@pytest.fixture
def store(tmp_path) -> str:
    return str(tmp_path / "store")


@pytest.fixture
def cli(store):
    from clitools import Cli

    return Cli(store)


@pytest.fixture
def runner(adapter, registry):
    from formctl import FormRunner

    def make(subject: str = "s1", **kwargs) -> FormRunner:
        return FormRunner(adapter, registry=kwargs.pop("registry", registry), subject=subject, **kwargs)

    return make


@pytest.fixture
def claim_runner() -> FormRunner:
    from clitools import FORMS
    from formctl import FormRegistry, FormRunner, MemoryAdapter

    return FormRunner(MemoryAdapter(), registry=FormRegistry.from_toml(FORMS / "registry.toml"), subject="dana")


@pytest.fixture
def log():
    import example_forms

    return example_forms.HookLog()
