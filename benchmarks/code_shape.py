"""The shape of the code, as issue 38 measures it: functions over 60 lines and functions with more
than six parameters, in src/formctl (CONTRIBUTING.md, "Functions a reader can hold").

    python3 benchmarks/code_shape.py            # the counts, then every long function, longest first
    python3 benchmarks/code_shape.py --params   # the wide functions too
    python3 benchmarks/code_shape.py --quick    # the counts only

A count, not a gate: it prints and exits 0. Parameters are counted without ``self``/``cls``; a
``*args`` or ``**kwargs`` counts as one each. Lines are from ``def`` to the function's last line,
docstring and decorators' arguments included.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LONG = 60
WIDE = 6


def shape(src: Path) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(long, wide): (size, "path:line name") of every function over the bars."""
    long: list[tuple[int, str]] = []
    wide: list[tuple[int, str]] = []
    for path in sorted(src.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            where = f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > LONG:
                long.append((lines, where))
            a = node.args
            params = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs) if p.arg not in ("self", "cls")]
            count = len(params) + (a.vararg is not None) + (a.kwarg is not None)
            if count > WIDE:
                wide.append((count, where))
    return sorted(long, reverse=True), sorted(wide, reverse=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the two counts only")
    parser.add_argument("--params", action="store_true", help="list the wide functions as well")
    args = parser.parse_args()
    long, wide = shape(ROOT / "src" / "formctl")
    print(f"{len(long)} functions over {LONG} lines; {len(wide)} with more than {WIDE} parameters")
    if args.quick:
        return
    for lines, where in long:
        print(f"  {lines:4d} lines  {where}")
    if args.params:
        for count, where in wide:
            print(f"  {count:4d} params {where}")


if __name__ == "__main__":
    main()
