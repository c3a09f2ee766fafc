"""The example project the tests run against: a copy of ``tests/fixtures/`` in a temporary folder.

``tests/fixtures/forms/`` holds the example forms (travel-claim, client-intake) and their
``registry.toml``; ``tests/fixtures/transcripts/`` the conversations recorded against them.
The repository's own ``./forms`` and ``./transcripts`` belong to whoever works in the
checkout (the quick start scaffolds and edits forms there), so no test reads them:
``formctl new`` there, or editing or deleting a form, never breaks the suite.

The copy is made once per test process, so a test that writes into it (a compiled module's
``__pycache__``, a store) never touches the repository.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "fixtures"

ROOT = Path(tempfile.mkdtemp(prefix="formctl-tests-")) / "project"
shutil.copytree(SOURCE, ROOT, ignore=shutil.ignore_patterns("__pycache__"))
atexit.register(shutil.rmtree, ROOT.parent, True)

FORMS = ROOT / "forms"
REGISTRY = FORMS / "registry.toml"
TRANSCRIPTS = ROOT / "transcripts"

# The mileage field's gate as the example travel claim declares it, and widened to rail trips too:
# the edit the transcript tests make to a form to show a regression caught (``str.replace`` arguments).
MILEAGE_GATE = '"Miles driven",\n           when=lambda v, s: v["mode"] == "car"'
MILEAGE_GATE_WIDENED = (MILEAGE_GATE, MILEAGE_GATE.replace('== "car"', 'in ("car", "rail")'))

# A goal program of one item bound to the travel claim (completing the claim settles the item).
CLAIMS_PROGRAM = (
    'claims = define_program("claims", goals=[Goal("trip", title="Trip", '
    'items=[Item("claim", label="Travel claim", form="travel-claim")])])\n'
)


def forms_with_program(dest: Path, program_text: str, key: str, module: str) -> Path:
    """A copy of the example forms at ``dest`` with one more goal program: ``program_text`` (after
    the import of the goal names) as the module of ``module`` (``file:attribute``), registered
    under ``key``; an example program already under ``key`` is replaced by it."""
    shutil.copytree(FORMS, dest, ignore=shutil.ignore_patterns("__pycache__"))
    (dest / f"{module.partition(':')[0]}.py").write_text(
        "from formctl import Goal, Item, define_program\n" + program_text
    )
    registry = dest / "registry.toml"
    text = registry.read_text()
    if f"[programs.{key}]" in text:
        text = text.replace("client_intake_program:client_intake_program", module)
    else:
        text += f'\n[programs.{key}]\nname = "{key}"\nmodule = "{module}"\n'
    registry.write_text(text)
    return dest
