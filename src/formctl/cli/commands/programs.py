"""``formctl program list | start | show | update | revise | sync | history``: the host's side of goal
programs (docs/goals.md).

A program runs in a scope: ``--subject S`` and ``--key K`` (``--agent A`` for an agent's own
scope). ``start`` takes ``--key`` defaulting to the program's key; the other commands find the
subject's one scope when ``--key`` is left out. Every write is recorded as ``--as NAME``
(default: the login name) with source ``cli``. Reads take ``--json``.
"""

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Tuple, TypeVar

import typer

from formctl.cli.base import _Command, _example, _fail, _print_json, app, command_group
from formctl.cli.options import Command, FormsOpt, JsonOpt, OptionValues, P, StoreOpt, gathered, option
from formctl.json_types import JsonObject

if TYPE_CHECKING:
    from formctl.forms.adapter import FormAdapter
    from formctl.goals.definition import Program
    from formctl.goals.registry import ProgramRegistry
    from formctl.goals.runner import GoalRunner
    from formctl.goals.state import GoalScope
    from formctl.goals.view import GoalStatus

_Found = TypeVar("_Found")
_Checked = Tuple[Optional[str], str]  # an option's text and how it is named in a message ("--key")

program_app = command_group(
    "program",
    "Goal programs: what an intake works toward across forms and visits.",
    "\b\nExamples:\n  formctl program start client-intake --subject firm:1/matter:2 --key intake\n"
    "  formctl program update identity --completed client --subject firm:1/matter:2\n"
    "  formctl program show --subject firm:1/matter:2 --json\n"
    "  formctl program resume-hooks --subject firm:1/matter:2",
)
app.add_typer(program_app)

SubjectOpt = typer.Option(..., "--subject", metavar="S", help="Whose program (qualify it: firm:1/matter:2).")
KeyOpt = typer.Option(None, "--key", metavar="K", help="The scope's key [default: the subject's one program].")
AgentOpt = typer.Option(None, "--agent", metavar="A", help="An agent's own scope [default: none].")
AsOpt = typer.Option(None, "--as", metavar="NAME", help="Who makes the change [default: your login name].")
ReasonOpt = typer.Option(None, "--reason", help="Why (kept in the history and given to the hooks).")


@dataclass(frozen=True)
class _ProgramCall:
    """What a program command is given besides its own arguments (None where it takes no such
    option): whose program (``--subject``, ``--key``, ``--agent``), why (``--reason``), who writes
    (``--as``), where (``--store``, ``--forms``) and how it prints (``--json``)."""

    subject: Optional[str]
    key: Optional[str]
    agent: Optional[str]
    reason: Optional[str]
    by: Optional[str]
    store: Optional[str]
    forms: Optional[str]
    as_json: bool

    @classmethod
    def given(cls, options: OptionValues) -> "_ProgramCall":
        """The call from its options as typer hands them (see :func:`_program_options`)."""

        def text(name: str) -> Optional[str]:
            value = options.get(name)
            return value if isinstance(value, str) else None

        whose = (text("subject"), text("key"), text("agent"))
        return cls(*whose, text("reason"), text("by"), text("store"), text("forms"), options.get("as_json") is True)

    @property
    def whose(self) -> str:
        """``--subject``, for a command that requires it (typer refuses a call without it)."""
        return self.subject or ""


_OPTIONS = {
    "subject": option("subject", str, SubjectOpt),
    "key": option("key", Optional[str], KeyOpt),
    "agent": option("agent", Optional[str], AgentOpt),
    "reason": option("reason", Optional[str], ReasonOpt),
    "by": option("by", Optional[str], AsOpt),
    "store": option("store", StoreOpt, None),
    "forms": option("forms", FormsOpt, None),
    "as_json": option("as_json", JsonOpt, False),
}


def _program_options(*names: str, **worded: inspect.Parameter) -> Callable[[Callable[P, None]], Command]:
    """The program options ``names``, in this order after the command's own arguments (``worded``:
    one a command words its own way); the command is given them as its ``call``."""
    return gathered("call", [worded.get(n, _OPTIONS[n]) for n in names], _ProgramCall.given)


def _checked(*pairs: _Checked) -> None:
    from formctl.cli.args import check_text

    for text, what in pairs:
        check_text(text, what)
        if text is not None and not text.strip():
            _fail(f"{what} needs a value.", 2)


