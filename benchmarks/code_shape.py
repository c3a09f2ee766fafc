"""The shape of the code, as issue 38 measures it: functions over 60 lines and functions with more
than six parameters, in src/formctl (CONTRIBUTING.md, "Functions a reader can hold").

    python3 benchmarks/code_shape.py            # the counts, then every long function, longest first
    python3 benchmarks/code_shape.py --params   # the wide functions too
    python3 benchmarks/code_shape.py --quick    # the counts only

A count, not a gate: it prints and exits 0. Parameters are counted without ``self``/``cls``; a
``*args`` or ``**kwargs`` counts as one each. Lines are from ``def`` to the function's last line,
docstring and decorators' arguments included.

A wide function is one of three kinds, counted apart: a **command** (a typer command, whose
parameters are the CLI's options, one each), the **public API** whose keyword arguments the
design fixes (:data:`PUBLIC_API`), and the **internal** ones, where arguments that travel
together want a parameter object. Only the last kind is a finding.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LONG = 60
WIDE = 6

# (module, qualified name): the signatures a form author or a host writes calls to, fixed by the
# design's public API (README, docs/engine.md); their keywords are the interface.
PUBLIC_API = frozenset(
    {
        ("src/formctl/forms/builder.py", "FormBuilder.field"),
        ("src/formctl/forms/builder.py", "FormBuilder.step"),
        ("src/formctl/forms/builder.py", "FormBuilder.checkpoint"),
        ("src/formctl/forms/builder.py", "define_form"),
        ("src/formctl/forms/instance.py", "Instance.__init__"),
        ("src/formctl/forms/runner.py", "FormRunner.__init__"),
        ("src/formctl/forms/runner.py", "FormRunner.resolve_checkpoint"),
        ("src/formctl/agent/loop.py", "ChatLoop.__init__"),
        ("src/formctl/goals/runner.py", "GoalRunner.__init__"),
        ("src/formctl/goals/runner.py", "GoalRunner.update"),
    }
)


def _is_command(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A typer command: decorated ``@app.command(...)``, or its parameters' defaults are
    ``typer.Option(...)``/``typer.Argument(...)``."""
    for decorator in node.decorator_list:
        call = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(call, ast.Attribute) and call.attr == "command":
            return True
    defaults = [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
    return any(
        isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr in ("Option", "Argument")
        for d in defaults
    )


def _functions(tree: ast.Module) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function with its qualified name (``Class.method``; nested ones under their parent)."""
    found: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                found.append((prefix + child.name, child))
                visit(child, prefix + child.name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def shape(src: Path) -> tuple[list[tuple[int, str]], list[tuple[int, str, str]]]:
    """(long, wide): (size, "path:line name") of every function over the bars; a wide one also
    says its kind (``command``, ``public API`` or ``internal``)."""
    long: list[tuple[int, str]] = []
    wide: list[tuple[int, str, str]] = []
    for path in sorted(src.rglob("*.py")):
        module = path.relative_to(ROOT).as_posix()
        for qualname, node in _functions(ast.parse(path.read_text(encoding="utf-8"))):
            where = f"{module}:{node.lineno} {node.name}"
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > LONG:
                long.append((lines, where))
            a = node.args
            params = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs) if p.arg not in ("self", "cls")]
            count = len(params) + (a.vararg is not None) + (a.kwarg is not None)
            if count > WIDE:
                kind = (
                    "command" if _is_command(node) else "public API" if (module, qualname) in PUBLIC_API else "internal"
                )
                wide.append((count, where, kind))
    return sorted(long, reverse=True), sorted(wide, reverse=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the two counts only")
    parser.add_argument("--params", action="store_true", help="list the wide functions as well")
    args = parser.parse_args()
    long, wide = shape(ROOT / "src" / "formctl")
    kinds = {k: sum(kind == k for _, _, kind in wide) for k in ("internal", "command", "public API")}
    print(
        f"{len(long)} functions over {LONG} lines; {len(wide)} with more than {WIDE} parameters "
        f"({kinds['internal']} internal, {kinds['command']} commands, {kinds['public API']} public API)"
    )
    if args.quick:
        return
    for lines, where in long:
        print(f"  {lines:4d} lines  {where}")
    if args.params:
        for count, where, kind in wide:
            print(f"  {count:4d} params {where}  ({kind})")


if __name__ == "__main__":
    main()
