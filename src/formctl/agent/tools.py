"""The model-facing tool surface: ten tools over a :class:`~formctl.forms.runner.FormRunner`.

Each tool is one pydantic model (its arguments, validated strictly: :mod:`.arguments`) plus one
handler; the JSON schema the model reads is generated from the same model, so the schema and the
validation can never disagree. The descriptions are short because the tool list is re-sent with
every model call (``benchmarks/context.py``); what every tool shares is said once, in the system
prompt.
Results use one envelope (docs/engine.md, 'Tool results'); the decisions beyond it (malformed
arguments, ``""`` meaning omitted, ``form_start`` refusing while a form is open, a bug in a
form returned as data) are in docs/tools.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Final, Never

from formctl.agent.arguments import (
    AbandonArgs,
    FillArgs,
    HistoryArgs,
    InspectArgs,
    NoArgs,
    ReviseArgs,
    RunnerT,
    StartArgs,
    StatusArgs,
    Tool,
    ToolArgs,
    WithdrawArgs,
    parse_arguments,
    person_row,
    row,
)
from formctl.agent.person import Person, confirm_ending, confirm_unconfirmed
from formctl.errors import (
    FormBlockedError,
    FormError,
    InvalidArgumentError,
    NotFoundError,
    ToolSelectionError,  # defined with every other formctl error
)
from formctl.forms.lifecycle import is_closed
from formctl.forms.provenance import ModelWrite
from formctl.json_types import JsonObject, JsonValue

if TYPE_CHECKING:
    from formctl.forms.compile import CompiledForm
    from formctl.forms.runner import FormRunner

__all__ = [
    "EVERY_SUBJECT",
    "INVALID_ARGUMENTS",
    "TOOL_NAMES",
    "FormTools",
    "ToolSelectionError",
    "error_envelope",
    "select_tools",
    "success_envelope",
    "tool_definitions",
]

INVALID_ARGUMENTS = InvalidArgumentError.code  # "invalid_arguments"
UNKNOWN_TOOL = "unknown_tool"


# A write refused while the form waits for approval (``form_blocked``) says the way out:
# without it a model could only tell the person that nothing can change until a host decides,
# although the person may take the request back (form_withdraw) and correct the answers. The
# way out comes before the form's own wait message, which may be long (results are cut at
# ECHO_LIMIT characters).
def _waiting_message(exc: FormBlockedError) -> str:
    message = (
        f'Waiting on checkpoint "{exc.checkpoint_id}": nothing can change until it is decided, '
        "unless the person asks to withdraw the request (form_withdraw)."
    )
    return f"{message} {exc.wait_message}" if exc.wait_message else message


# --------------------------------------------------------------------------- envelopes


ECHO_LIMIT = 200  # characters of any one string a tool result carries back


def clipped(node: JsonValue) -> JsonValue:
    """``node`` with every string longer than ECHO_LIMIT cut to its first ECHO_LIMIT characters and
    its length: a long value (or a long unknown field name) is never echoed whole to the model.
    A lone surrogate (a model's or a terminal's undecodable byte, echoed in an unknown field id
    or an error) is written as its escape, ``\\udce9``: the result is always valid UTF-8."""
    if isinstance(node, str):
        if not node.isascii():
            node = _readable(node)
        if len(node) <= ECHO_LIMIT:
            return node
        return f"{node[:ECHO_LIMIT]}… ({len(node):,} characters)"
    if isinstance(node, dict):
        return {clipped(k): clipped(v) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        return [clipped(v) for v in node]
    return node


def _readable(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def success_envelope(data: JsonValue) -> JsonObject:
    return {"status": "success", "data": data}


def error_envelope(message: str, code: str | None) -> JsonObject:
    return {"status": "error", "message": message, "data": {"code": code} if code else None}


# --------------------------------------------------------------------------- handlers


def _form_list(runner: FormRunner, a: NoArgs) -> JsonValue:
    return {"forms": runner.list()}


def _person_or_host_only(compiled: CompiledForm, name: str) -> bool:
    """Is ``name`` (an id or a label) a field whose value only the person or a host may give?"""
    field_id = compiled.resolve_field(name)
    return field_id is not None and bool(compiled.field_by_id[field_id].source)


def _form_start(runner: FormRunner, a: StartArgs, person: Person | None = None) -> JsonValue:
    # A second open instance of the form is the runner's to refuse (FormRunner.start: any open
    # instance of the subject's, not only the conversation's own), with form_open.
    compiled = runner.compiled(a.form)
    seed = dict(a.values or {})
    # A model's seed for a field only the person (or a host) may give is judged like any model
    # write: after the start, as a fill with no quotes (so the person is asked, or it is refused).
    judged = {k: seed.pop(k) for k in list(seed) if _person_or_host_only(compiled, k)}
    started = runner.start(compiled.id, seed=seed if a.values is not None else None)
    if not judged:
        return started.to_dict()
    if is_closed(started.view):
        # The seed ended the form (a routing rule closed it): the start happened and says so;
        # the values still to be judged are not written to a closed form, and are listed as such.
        data = started.to_dict()
        data["not_written"] = sorted(judged)
        data["not_written_note"] = "The form ended with the start, so these were not written."
        return data
    result = runner.fill(judged, instance_id=started.instance_id, write=_model_write(a.quotes, person))
    data = confirm_unconfirmed(runner, result, person, started.instance_id)
    first = started.to_dict()  # what the start itself reported comes first
    for key in ("captured", "held", "renamed", "unknown_fields", "rejected", "ignored"):
        if first.get(key):
            data[key] = [*first[key], *data.get(key, [])]
    for key in ("held_note", "unknown_note", "ignored_note"):
        if key in first:
            data[key] = first[key]
    return data


def _form_status(runner: FormRunner, a: StatusArgs) -> JsonValue:
    return runner.status(instance_id=a.instance_id).to_dict()


def _form_inspect(runner: FormRunner, a: InspectArgs) -> JsonValue:
    return runner.inspect(a.scope, a.id, instance_id=a.instance_id).to_dict()


def _model_write(quotes: JsonObject | None, person: Person | None) -> ModelWrite:
    """A model's write: its quotes, checked against the person's own messages (docs/engine.md, "Provenance")."""
    if person is None:  # no conversation: nobody's words to check, nobody to ask
        return ModelWrite(quotes or {}, (), enforce=False)
    return ModelWrite(quotes or {}, person.words(), seeds=dict(person.seeds), opened_on=person.opened_on)


def _form_fill(runner: FormRunner, a: FillArgs, person: Person | None = None) -> JsonValue:
    result = runner.fill(a.values, instance_id=a.instance_id, write=_model_write(a.quotes, person))
    return confirm_ending(runner, confirm_unconfirmed(runner, result, person, a.instance_id), result, person)


def _form_revise(runner: FormRunner, a: ReviseArgs, person: Person | None = None) -> JsonValue:
    if a.action == "undo":
        return runner.undo(a.field, instance_id=a.instance_id).to_dict()
    if a.action == "redo":
        return runner.redo(a.field, instance_id=a.instance_id).to_dict()
    if a.field is None:
        raise InvalidArgumentError(f"action={a.action} needs a field.")
    if a.action == "retract":
        return runner.retract(a.field, reason=a.reason, instance_id=a.instance_id).to_dict()
    result = runner.revise(
        a.field, a.value, reason=a.reason, instance_id=a.instance_id, write=_model_write(a.quotes, person)
    )
    return confirm_ending(runner, confirm_unconfirmed(runner, result, person, a.instance_id), result, person)


def _form_submit(runner: FormRunner, a: StatusArgs) -> JsonValue:
    return runner.submit(instance_id=a.instance_id).to_dict()


def _form_abandon(runner: FormRunner, a: AbandonArgs) -> JsonValue:
    instance = runner.abandon(a.reason, instance_id=a.instance_id)
    return {"instance_id": instance.id, "status": instance.status}


def _form_withdraw(runner: FormRunner, a: WithdrawArgs) -> JsonValue:
    """The person takes back the request the form waits on (``runner.withdraw``, recorded like a
    resolution: docs/engine.md, "Host acts"); the answers are editable again."""
    return runner.withdraw(a.instance_id, reason=a.reason).to_dict()


def _form_history(runner: FormRunner, a: HistoryArgs) -> JsonValue:
    """One instance (outline + values + held), or a list of the subject's instances.

    Read-only, like every runner read: nothing is migrated, recovered or committed.
    """
    if a.instance_id is not None:
        instance = runner.open_instance(a.instance_id)
        if instance is None:
            raise NotFoundError(f'No form instance "{a.instance_id}".')
        try:
            view = runner.view(a.instance_id)
        except FormError:  # its form is no longer registered or no longer loads: the raw answers
            return {
                "instance_id": instance.id,
                "form": instance.def_id,
                "status": instance.status,
                "values": instance.in_force_values(),
                "updated_at": instance.updated_at,
            }
        from formctl.forms.project import answers, outline_view

        out = outline_view(view.compiled, view.evaluation, view.instance).to_dict()
        out.update(answers(view.compiled, view.evaluation))
        return out
    rows = runner.instances(subject=a.subject or runner.subject, form_id=a.form, status=a.status, limit=a.limit)
    return {"instances": [row.to_dict(subject=False) for row in rows]}


# --------------------------------------------------------------------------- the surface


# Descriptions are cut to what changes the model's behaviour. Each clause is there
# because a model got it wrong without it (the reference implementation's agentic bench):
# reading the field list aloud, promising ask=false fields, blanking a field with "".
# form_withdraw is the tenth tool, beyond the design's nine (docs/tools.md says why): a form
# waiting for approval takes no writes, so without it the person's "I need to change the
# total" had no way through the model. "If the person asks": an approval covers what it was
# asked about, so a model must never take the request back on its own to make a change.
_TOOLS: tuple[Tool[FormRunner], ...] = (
    row("form_list", "Forms that can be started.", NoArgs, _form_list),
    person_row(
        "form_start",
        "Start a form, seeding anything known from any step. Don't read the field list aloud.",
        StartArgs,
        _form_start,
    ),
    row(
        "form_status",
        "The open step in full. ask=true: steer toward it now; ask=false: answered, not applicable or later.",
        StatusArgs,
        _form_status,
    ),
    row(
        "form_inspect",
        "Beyond the open step: the outline, a step or a field. ask=false fields may be skipped; don't promise them.",
        InspectArgs,
        _form_inspect,
    ),
    person_row(
        "form_fill",
        "Send every value learned, from any step, in one call. See captured, rejected (fix and resend), "
        "held (kept, not applicable now).",
        FillArgs,
        _form_fill,
    ),
    person_row(
        "form_revise",
        "Correct (set), retract, undo or redo an answer. Nothing is lost. Never blank a field "
        'with "" or 0: retract it.',
        ReviseArgs,
        _form_revise,
    ),
    row(
        "form_submit",
        "Send a ready form, once the user confirmed your read-back of every answer.",
        StatusArgs,
        _form_submit,
    ),
    row(
        "form_abandon",
        "Close the form unfinished, when the user wants to stop. Answers are kept.",
        AbandonArgs,
        _form_abandon,
    ),
    row(
        "form_withdraw",
        "If the person asks: withdraw the awaited approval request, so answers can change.",
        WithdrawArgs,
        _form_withdraw,
    ),
    row("form_history", "Read-only: earlier forms, or one form's answers by instance_id.", HistoryArgs, _form_history),
)

_BY_NAME = {t.name: t for t in _TOOLS}
TOOL_NAMES: tuple[str, ...] = tuple(t.name for t in _TOOLS)


def _compact(node: JsonValue) -> JsonValue:
    """pydantic's JSON schema without what the model does not need: titles, ``null`` branches
    of optional parameters (omitting is the way to say nothing), ``default: null``, and
    ``additionalProperties: true`` (the default)."""
    if isinstance(node, list):
        return [_compact(x) for x in node]
    if not isinstance(node, dict):
        return node
    any_of = node.get("anyOf")
    if isinstance(any_of, list):
        rest = [b for b in any_of if b != {"type": "null"}]
        if len(rest) == 1 and len(rest) < len(any_of):
            merged = {k: v for k, v in node.items() if k != "anyOf"}
            merged.update(rest[0])
            node = merged
    out: JsonObject = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "default" and value is None:
            continue
        if key == "additionalProperties" and value is True:
            continue
        if key == "properties":
            out[key] = {name: _compact(prop) for name, prop in value.items()}
            continue
        out[key] = _compact(value)
    return out


def _schema(args: type[ToolArgs]) -> JsonObject:
    schema: JsonObject = _compact(args.model_json_schema())
    schema.pop("description", None)
    schema.setdefault("properties", {})
    return schema


_DEFINITIONS: dict[str, JsonObject] = {}


def definition(tool: Tool[Never]) -> JsonObject:
    """A tool's definition as the model reads it (Anthropic ``tools`` shape): name, description, the
    compact JSON schema of its arguments. Built once per tool (form or goal tool alike), copied out."""
    cached = _DEFINITIONS.get(tool.name)
    if cached is None:
        cached = {"name": tool.name, "description": tool.description, "input_schema": _schema(tool.args)}
        _DEFINITIONS[tool.name] = cached
    copy: JsonObject = json.loads(json.dumps(cached))  # a private copy: callers may add cache_control
    return copy


def _matches(name: str, selector: str) -> bool:
    return name == selector or name.endswith("_" + selector)


def select_tools(
    allow: list[str] | None = None,
    deny: list[str] | None = None,
    *,
    surface: tuple[str, ...] = TOOL_NAMES,
    what: str = "tool",
) -> list[str]:
    """The tool names left after ``allow`` narrows and ``deny`` subtracts, in surface order.

    A selector matches a tool named exactly so, or ending in ``_«selector»`` (``fill``,
    ``history``). Both lists are resolved against the full surface, and a selector that
    matches nothing raises :class:`ToolSelectionError` (code ``unknown_tool``): a typo in a
    deny list must not silently leave a tool enabled. ``surface`` and ``what`` serve another
    tool set with the same rule (the goal tools: agent/goal_tools.py).
    """
    for selector in [*(allow or []), *(deny or [])]:
        if not isinstance(selector, str) or not any(_matches(n, selector) for n in surface):
            raise ToolSelectionError(f'No {what} matches "{selector}"; {what}s are {", ".join(surface)}.')
    names = list(surface)
    if allow is not None:
        names = [n for n in names if any(_matches(n, s) for s in allow)]
    if deny:
        names = [n for n in names if not any(_matches(n, s) for s in deny)]
    return names


def tool_definitions(allow: list[str] | None = None, deny: list[str] | None = None) -> list[JsonObject]:
    """The JSON-schema definitions (Anthropic ``tools`` shape) of the selected tools, in surface order."""
    return [definition(_BY_NAME[n]) for n in select_tools(allow, deny)]


class _EverySubject:
    def __repr__(self) -> str:
        return "EVERY_SUBJECT"


EVERY_SUBJECT: Final = _EverySubject()
"""A tool scope that reaches every subject's instances: for a host's own tooling, never a person's chat."""