def _scope(adapter: "FormAdapter", subject: str, key: Optional[str], agent: Optional[str]) -> "GoalScope":
    """The scope ``--key`` names (a scope's key or a program's), or the subject's one program when it
    is left out: the rule of :mod:`formctl.goals.finding`. Nothing found, or several, is one line."""
    from formctl.goals.finding import ProgramChoiceError, find_scope
    from formctl.goals.runner import goal_store_of

    try:
        scope = find_scope(goal_store_of(adapter), subject, key, agent)
    except ProgramChoiceError as exc:
        _fail(exc.message, 2)
    if scope is None:
        named = f' "{key}"' if key is not None else ""
        _fail(f'No goal program{named} has started for "{subject}" (formctl program start PROGRAM --subject ...).')
    return scope


def _check_scope(subject: str, key: Optional[str], agent: Optional[str], by: Optional[str], *more: _Checked) -> None:
    """Check the options naming a scope and its writer (and ``more`` ``(text, what)`` pairs),
    before anything is opened: bad input is one line and touches no store."""
    _checked((subject, "--subject"), (key, "--key"), (agent, "--agent"), (by, "--as"), *more)


def _runner(
    store: Optional[str],
    subject: str,
    key: Optional[str],
    agent: Optional[str],
    by: Optional[str],
    forms: Optional[str] = None,
) -> "GoalRunner":
    from formctl.cli.workspace import HOST_SOURCE, default_subject, open_store
    from formctl.goals.runner import GoalRunner

    adapter = open_store(store)
    scope = _scope(adapter, subject, key, agent)
    return GoalRunner(
        adapter, scope=scope, actor=by or default_subject(), source=HOST_SOURCE, hooks=_hooks(adapter, scope, forms)
    )


def _hooks(adapter: "FormAdapter", scope: "GoalScope", forms: Optional[str] = None) -> object:
    """The goal hooks registered with the program ``scope`` runs (None when none are): a command
    that writes runs them, as the host's own runner would (docs/goals.md, "Hooks")."""
    from formctl.goals.runner import goal_store_of

    state = goal_store_of(adapter).get(scope)
    return _program_registry(forms).hooks(state.program.key) if state is not None else None


def _program_runner(
    store: Optional[str], subject: str, key: Optional[str], agent: Optional[str], by: Optional[str], *more: _Checked
) -> "GoalRunner":
    """The checked options, then the runner of the scope they name (see :func:`_scope`)."""
    _check_scope(subject, key, agent, by, *more)
    return _runner(store, subject, key, agent, by)


def _started(found: Optional[_Found], subject: str) -> _Found:
    """``found`` (a status, a history), or the one line saying the scope has no program."""
    if not found:
        _fail(f'No goal program has started for "{subject}".')
    return found


def _report(runner: "GoalRunner", status: "GoalStatus", as_json: bool) -> None:
    """What every program command prints: the status, then a warning per hook that failed."""
    _print_status(status, as_json)
    _warn_hooks(runner)


def _items(values: Optional[List[str]], reasons: Optional[Dict[str, Optional[str]]] = None) -> List[str]:
    """``--completed a --completed b``, ``--completed a,b``, or ``--deferred 'a=why'`` (one item
    with its own reason, put in ``reasons``; the reason may hold commas)."""
    out: List[str] = []
    for value in values or []:
        if "=" in value:
            key, why = (part.strip() for part in value.split("=", 1))
            if not key or not why:
                _fail(f'"{value}" is ITEM=REASON with both halves given.', 2)
            if reasons is not None:
                reasons[key] = why
            out.append(key)
            continue
        out += [part.strip() for part in value.split(",") if part.strip()]
    return out


