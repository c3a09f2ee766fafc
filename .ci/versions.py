"""The versions a CI run ran with: every package formctl requires (its dependencies and the test
extra's), and the few it reaches through them whose releases change what formctl sees (click
under typer, the SDKs' HTTP library, pydantic's core), one ``name==version`` a line.

Run with the environment's own interpreter: ``VENV/bin/python .ci/versions.py``.
"""

from __future__ import annotations

import re
import sys
from importlib import metadata

THROUGH = ("click", "httpx2", "httpx", "pydantic-core")


def main() -> int:
    try:
        requires = metadata.requires("formctl") or []
    except metadata.PackageNotFoundError:
        print("formctl is not installed in this environment", file=sys.stderr)
        return 1
    names = set(THROUGH)
    for requirement in requires:
        if re.search(r"extra == .(lint|release)", requirement):
            continue  # the linters and the release tools are not what the suite runs on
        name = re.match(r"[A-Za-z0-9._-]+", requirement)
        if name:
            names.add(name.group(0).lower())
    print(f"python=={sys.version.split()[0]}")
    print(f"formctl=={metadata.version('formctl')}")
    for name in sorted(names):
        try:
            print(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return 0


if __name__ == "__main__":
    sys.exit(main())
