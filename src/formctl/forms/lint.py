"""Lint: what ``formctl check`` finds wrong with a form that compiles.

Compiling proves the shape (unique ids, steps before fields, a gate on each checkpoint);
it cannot see inside a gate or an executor. These checks do, from the definition's source
and by trying its gates, and each finding names the line of the definition it is about:

- ``unknown-field`` — a gate reads ``v["x"]`` or ``v.get("x")``, an executor reads
  ``ctx.values[...]`` or returns ``Patch({"x": ...})``, for a field the form does not
  declare (and ``s.step_complete``, ``s.checkpoint_fired``, ``Jump`` naming what does not
  exist: ``unknown-step``, ``unknown-checkpoint``);
- ``step-never-opens`` — no combination of the values its gate reads (each field's
  choices, the values the gate compares with, the edges of its type) opens the step;
- ``checkpoint-reads-nothing`` — a checkpoint condition that reads no field and no step,
  so it is the same for every conversation;
- ``sensitive-unmaskable`` — a ``sensitive=True`` field whose type has no stand-in of the
  same shape (a choice, a yes/no, a date, a structure): a transcript can only blank it,
  and the value may be guessed from what the model says around it;
- ``type-undescribed`` — a field whose type the model cannot be told (it reads "value");
- ``executor-is-a-rule`` — an executor that only returns ``Fail`` or ``Patch`` worked out from
  ``ctx.values``: it runs on rising edges only, so a correction leaves what it said standing; a
  ``check`` (for a ``Fail``) or a ``derive`` (for a ``Patch``) follows every correction;
- ``pattern-unexplained`` — a text field whose pattern a rejection cannot put in words: no
  hint, no example that fits it (``Field(examples=[...])`` or "like AB1234" in its ask),
  and not a shape simple enough to say ("two capital letters and four digits"), so a
  person who gets it wrong reads only that it "isn't in the form" the field takes.

It is pure: it reads the form's module source and calls gates on made-up values, never
the store. A gate that raises on every try is left alone (an evaluation defect that
``check`` reports anyway on a new form).
"""

from __future__ import annotations

import ast
import itertools
import linecache
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import CodeType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from formctl.forms.compile import CompiledField, CompiledForm

MAX_TRIES = 4096
_ROLES = {"check": "the test of ", "derived field": "the function of "}
_STATE_READS = ("step_complete", "checkpoint_fired")


@dataclass(frozen=True, slots=True)
class Finding:
    """One warning about a form: a stable ``code``, what is wrong, and where (file and line)."""

    code: str
    message: str
    path: str | None = None
    line: int | None = None

    def render(self) -> str:
        where = f"{self.path}:{self.line}: " if self.path and self.line else (f"{self.path}: " if self.path else "")
        return f"{where}warning: {self.message} [{self.code}]"

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "path": self.path, "line": self.line}


# --------------------------------------------------------------------------- reading source


FunctionNode = ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef
"""The source of a gate or an executor: a ``lambda`` or a ``def``."""


@dataclass
class _Reads:
    """What one gate or executor names: fields, steps, checkpoints, patched fields, jump targets."""

    node: FunctionNode | None = None
    fields: list[tuple[str, int]] = field(default_factory=list)
    steps: list[tuple[str, int]] = field(default_factory=list)
    checkpoints: list[tuple[str, int]] = field(default_factory=list)
    patches: list[tuple[str, int]] = field(default_factory=list)
    jumps: list[tuple[str, int]] = field(default_factory=list)
    constants: list[Any] = field(default_factory=list)
    opaque: bool = False  # the values or the state are passed on somewhere we do not follow


# File name → (its stamp when parsed, the tree): each version of a file is parsed once.
_trees: dict[str, tuple[tuple[int, int] | None, ast.Module | None]] = {}


def _tree(filename: str) -> ast.Module | None:
    """The parsed source of ``filename`` as the file reads now. The same rule as the registry's
    (docs/engine.md, "The registry file"): a form file edited since it was last read is read
    again, so a process that checks a form, has it edited and checks it again (a host, an
    editor's plugin) lints the new file, not the lines of the old one."""
    try:
        info = os.stat(filename)
        stamp: tuple[int, int] | None = (info.st_mtime_ns, info.st_size)
    except OSError:  # not a file (a form built in code, in a REPL): linecache's copy, if any
        stamp = None
    cached = _trees.get(filename)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    linecache.checkcache(filename)  # linecache keeps a file's old lines until asked to check
    source = "".join(linecache.getlines(filename))
    try:
        tree = ast.parse(source) if source else None
    except SyntaxError:
        tree = None
    _trees[filename] = (stamp, tree)
    return tree