def _print_status(status: "GoalStatus", as_json: bool) -> None:
    if as_json:
        _print_json(status.to_dict(full=True))
        return
    typer.echo(f"{status.program.key} · {status.scope} · version {status.version}")
    typer.echo(status.line)
    from formctl.goals.evaluate import GOAL_RETIRED
    from formctl.goals.state import COMPLETED, DECLINED, DEFERRED, PENDING

    marks: Dict[str, str] = {COMPLETED: "✓", DEFERRED: "…", DECLINED: "✗", PENDING: "·"}
    number = 0
    for goal in status.goals:
        if goal.status != GOAL_RETIRED:
            number += 1
        head = f"{number}." if goal.status != GOAL_RETIRED else "-"
        typer.echo(f"  {head} {goal.title} [{goal.status}]  ({goal.key})")
        for item in goal.items:
            extra = ""
            if item.form is not None:
                extra = f"  form {item.form}" + (f", instance {item.instance}" if item.instance else "")
            if item.reason:
                extra += f"  — {item.reason}"
            state = "retired" if item.retired else item.disposition
            typer.echo(f"       {marks.get(item.disposition, '·')} {item.label} ({item.key}): {state}{extra}")
    if status.follow_ups:
        typer.echo("Follow-ups still owed:")
        for f in status.follow_ups:
            where = f"{f.goal}.{f.item}" + ("" if f.defined else ", no longer defined")
            typer.echo(f"  … {f.label} ({where})" + (f" — {f.reason}" if f.reason else ""))


_ONLY_SUBJECT = option(
    "subject", Optional[str], typer.Option(None, "--subject", metavar="S", help="Only this subject's programs.")
)


@program_app.command(
    "list", cls=_Command, epilog=_example("formctl program list", "formctl program list --subject dana")
)
@_program_options("subject", "store", "forms", "as_json", subject=_ONLY_SUBJECT)
def program_list(call: _ProgramCall) -> None:
    """List the registered programs and the programs running in the store."""
    from formctl.cli.workspace import is_database, open_store, registry_path, store_path
    from formctl.errors import RegistryError
    from formctl.goals.registry import ProgramRegistry
    from formctl.goals.runner import goal_store_of

    subject, store = call.subject, call.store
    _checked((subject, "--subject"))
    try:
        registered = [r.to_dict() for r in ProgramRegistry.from_toml(registry_path(call.forms)).list()]
    except RegistryError:
        registered = []
    running: List[JsonObject] = []
    if is_database(store) or store_path(store).exists():
        goals = goal_store_of(open_store(store))
        for scope in goals.scopes(subject):
            state = goals.get(scope)
            if state is not None:
                from formctl.goals.view import status_of

                s = status_of(state)
                running.append(
                    {
                        "scope": scope.to_json(),
                        "program": s.program.key,
                        "version": s.version,
                        "active_goal": s.active_goal,
                        "complete": s.complete,
                        "follow_ups": len(s.follow_ups),
                        "updated_at": s.updated_at,
                    }
                )
    if call.as_json:
        _print_json({"programs": registered, "running": running})
        return
    typer.echo("Programs:" if registered else "No programs are registered.")
    for r in registered:
        typer.echo(f"  {r['key']}  {r['name']}" + (f" — {r['description']}" if r["description"] else ""))
    if running:
        typer.echo("Running:")
    for row in running:
        where = f"{row['scope']['subject']} / {row['scope']['key']}"
        if row["scope"]["agent"]:
            where += f" / {row['scope']['agent']}"
        progress = "complete" if row["complete"] else f"active: {row['active_goal']}"
        owed = f", {row['follow_ups']} follow-up(s)" if row["follow_ups"] else ""
        typer.echo(f"  {where}  {row['program']} v{row['version']} ({progress}{owed})")


_START_KEY = option(
    "key", Optional[str], typer.Option(None, "--key", metavar="K", help="The scope's key [default: PROGRAM].")
)


@program_app.command(
    "start",
    cls=_Command,
    epilog=_example("formctl program start client-intake --subject firm:1/matter:2 --key intake"),
)
@_program_options("subject", "key", "agent", "reason", "by", "store", "forms", "as_json", key=_START_KEY)
def program_start(
    call: _ProgramCall, program: str = typer.Argument(..., metavar="PROGRAM", help="A registered program's key.")
) -> None:
    """Start a registered program for a subject."""
    from formctl.cli.workspace import HOST_SOURCE, default_subject, open_store, registry_path
    from formctl.goals.registry import ProgramRegistry
    from formctl.goals.runner import GoalRunner
    from formctl.goals.state import GoalScope

    subject, key, agent, forms = call.whose, call.key, call.agent, call.forms
    _check_scope(subject, key, agent, call.by, (program, "PROGRAM"), (call.reason, "--reason"))
    definition = _checked_program(ProgramRegistry.from_toml(registry_path(forms)).load(program), forms)
    adapter = open_store(call.store)
    if key is None:  # never a second program beside the one this name already finds
        scope = _unstarted_scope(adapter, subject, program, agent)
    else:
        scope = GoalScope(subject=subject, key=key, agent=agent)
    hooks = _program_registry(forms).hooks(program)
    runner = GoalRunner(adapter, scope=scope, actor=call.by or default_subject(), source=HOST_SOURCE, hooks=hooks)
    _report(runner, runner.start(definition, reason=call.reason), call.as_json)