# Whose instances the tools may reach: a subject, None (the runner's subject), or EVERY_SUBJECT.
Scope = str | _EverySubject | None


class FormTools:
    """The selected tools bound to one runner: ``definitions`` to send, ``call`` to run one.

    ``call`` never raises: every outcome, including a malformed call or an unknown tool,
    is an envelope the model can read.

    ``scope`` is whose instances the tools may reach: a subject (``None``, the default, means
    the runner's subject, which in a chat is the conversation's), or :data:`EVERY_SUBJECT`.
    An ``instance_id`` of another subject is ``not_found``, exactly as an id that does not
    exist (an answer of "forbidden" would confirm it does), and ``form_history`` lists only
    the scope's instances. The runner's own Python API is not scoped: a host has full access.
    """

    def __init__(
        self,
        runner: FormRunner,
        *,
        allow: list[str] | None = None,
        deny: list[str] | None = None,
        scope: Scope = None,
        person: Person | None = None,
    ) -> None:
        if scope is not None and scope is not EVERY_SUBJECT and (not isinstance(scope, str) or not scope):
            raise InvalidArgumentError("scope must be a subject, or EVERY_SUBJECT.")
        self.runner = runner
        self.scope = scope
        self.person = person  # the person's own words, and formctl asking them (formctl.agent.person)
        self.names: list[str] = select_tools(allow, deny)
        self.definitions: list[JsonObject] = [definition(_BY_NAME[n]) for n in self.names]

    def _subject(self) -> str | None:
        """The one subject the tools may reach, or None for every subject."""
        if isinstance(self.scope, _EverySubject):
            return None
        return self.scope if self.scope is not None else self.runner.subject

    def _scoped(self, args: ToolArgs) -> ToolArgs | None:
        """``args`` confined to the scope: raises NotFoundError for another subject's instance,
        and points form_history's listing at the scope's subject."""
        subject = self._subject()
        if subject is None:
            return args
        instance_id = getattr(args, "instance_id", None)
        if instance_id is not None:
            instance = self.runner.open_instance(instance_id)
            if instance is None or instance.subject != subject:
                raise NotFoundError(f'No form instance "{instance_id}".')
        if isinstance(args, HistoryArgs) and args.instance_id is None:
            if args.subject is not None and args.subject != subject:
                return None  # another subject's list: there is nothing here for this conversation
            args = args.model_copy(update={"subject": subject})
        return args

    def call(self, name: str, arguments: JsonValue) -> JsonObject:
        found = judged(name, arguments, _BY_NAME, self.names, "Tools")
        return answered(found, lambda tool, parsed: self._run(name, tool, parsed))

    def _run(self, name: str, tool: Tool[FormRunner], parsed: ToolArgs) -> JsonObject:
        """A judged call run in the scope: its result, or the error the model is told."""
        try:
            args = self._scoped(parsed)
            if args is None:
                return success_envelope({"instances": []})
            return success_envelope(tool.run(self.runner, args, self.person))
        except FormError as exc:
            if exc.code == "form_definition_error":
                log_fault(_LOGGER, name, exc)
            if isinstance(exc, FormBlockedError) and "form_withdraw" in self.names:
                return error_envelope(_waiting_message(exc), exc.code)
            return error_envelope(exc.message, exc.code)
        except Exception as exc:  # a bug in a form's code: tell the model, keep the conversation
            return fault_envelope(_LOGGER, name, exc)