def _function_node(fn: Callable[..., Any]) -> tuple[FunctionNode | None, str | None]:
    """The ``lambda`` or ``def`` node of ``fn`` in its module's source, and the file name."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None, None
    tree = _tree(code.co_filename)
    if tree is None:
        return None, code.co_filename
    args = list(code.co_varnames[: code.co_argcount])
    wanted = "<lambda>" if code.co_name == "<lambda>" else code.co_name
    candidates: list[FunctionNode] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Lambda) and wanted == "<lambda>":
            start = node.lineno
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == wanted:
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        else:
            continue
        if start == code.co_firstlineno and [a.arg for a in node.args.args] == args:
            candidates.append(node)
    if len(candidates) > 1:  # several lambdas on one line: the one holding the code's first position
        first = min(((p[0], p[2]) for p in code.co_positions() if p[0] is not None and p[2] is not None), default=None)
        for node in candidates:
            body = node.body if isinstance(node, ast.Lambda) else node
            if first is not None and (body.lineno, body.col_offset) <= first <= (body.end_lineno, body.end_col_offset):
                return node, code.co_filename
    return (candidates[0] if candidates else None), code.co_filename


def _const_str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


class _Reader:
    """Reads one gate ``(v, s)`` or executor ``(ctx)``: which names stand for the values and the
    state, and what each node of its body reads (:func:`_reads`)."""

    def __init__(self, fn: Callable[..., Any], params: list[str], *, executor: bool) -> None:
        self.values_name = None if executor else (params[0] if params else None)
        self.state_name = None if executor else (params[1] if len(params) > 1 else None)
        self.ctx_name = params[0] if executor and params else None
        self.globals: dict[str, Any] = getattr(fn, "__globals__", {})
        self.used: set[int] = set()  # the value and state names read in a way we follow

    def is_values(self, n: ast.AST) -> bool:
        """``v`` of a gate, ``ctx.values`` of an executor."""
        if self.values_name is not None and isinstance(n, ast.Name) and n.id == self.values_name:
            return True
        return (
            self.ctx_name is not None
            and isinstance(n, ast.Attribute)
            and n.attr == "values"
            and isinstance(n.value, ast.Name)
            and n.value.id == self.ctx_name
        )

    def read_names(self, n: ast.AST, out: _Reads) -> None:
        """``v["x"]``, ``v.get("x")``, ``s.step_complete("x")``, ``s.checkpoint_fired("x")``."""
        if isinstance(n, ast.Subscript) and self.is_values(n.value):
            key = _const_str(n.slice)
            if key is not None:
                out.fields.append((key, n.lineno))
                self.used.add(id(n.value))
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            target, attr, first = n.func.value, n.func.attr, _const_str(n.args[0]) if n.args else None
            if self.is_values(target) and attr == "get" and first is not None:
                out.fields.append((first, n.lineno))
                self.used.add(id(target))
            elif self.is_state(target) and attr in _STATE_READS:
                if first is not None:
                    (out.steps if attr == "step_complete" else out.checkpoints).append((first, n.lineno))
                self.used.add(id(target))

    def is_state(self, n: ast.AST) -> bool:
        return bool(self.state_name) and isinstance(n, ast.Name) and n.id == self.state_name

    def read_constant(self, n: ast.AST, out: _Reads) -> None:
        """A literal, or a module-level name bound to one: a value the gate compares with."""
        if isinstance(n, ast.Constant) and _is_plain_constant(n.value):
            out.constants.append(n.value)
        elif isinstance(n, ast.Name) and _is_plain_constant(self.globals.get(n.id)):
            out.constants.append(self.globals[n.id])

    def is_opaque(self, n: ast.AST) -> bool:
        """The values or the state used any other way: passed on, iterated, ..."""
        if isinstance(n, ast.Name) and n.id in (self.values_name, self.state_name):
            return id(n) not in self.used
        return bool(self.ctx_name) and self.is_values(n) and id(n) not in self.used


def _is_plain_constant(value: object) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _read_effects(n: ast.AST, out: _Reads) -> None:
    """``Patch({"x": ...})``, ``Patch(dict(x=...))`` and ``Jump("step")``."""
    if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.args):
        return
    name, first = n.func.id, n.args[0]
    if name == "Patch" and isinstance(first, ast.Dict):
        out.patches.extend((k, n.lineno) for k in map(_const_str, first.keys) if k is not None)
    elif name == "Patch" and isinstance(first, ast.Call) and getattr(first.func, "id", "") == "dict":
        out.patches.extend((kw.arg, n.lineno) for kw in first.keywords if kw.arg)
    elif name == "Jump" and (target_step := _const_str(first)) is not None:
        out.jumps.append((target_step, n.lineno))


def _reads(fn: Callable[..., Any], *, executor: bool = False) -> _Reads:
    """What a gate ``(v, s)`` or an executor ``(ctx)`` reads, from its source."""
    node, _ = _function_node(fn)
    out = _Reads(node)
    if node is None:
        out.opaque = True
        return out
    reader = _Reader(fn, [a.arg for a in node.args.args], executor=executor)
    body = node.body if isinstance(node, ast.Lambda) else node
    for n in ast.walk(body):
        reader.read_names(n, out)
        _read_effects(n, out)
        reader.read_constant(n, out)
    out.opaque = any(reader.is_opaque(n) for n in ast.walk(body))
    return out


# --------------------------------------------------------------------------- the checks


def _schema(annotation: Any) -> dict[str, Any]:
    from formctl.forms.validate import adapter_for

    try:
        schema = adapter_for(annotation).json_schema(mode="validation")
    except Exception:
        return {}
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        non_null: list[dict[str, Any]] = [o for o in options if o.get("type") != "null"]
        if len(non_null) == 1:
            return non_null[0]
    return schema


def _maskable(annotation: Any) -> bool:
    """Has this type a same-shaped stand-in (free text, a number), so a transcript can mask it?"""
    schema = _schema(annotation)
    if "enum" in schema or "const" in schema:
        return False
    if schema.get("type") in ("integer", "number"):
        return True
    return schema.get("type") == "string" and schema.get("format") not in ("date", "date-time", "time", "duration")


def _candidates(f: CompiledField, constants: Iterable[Any]) -> list[Any]:
    """Values to try for a field a gate reads: its choices, or the gate's own constants and the type's edges."""
    schema = _schema(f.schema)
    raw: list[Any] = [None]
    if "enum" in schema:
        raw += list(schema["enum"])
    elif "const" in schema:
        raw.append(schema["const"])
    elif schema.get("type") == "boolean":
        raw += [True, False]
    else:
        numbers = [c for c in constants if isinstance(c, (int, float))]
        raw += [c for c in constants if isinstance(c, str)]
        for c in numbers:
            raw += [c - 1, c, c + 1]
        raw += [0, 1, -1, 10**9, -(10**9), "x", "2000-01-01", "2100-12-31"]
    out: list[Any] = []
    for value in raw:
        try:
            ok = value is None or bool(f.validator.validate(value).ok)
        except Exception:
            ok = False
        parsed = f.validator.validate(value).value if value is not None and ok else value
        if ok and parsed not in out:
            out.append(parsed)
    return out


class _State:
    """A gate's ``s`` for the tries: the steps and checkpoints it reads, set per try."""

    def __init__(self, answers: dict[str, bool]) -> None:
        self._answers = answers
        self.complete = False

    def step_complete(self, step_id: str) -> bool:
        return self._answers.get(f"step:{step_id}", False)

    def checkpoint_fired(self, checkpoint_id: str) -> bool:
        return self._answers.get(f"checkpoint:{checkpoint_id}", False)