def _checked_program(program: "Program", forms: Optional[str]) -> "Program":
    """``program``, once every form its live items are bound to is registered (one line otherwise)."""
    from formctl.cli.workspace import open_registry
    from formctl.goals.finding import check_bound_forms

    check_bound_forms(program, [f["id"] for f in open_registry(forms).list()])
    return program


def _unstarted_scope(adapter: "FormAdapter", subject: str, program: str, agent: Optional[str]) -> "GoalScope":
    """The scope ``program start PROGRAM`` (no --key) starts in, refused when the subject already
    runs that program (under any key): that one is shown, not a second one started."""
    from formctl.goals.finding import ProgramChoiceError, find_scope
    from formctl.goals.runner import goal_store_of
    from formctl.goals.state import GoalScope

    try:
        found = find_scope(goal_store_of(adapter), subject, program, agent)
    except ProgramChoiceError as exc:
        _fail(exc.message, 2)
    if found is not None:
        _fail(
            f'{subject} already runs program "{program}" (--key {found.key}): '
            f"formctl program show --subject {subject} --key {found.key}. Give --key for another one."
        )
    return GoalScope(subject=subject, key=program, agent=agent)


@program_app.command("show", cls=_Command, epilog=_example("formctl program show --subject firm:1/matter:2 --json"))
@_program_options("subject", "key", "agent", "store", "as_json")
def program_show(call: _ProgramCall) -> None:
    """Show a subject's program: its goals, items, dispositions and the follow-ups still owed."""
    runner = _program_runner(call.store, call.whose, call.key, call.agent, "reader")
    _report(runner, _started(runner.inspect(), call.whose), call.as_json)


@program_app.command(
    "update",
    cls=_Command,
    epilog=_example(
        "formctl program update updates --completed changes --deferred documents "
        "--reason 'documents tomorrow' --subject firm:1/matter:2",
        "formctl program update updates --completed 'changes=New address' --deferred 'documents=Posting them' "
        "--subject firm:1/matter:2",
    ),
)
@_program_options("reason", "key", "agent", "by", "store", "forms", "as_json")
def program_update(
    call: _ProgramCall,
    goal: str = typer.Argument(..., metavar="GOAL", help="The goal's key (any goal, not only the active one)."),
    subject: str = SubjectOpt,
    completed: Optional[List[str]] = typer.Option(None, "--completed", metavar="ITEM", help="Items done."),
    deferred: Optional[List[str]] = typer.Option(None, "--deferred", metavar="ITEM", help="Items for later."),
    declined: Optional[List[str]] = typer.Option(None, "--declined", metavar="ITEM", help="Items not needed."),
    reopened: Optional[List[str]] = typer.Option(None, "--reopened", metavar="ITEM", help="Items to make pending."),
    if_version: Optional[int] = typer.Option(
        None, "--if-version", min=1, metavar="N", help="Fail if the program moved past version N."
    ),
) -> None:
    """Settle or reopen items of one goal.

    --reason is the change's reason (the history's) and the reason of the items it settles,
    except completed ones when the same update defers or declines items: then it explains
    those. ITEM=REASON gives one item its own reason (--deferred 'documents=Posting them').

    Without --if-version the update is retried while other writers change other items; a
    change to the same items, or to the definitions, fails it.
    """
    named = ((completed, "--completed"), (deferred, "--deferred"), (declined, "--declined"))
    items = [(value, what) for values, what in named for value in values or []]
    _check_scope(subject, call.key, call.agent, call.by, (goal, "GOAL"), (call.reason, "--reason"), *items)
    runner = _runner(call.store, subject, call.key, call.agent, call.by, call.forms)
    own: Dict[str, Optional[str]] = {}
    status = runner.update(
        goal=goal,
        completed=_items(completed, own),
        deferred=_items(deferred, own),
        declined=_items(declined, own),
        reopened=_items(reopened, own),
        reason=call.reason,
        if_version=if_version,
        reasons=own,
    )
    _report(runner, status, call.as_json)


