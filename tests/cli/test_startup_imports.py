"""What a ``formctl`` process loads to do its job: no more than the command needs.

Every command is started hundreds of times by the e2e tests and by every person typing it, so
what a command never uses is imported when it is first used, not at start-up
(benchmarks/startup.py measures the cost). Each test runs the real entry point in a fresh
interpreter and lists which of the modules made lazy it loaded.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from clitools import ROOT

pytestmark = pytest.mark.e2e

_WATCHED = (
    "formctl.agent.tools",
    "formctl.goals.evaluate",
    "formctl.goals.hooks",
    "formctl.goals.runner",
    "formctl.goals.view",
    "logging",
    "rich",
    "rich.table",
    "secrets",
)


def _loaded(cli, *args: str, input: str | None = None) -> list[str]:
    code = (
        "import sys, json\n"
        "from formctl.cli.app import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        f"sys.stderr.write(json.dumps(sorted(m for m in {_WATCHED!r} if m in sys.modules)))\n"
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


def test_inspect_as_json_loads_neither_rich_nor_the_goal_runner_nor_logging(cli):
    instance = cli.start({"full_name": "Dana Reeve"})

    assert _loaded(cli, "inspect", instance, "--json") == []


def test_a_piped_chat_turn_draws_no_table_and_loads_no_goal_runner(cli):
    loaded = _loaded(cli, "run", "travel-claim", "--offline", input="Dana Reeve\n")

    assert loaded == ["formctl.agent.tools", "rich", "secrets"]  # the tools, the chat's console, a new id