def _can_open(compiled: CompiledForm, gate: Callable[..., Any], reads: _Reads) -> bool | None:
    """True if some try opens the gate, False if none does, None if no try could be judged."""
    from formctl.forms.evaluate import GateValues

    declared = {f.id: f for f in compiled.fields}
    names = [name for name, _ in reads.fields if name in declared]
    names = list(dict.fromkeys(names))
    switches = list(
        dict.fromkeys([f"step:{s}" for s, _ in reads.steps] + [f"checkpoint:{c}" for c, _ in reads.checkpoints])
    )
    choices = [_candidates(declared[n], reads.constants) for n in names] + [[True, False] for _ in switches]
    judged = False
    for combo in itertools.islice(itertools.product(*choices), MAX_TRIES):
        values = GateValues(dict(zip(names, combo[: len(names)])), declared)
        state = _State(dict(zip(switches, combo[len(names) :])))
        try:
            if gate(values, state):
                return True
        except Exception:
            continue
        judged = True
    return False if judged else None


def _declaration_lines(filename: str | None) -> dict[tuple[str, str], int]:
    """``(kind, id) → line`` for each ``.step("id"``, ``.field("id"``, ``.checkpoint("id"`` in the module."""
    tree = _tree(filename) if filename else None
    out: dict[tuple[str, str], int] = {}
    if tree is None:
        return out
    for n in ast.walk(tree):
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in ("step", "field", "checkpoint", "check")
        ):
            name = _const_str(n.args[0]) if n.args else None
            if name is not None:
                out.setdefault((n.func.attr, name), n.func.end_lineno or n.lineno)
    return out