def _warn_hooks(runner: "GoalRunner") -> None:
    from formctl.goals.state import RECEIPT_FAILED

    for outcome in runner.last_hooks:
        if outcome.status == RECEIPT_FAILED:
            typer.echo(
                f"warning: the {outcome.kind} hook of goal {outcome.goal} failed ({outcome.error}); "
                "the change is saved, and resume runs the hook again.",
                err=True,
            )


@program_app.command(
    "revise",
    cls=_Command,
    epilog=_example(
        "formctl program revise --from forms/client_intake_follow_up.toml --if-version 2 "
        "--subject firm:1/matter:2 --reason 'existing-matter follow-up'"
    ),
)
@_program_options("reason", "key", "agent", "by", "store", "forms", "as_json")
def program_revise(
    call: _ProgramCall,
    source: str = typer.Option(..., "--from", metavar="FILE", help="The whole program: TOML, or JSON as show --json."),
    if_version: int = typer.Option(..., "--if-version", min=1, metavar="N", help="The version it was made from."),
    subject: str = SubjectOpt,
) -> None:
    """Replace a program's definitions with the whole program in FILE.

    Progress is kept by stable keys. Locked goals and items cannot be edited, removed, retired
    or unlocked, and every item bound to a form must name a registered one (--forms). A JSON
    file may be what show --json prints (its "definition" is used).
    """
    _check_scope(subject, call.key, call.agent, call.by, (source, "--from"), (call.reason, "--reason"))
    # A file that is not a program, or that binds an item to a form not registered, is said before the store opens.
    program = _checked_program(_read_program(source), call.forms)
    runner = _runner(call.store, subject, call.key, call.agent, call.by, call.forms)
    _report(runner, runner.revise(program, if_version=if_version, reason=call.reason), call.as_json)


def _read_program(source: str) -> "Program":
    from formctl.cli.program_check import read_program_file

    return read_program_file(source)


@program_app.command("sync", cls=_Command, epilog=_example("formctl program sync --subject firm:1/matter:2"))
@_program_options("subject", "key", "agent", "by", "store", "forms", "as_json")
def program_sync(call: _ProgramCall) -> None:
    """Complete the items bound to forms whose instance has completed since.

    Every program write does this too; sync is for when a form was completed outside the
    program's chat (formctl run FORM, formctl fill) and nothing else was written since.
    """
    _check_scope(call.whose, call.key, call.agent, call.by)
    runner = _runner(call.store, call.whose, call.key, call.agent, call.by, call.forms)
    _report(runner, _started(runner.sync(), call.whose), call.as_json)


_ONLY_KEY = option(
    "key", Optional[str], typer.Option(None, "--key", metavar="K", help="Only this program of --subject.")
)


@program_app.command(
    "resume-hooks",
    cls=_Command,
    epilog=_example(
        "formctl program resume-hooks", "formctl program resume-hooks --subject firm:1/matter:2 --key intake"
    ),
)
@_program_options("subject", "key", "agent", "store", "forms", "as_json", subject=_ONLY_SUBJECT, key=_ONLY_KEY)
def program_resume_hooks(call: _ProgramCall) -> None:
    """Run the goal hooks not yet done: failed ones, and ones whose process died mid-run.

    Every program of the store (of --subject; --key for one) is looked at. The hooks run are
    the ones registered with the program (hooks = "module:attribute" in its [programs] table);
    a program with none registered has its hooks left for its host's own resume_hooks(). One
    line per scope, one error line per hook that failed again (exit 1).
    """
    from formctl.cli.workspace import HOST_SOURCE, default_subject, open_store
    from formctl.goals.state import RECEIPT_FAILED

    subject, key, agent = call.subject, call.key, call.agent
    _checked((subject, "--subject"), (key, "--key"), (agent, "--agent"))
    if key is not None and subject is None:
        _fail("--key needs --subject (whose program).", 2)
    adapter = open_store(call.store)
    registry = _program_registry(call.forms)
    rows = [
        _resume_scope(adapter, scope, registry, default_subject(), HOST_SOURCE)
        for scope in _scopes(adapter, subject, key, agent)
    ]
    failed = [(row, o) for row in rows for o in row["outcomes"] if o["status"] == RECEIPT_FAILED]
    if call.as_json:
        _print_json({"scopes": rows})
    else:
        for row in rows:
            typer.echo(_resume_line(row))
        for row, o in failed:
            typer.echo(
                f"error: {row['where']}: the {o['kind']} hook of goal {o['goal']} failed again ({o['error']}).",
                err=True,
            )
    if failed:
        raise typer.Exit(1)


