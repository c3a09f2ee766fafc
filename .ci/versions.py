"""The versions a CI run ran with: every package formctl requires (its dependencies and the test
extra's), and the few it reaches through them whose releases change what formctl sees (click
under typer, the SDKs' HTTP library, pydantic's core), one ``name==version`` a line.

Run with the environment's own interpreter: ``VENV/bin/python .ci/versions.py``. With
``--upper-bounds`` it also asks the package index, for each requirement with an upper bound
(typer's: cli/_lean_typer.py uses its private API), for the newest release, and says when the
bound keeps it out.
"""

from __future__ import annotations

import re
import subprocess
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
    if "--upper-bounds" in sys.argv[1:]:
        for requirement in requires:
            upper_bound(requirement)
    return 0


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version.split("+")[0])[:3])


def upper_bound(requirement: str) -> None:
    """Say whether the newest release of a requirement with an upper bound is kept out by it."""
    bound = re.search(r"<\s*([0-9][0-9.]*)", requirement.split(";")[0])
    if bound is None or "extra ==" in requirement:
        return
    name = re.match(r"[A-Za-z0-9._-]+", requirement).group(0)  # type: ignore[union-attr]
    asked = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", name, "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    newest = re.match(rf"{re.escape(name)} \(([^)]+)\)", asked.stdout.strip(), re.I)
    if newest is None:
        print(f"note: could not ask the index for {name}'s newest release", file=sys.stderr)
    elif _release(newest.group(1)) >= _release(bound.group(1)):
        print(
            f"note: {name} {newest.group(1)} is out, kept out by <{bound.group(1)} in pyproject.toml: "
            "run the suite on it, then raise the bound"
        )
    else:
        print(f"note: the newest {name} ({newest.group(1)}) is inside the bound <{bound.group(1)}")


if __name__ == "__main__":
    sys.exit(main())