def _module_file(compiled: CompiledForm) -> str | None:
    """The file the form was defined in, as its gates and executors say."""
    for fn in _callables(compiled):
        code = getattr(fn[2], "__code__", None)
        if isinstance(code, CodeType):
            return code.co_filename
    return None


def _callables(compiled: CompiledForm) -> list[tuple[str, str, Callable[..., Any], bool]]:
    """Every gate and executor: (kind, id, callable, is_executor)."""
    out: list[tuple[str, str, Callable[..., Any], bool]] = []
    for s in compiled.steps:
        if s.when is not None:
            out.append(("step", s.id, s.when, False))
        if s.on_complete is not None:
            out.append(("step", s.id, s.on_complete, True))
    for f in compiled.fields:
        if f.when is not None:
            out.append(("field", f.id, f.when, False))
        if f.on_fill is not None:
            out.append(("field", f.id, f.on_fill, True))
        if f.derive is not None:
            out.append(("derived field", f.id, f.derive, False))
    for c in compiled.checks:
        out.append(("check", c.id, c.test, False))
        if c.when is not None:
            out.append(("check", c.id, c.when, False))
    for cp in compiled.checkpoints:
        out.append(("checkpoint", cp.id, cp.when, False))
        if cp.run is not None:
            out.append(("checkpoint", cp.id, cp.run, True))
    if compiled.on_complete is not None:
        out.append(("form", compiled.id, compiled.on_complete, True))
    return out


_RULE_EFFECTS = ("Fail", "Patch")


def _only_a_rule(node: FunctionNode | None) -> str | None:
    """The effect (``Fail`` or ``Patch``) an executor only ever returns, working from ``ctx.values``
    alone (no other part of ``ctx``, nothing awaited); None when it does anything else."""
    if node is None or isinstance(node, ast.AsyncFunctionDef) or not node.args.args:
        return None
    ctx = node.args.args[0].arg
    results = (
        [node.body] if isinstance(node, ast.Lambda) else [r.value for r in ast.walk(node) if isinstance(r, ast.Return)]
    )
    made: set[str] = set()
    for value in results:
        if value is None or (isinstance(value, ast.Constant) and value.value is None):
            continue
        name = getattr(value.func, "id", None) if isinstance(value, ast.Call) else None
        if name not in _RULE_EFFECTS:
            return None
        made.add(name)
    body = node.body if isinstance(node, ast.Lambda) else node
    for n in ast.walk(body):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == ctx and n.attr != "values":
            return None
        if isinstance(n, ast.Name) and n.id == ctx and not _is_values_of(n, body):
            return None
    return made.pop() if len(made) == 1 else ("Fail or Patch" if made else None)


def _is_values_of(name: ast.Name, body: ast.AST) -> bool:
    """``name`` is read only as ``name.values``."""
    return any(isinstance(n, ast.Attribute) and n.value is name and n.attr == "values" for n in ast.walk(body))


def _pattern_unexplained(f: CompiledField) -> bool:
    from formctl.forms.describe import field_schema, pattern_example
    from formctl.forms.messages import pattern_words

    pattern = field_schema(f.schema).get("pattern")
    if not isinstance(pattern, str) or not pattern or f.hint:
        return False
    return pattern_example(f.schema, f.ask) is None and pattern_words(pattern) is None


def lint(compiled: CompiledForm, *, path: str | None = None) -> list[Finding]:
    """Every finding for a compiled form, in the order of the definition's lines.

    ``path`` is the form's module file (default: where its gates and executors were defined).
    """
    linter = _Linter(compiled, path or _module_file(compiled))
    for kind, owner, fn, executor in _callables(compiled):
        linter.check_callable(kind, owner, fn, executor)
    for f in compiled.fields:
        linter.check_field(f)
    linter.findings.sort(key=lambda x: (x.line is None, x.line or 0))
    return linter.findings


