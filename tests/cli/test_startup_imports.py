"""What a ``formctl`` process does to start: no more than the command needs.

Every command is started hundreds of times by the e2e tests and by every person typing it, so
what a command never uses is imported when it is first used, not at start-up, and the cyclic
garbage collector waits until start-up is over (cli/collector.py; benchmarks/startup.py
measures the cost). Each test runs the real entry point in a fresh interpreter and reports
which of the modules made lazy it loaded, or the collector's state at the end.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from clitools import ROOT

pytestmark = pytest.mark.e2e

# formctl's own modules that a command loads only when it uses them, and the libraries
# docs/startup.md names as loaded only where used. Not standard-library modules (``secrets``,
# ``logging``): any dependency's new release may import those at start-up, which says nothing
# about what formctl does.
_WATCHED = (
    "anthropic",
    "formctl.agent.tools",
    "formctl.forms.provenance",
    "formctl.forms.recovery",
    "formctl.goals.evaluate",
    "formctl.goals.hooks",
    "formctl.goals.runner",
    "formctl.goals.view",
    "mcp",
    "openai",
    "prompt_toolkit",
    "psycopg",
    "rich",
    "rich.table",
)


def _loaded(cli, *args: str, input: str | None = None) -> list[str]:
    return _after(cli, f"sorted(m for m in {_WATCHED!r} if m in sys.modules)", *args, input=input)


def _after(cli, report: str, *args: str, input: str | None = None, console_script: bool = True) -> Any:
    """``report`` (a Python expression) evaluated after ``formctl ARGS`` ran in a fresh interpreter,
    started as the console script is (``sys.argv[0]`` is ``formctl``) unless ``console_script`` is
    false: then a program that imports the app and calls ``main``."""
    code = (
        "import sys, json, gc\n"
        + ("sys.argv[0] = 'formctl'\n" if console_script else "")
        + "from formctl.cli.app import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        f"sys.stderr.write(json.dumps({report}))\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith(("FORMCTL_", "ANTHROPIC_"))}
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**env, **cli.env},
        input=input,
        timeout=60,
    )
    return json.loads(done.stderr.strip().splitlines()[-1])


def test_inspect_as_json_loads_neither_rich_nor_the_goal_runner_nor_what_only_writes_use(cli):
    instance = cli.start({"full_name": "Dana Reeve"})

    assert _loaded(cli, "inspect", instance, "--json") == []


def _loaded_by_the_console_itself() -> set[str]:
    """The watched modules that rich's console loads by itself, in a fresh interpreter: rich 13.0
    (the lowest version allowed) imports ``rich.table`` from ``rich.console``, which formctl cannot
    put off; newer versions do not."""
    code = (
        "import sys, json\n"
        "from rich.console import Console\n"
        "from rich.text import Text\n"
        f"print(json.dumps([m for m in {_WATCHED!r} if m in sys.modules]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    return set(json.loads(done.stdout))


def test_a_piped_chat_turn_draws_no_table_and_loads_no_goal_runner(cli):
    loaded = _loaded(cli, "run", "travel-claim", "--offline", input="Dana Reeve\n")

    # the tools (which judge the model's values) and the chat's console; no SDK, no prompt-toolkit
    expected = {"formctl.agent.tools", "formctl.forms.provenance", "rich"} | _loaded_by_the_console_itself()
    assert loaded == sorted(expected)


_COLLECTOR = "[gc.isenabled(), gc.get_freeze_count() > 0]"


def test_a_short_command_runs_to_its_end_with_the_collector_held(cli):
    assert _after(cli, _COLLECTOR, "list") == [False, False]


def test_a_command_that_may_run_long_has_the_collector_back_before_it_runs(cli):
    assert _after(cli, _COLLECTOR, "store", "check") == [True, True]  # what start-up made is frozen


def test_a_chat_has_the_collector_back_once_it_waits_for_the_persons_lines(cli):
    assert _after(cli, _COLLECTOR, "run", "travel-claim", "--offline", input="Dana Reeve\n") == [True, True]


def test_a_program_that_calls_main_keeps_its_own_collector(cli):
    assert _after(cli, _COLLECTOR, "list", console_script=False) == [True, False]