def _program_registry(forms: Optional[str]) -> "ProgramRegistry":
    import os

    from formctl.cli.workspace import registry_path
    from formctl.errors import RegistryError
    from formctl.goals.registry import ProgramRegistry

    try:  # --forms, else FORMCTL_FORMS, else ./forms (as cli/options.py reads it)
        return ProgramRegistry.from_toml(registry_path(forms or os.environ.get("FORMCTL_FORMS")))
    except RegistryError:
        return ProgramRegistry()


def _scopes(
    adapter: "FormAdapter", subject: Optional[str], key: Optional[str], agent: Optional[str]
) -> List["GoalScope"]:
    """The scope --key names, or every scope (of the subject, of the agent) with a program."""
    from formctl.goals.runner import goal_store_of

    if key is not None and subject is not None:
        return [_scope(adapter, subject, key, agent)]
    return [s for s in goal_store_of(adapter).scopes(subject) if agent is None or s.agent == agent]


def _resume_scope(
    adapter: "FormAdapter", scope: "GoalScope", registry: "ProgramRegistry", actor: str, source: str
) -> JsonObject:
    """Resume one scope's hooks with its program's registered hooks: what happened, as a row."""
    import dataclasses

    from formctl.goals.runner import GoalRunner, goal_store_of
    from formctl.goals.state import RECEIPT_OK

    goals = goal_store_of(adapter)
    state = goals.get(scope)
    program = state.program.key if state is not None else None
    hooks = registry.hooks(program) if program is not None else None
    where = f"{scope.subject} / {scope.key}" + (f" / {scope.agent}" if scope.agent else "")
    row: JsonObject = {"scope": scope.to_json(), "where": where, "program": program, "hooks": hooks is not None}
    if hooks is None:
        row["outcomes"] = []
        row["left"] = sum(1 for r in goals.receipts(scope) if r.status != RECEIPT_OK)
        return row
    runner = GoalRunner(adapter, scope=scope, actor=actor, source=source, hooks=hooks)
    row["outcomes"] = [dataclasses.asdict(o) for o in runner.resume_hooks()]
    row["left"] = 0
    return row


def _resume_line(row: JsonObject) -> str:
    if not row["hooks"]:
        if not row["left"]:
            return f"{row['where']}: no hooks to run"
        return f"{row['where']}: {row['left']} hook(s) not done, left: program {row['program']} registers no hooks"
    counts: Dict[str, int] = {}
    for o in row["outcomes"]:
        counts[o["status"]] = counts.get(o["status"], 0) + 1
    if not counts:
        return f"{row['where']}: no hooks to run"
    return f"{row['where']}: " + ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))


@program_app.command("history", cls=_Command, epilog=_example("formctl program history --subject firm:1/matter:2"))
@_program_options("subject", "key", "agent", "store", "as_json")
def program_history(call: _ProgramCall) -> None:
    """Every version of a subject's program, oldest first: who changed what, when and why."""
    history = _started(_program_runner(call.store, call.whose, call.key, call.agent, "reader").history(), call.whose)
    if call.as_json:
        _print_json({"history": [h.to_dict(full=True) for h in history]})
        return
    for h in history:
        moved = ", ".join(f"{t.goal} {t.kind}" for t in h.transitions)
        typer.echo(
            f"v{h.version}  {h.updated_at}  {h.change} by {h.actor}"
            + (f" ({h.source})" if h.source else "")
            + (f": {h.reason}" if h.reason else "")
        )
        typer.echo(f"     {h.line}" + (f"  [{moved}]" if moved else ""))