_LOGGER = "formctl.agent.tools"


def judged(
    name: str, arguments: JsonValue, table: Mapping[str, Tool[RunnerT]], names: list[str], listed: str
) -> tuple[Tool[RunnerT], ToolArgs] | JsonObject:
    """The tool a model's call names (among the selected ``names`` of ``table``) and its arguments
    judged, or the error envelope that says why not: nothing is applied. ``listed`` heads the list
    of tools an unknown name is answered with ("Tools", "Goal tools")."""
    tool = table.get(name) if name in names else None
    if tool is None:
        return error_envelope(f'No tool "{name}". {listed}: {", ".join(names)}.', UNKNOWN_TOOL)
    parsed = parse_arguments(name, arguments, tool.args)
    if isinstance(parsed, str):
        return error_envelope(parsed, INVALID_ARGUMENTS)
    return tool, parsed


def answered(
    found: tuple[Tool[RunnerT], ToolArgs] | JsonObject, run: Callable[[Tool[RunnerT], ToolArgs], JsonObject]
) -> JsonObject:
    """The envelope a model's tool call gets back: what :func:`judged` found, the tool and its
    arguments handed to ``run`` when they hold, every long string in it clipped (:func:`clipped`)."""
    envelope = found if isinstance(found, dict) else run(*found)
    result: JsonObject = clipped(envelope)
    return result


def log_fault(logger: str, tool: str, exc: BaseException) -> None:
    """A bug in a form's own code (or a host's hook), for the host: ``--debug`` prints it with its traceback."""
    import logging

    logging.getLogger(logger).info("%s failed: %s", tool, exc, exc_info=exc)


def fault_envelope(logger: str, tool: str, exc: Exception) -> JsonObject:
    """A handler's own error, not a :class:`FormError`: logged (:func:`log_fault`) and said to the
    model in one line, so the conversation goes on."""
    log_fault(logger, tool, exc)
    return error_envelope(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__, None)


def is_error(envelope: JsonObject) -> bool:
    return envelope.get("status") == "error"
