"""The layer line the docs give is the one pyproject.toml enforces: a layer added to the import-linter
contract and not to docs/engine.md, CONTRIBUTING.md or the README (or the reverse) fails here."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def enforced_layers() -> str:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contract = next(c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers")
    return " > ".join(layer.removeprefix("formctl.") for layer in contract["layers"])


def test_every_page_that_draws_the_layers_draws_the_enforced_ones():
    expected = enforced_layers()
    pages = {
        name: (ROOT / name).read_text(encoding="utf-8") for name in ("docs/engine.md", "CONTRIBUTING.md", "README.md")
    }
    for name, text in pages.items():
        lines = re.findall(r"\bcli > [a-z >]+\b", text)
        assert lines, f"{name} no longer draws the layers"
        assert set(lines) == {expected}, (name, lines)


def test_the_readme_layout_lists_every_package():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    packages = sorted(
        p.name for p in (ROOT / "src" / "formctl").iterdir() if p.is_dir() and (p / "__init__.py").exists()
    )
    missing = [p for p in packages if f"src/formctl/{p}/" not in readme]
    assert missing == []


def test_the_docs_index_lists_every_page():
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md") if p.name != "README.md")
    assert [p for p in pages if f"({p})" not in index] == []