class _Linter:
    """The findings for one form as they are found, with what every check looks names up in."""

    def __init__(self, compiled: CompiledForm, path: str | None) -> None:
        self.compiled = compiled
        self.path = path
        self.lines = _declaration_lines(path)
        self.fields = {f.id for f in compiled.fields}
        self.steps = {s.id for s in compiled.steps}
        self.checkpoints = {cp.id for cp in compiled.checkpoints}
        self.findings: list[Finding] = []

    def add(self, code: str, message: str, line: int | None) -> None:
        self.findings.append(Finding(code, message, self.path, line))

    def check_callable(self, kind: str, owner: str, fn: Callable[..., Any], executor: bool) -> None:
        """The findings about one gate or executor: the names it reads, and what it does."""
        reads = _reads(fn, executor=executor)
        role = "the executor of " if executor else _ROLES.get(kind, "the gate of ")
        what = role + (f'{kind} "{owner}"' if kind != "form" else "the form")
        self.check_names(what, reads)
        at = (reads.node.lineno if reads.node is not None else None) or self.lines.get((kind, owner))
        effect = _only_a_rule(reads.node) if executor and kind in ("field", "step", "form") else None
        if effect is not None:
            instead = {"Fail": "a .check(...)", "Patch": "a derived field (derive=...)"}.get(
                effect, "a check or a derive"
            )
            self.add(
                "executor-is-a-rule",
                f"{what} only returns {effect} from the values: it runs when its answer first comes in, "
                f"so a later correction leaves it standing; {instead} follows every correction",
                at,
            )
        if executor or reads.node is None or reads.opaque:
            return
        if kind == "checkpoint" and not reads.fields and not reads.steps and not reads.checkpoints:
            self.add(
                "checkpoint-reads-nothing",
                f'checkpoint "{owner}" has a condition that reads no field, so it is the same in every conversation',
                at,
            )
        if kind == "step" and all(name in self.fields for name, _ in reads.fields):
            if _can_open(self.compiled, fn, reads) is False:
                self.add(
                    "step-never-opens",
                    f'step "{owner}" can never open: no value of what its gate reads '
                    f"({', '.join(n for n, _ in reads.fields + reads.steps) or 'nothing'}) makes it true",
                    at,
                )

    def check_names(self, what: str, reads: _Reads) -> None:
        """A field, step or checkpoint a gate or executor names that the form does not declare."""
        for name, line in reads.fields:
            if name not in self.fields:
                self.add("unknown-field", f'{what} reads field "{name}", which the form does not declare', line)
        for name, line in reads.patches:
            if name not in self.fields:
                self.add("unknown-field", f'{what} patches field "{name}", which the form does not declare', line)
        for name, line in reads.steps:
            if name not in self.steps:
                self.add(
                    "unknown-step", f'{what} asks whether step "{name}" is complete; the form has no such step', line
                )
        for name, line in reads.jumps:
            if name not in self.steps and self.compiled.resolve_step(name) is None:
                self.add("unknown-step", f'{what} jumps to step "{name}"; the form has no such step', line)
        for name, line in reads.checkpoints:
            if name not in self.checkpoints:
                self.add(
                    "unknown-checkpoint",
                    f'{what} asks whether checkpoint "{name}" fired; the form has no such checkpoint',
                    line,
                )

    def check_field(self, f: CompiledField) -> None:
        """The findings about one field's declaration: its type, its pattern, who gives it."""
        from formctl.forms.describe import FALLBACK
        from formctl.forms.quotes import value_kind

        at = self.lines.get(("field", f.id))
        if f.sensitive and not _maskable(f.schema):
            self.add(
                "sensitive-unmaskable",
                f'field "{f.id}" is sensitive, but its type ({f.type}) has no stand-in of the '
                "same shape: transcripts can only blank it out",
                at,
            )
        if getattr(f, "source", None) == "person" and value_kind(f.schema) is None:
            self.add(
                "person-unchecked",
                f'field "{f.id}" must come from the person, but its type ({f.type}) is not one the '
                "quote checker can read: every value the model gives it will be asked about",
                at,
            )
        if f.type == FALLBACK:
            self.add(
                "type-undescribed",
                f'field "{f.id}": the model cannot be told its type (it reads "{FALLBACK}"); '
                "use a pydantic-describable type",
                at,
            )
        if _pattern_unexplained(f):
            self.add(
                "pattern-unexplained",
                f'field "{f.id}": a rejected answer cannot say what its pattern wants; give it a '
                'hint ("Two letters and four digits, like AB1234.") or Field(examples=[...])',
                at,
            )
