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
