"""Nothing above the engine reaches past the runner to its store.

The runner answers every read the CLI, the tools, the chat and the MCP server need (docs/engine.md:
"Every layer above the engine asks the runner, never the store behind it"): an outline without an
instance (``outline``), which program item an instance serves (``items_served``), a watch for
commits (``watch``), closing (``close``). A ``runner.adapter`` (or ``self.runner.adapter``,
``self._runner.adapter``) outside ``forms/`` and ``store/`` is a view built, or a write made, behind
the runner's back; this test names each one it finds."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "formctl"
BELOW = ("forms", "store")  # the engine itself and the stores it is handed


def _names_a_runner(node: ast.expr) -> bool:
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name.lstrip("_").endswith("runner")


def reaches_past_the_runner(path: Path) -> list[str]:
    """``file:line`` of every ``<something>runner.adapter`` in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{path.name}:{node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr == "adapter" and _names_a_runner(node.value)
    ]


def test_no_layer_above_the_engine_touches_runner_adapter():
    found = [
        hit
        for path in sorted(SRC.rglob("*.py"))
        if path.relative_to(SRC).parts[0] not in BELOW
        for hit in (f"{path.relative_to(SRC)}: {h}" for h in reaches_past_the_runner(path))
    ]
    assert found == []


def test_the_check_finds_a_reach_past_the_runner(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text("def f(self, runner):\n    runner.adapter.close()\n    self._runner.adapter.watch()\n")
    assert reaches_past_the_runner(planted) == ["planted.py:2", "planted.py:3"]
