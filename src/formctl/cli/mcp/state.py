"""What ``formctl mcp`` serves, without the MCP SDK: the tools, resources and prompts of one subject.

:class:`FormService` is the synchronous core the server (``server.py``) wraps. It holds one
store, one registry and one subject, fixed when the server starts (docs/mcp.md, "Scope and
roles"):

- **Tools** are :class:`~formctl.agent.tools.FormTools`, the very object the chat's model
  calls, scoped to the subject: the same names, schemas, descriptions and refusals. Each
  result is the same JSON envelope, with the tier-0 line beside it (MCP has no prompt tail to
  put it on). With ``as_host`` one more tool, ``form_resolve``, answers the checkpoint an
  instance of the subject waits on; without it the tool does not exist.
- **Provenance.** The client's model sends ``quotes`` as the chat's model does. formctl cannot
  see the person's messages here, so a quote is taken as their words, and the usual check
  applies: the value must be in the quote. A value for a ``source="person"`` field with no
  quote that holds it is not stored as said; formctl asks the person through ``ask`` (MCP
  elicitation, see ``server.py``): "yes" stores it as ``confirmed``, a typed value as said,
  "no" nothing. Without ``ask`` (a client without elicitation) nothing is stored and the result
  says what is needed (``not_stored``).
- **Resources**: each registered form's outline, each of the subject's instances (its status
  view and its answers), and the tier-0 line of the subject's open form.
- **Prompts**: one per form, its conduct text as the chat's system prompt gives it.
- **A goal program** (``formctl mcp --program KEY``): the chat's goal tools
  (:class:`~formctl.agent.goal_tools.GoalTools`, ``goal_status`` and ``goal_update``, bound to
  the one scope), the program's status as the resource ``formctl://program``, and the goals
  line after the tier-0 line in every tool result, as the chat's model reads it at its tail.

Where each role check lives: the subject's scope in ``FormTools._scoped`` (agent/tools.py) for
every model tool, and in :meth:`FormService._resolve` for the host's one; the host's tool in
:meth:`FormService.__init__` (listed only with a host runner) and ``open_service`` in
``__init__.py`` (a host runner only with ``--as-host``).

Every call runs under one lock (the store adapter is used from worker threads); a call that
waits for the person's answer releases it while it waits.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from formctl.agent.person import Person
from formctl.agent.prompt import system_prompt
from formctl.agent.tools import FormTools, clipped, error_envelope, is_error, success_envelope
from formctl.errors import FormError, NotFoundError
from formctl.json_types import JsonObject, JsonValue

if TYPE_CHECKING:
    from formctl.agent.goal_tools import GoalTools
    from formctl.forms.runner import FormRunner

__all__ = [
    "MCP_SOURCE",
    "FormService",
    "Outcome",
    "PROGRAM_URI",
    "RESOLVE_TOOL",
    "TIER0_URI",
    "form_uri",
    "instance_uri",
]

MCP_SOURCE = "mcp"  # the provenance source of every write through the server
TIER0_URI = "formctl://tier0"
PROGRAM_URI = "formctl://program"
RESOLVE_TOOL = "form_resolve"


def form_uri(form_id: str) -> str:
    return f"formctl://forms/{form_id}"


def instance_uri(instance_id: str) -> str:
    return f"formctl://instances/{instance_id}"


# form_resolve's arguments, checked as FormTools checks its own (strict, nothing extra).
class _ResolveArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    instance_id: str | None = Field(None, description="Omit for the open form.")
    fail: str | None = Field(None, description="Reject, with the reason the person is told.")
    reason: str | None = Field(None, description="Why it is approved (kept with the decision).")


_RESOLVE_DEFINITION: JsonObject = {
    "name": RESOLVE_TOOL,
    "description": "Host only: answer the checkpoint the form waits on (approve, or reject with fail).",
    "input_schema": _ResolveArgs.model_json_schema(),
}


@dataclass(frozen=True, slots=True)
class Outcome:
    """One tool call's result: the envelope (the chat's JSON), the tier-0 line after it, and the
    goals line when a program is served."""

    envelope: JsonObject
    tier0: str
    goals: str = ""

    @property
    def is_error(self) -> bool:
        return is_error(self.envelope)

    @property
    def text(self) -> str:
        """The envelope as the chat's model reads it (compact JSON)."""
        return json.dumps(self.envelope, ensure_ascii=False, separators=(",", ":"))


class FormService:
    """One subject's forms over one store, as MCP tools, resources and prompts (see the module)."""

    def __init__(
        self,
        runner: FormRunner,
        *,
        host_runner: FormRunner | None = None,
        host_name: str = "host",
        goals: GoalTools | None = None,
    ) -> None:
        self.runner = runner  # the agent's: actor "agent", source "mcp", subject fixed
        self.goals = goals  # the goal tools of --program's one scope, or None
        self.subject: str = runner.subject
        self.host_runner = host_runner  # None unless --as-host
        self.host_name = host_name
        self.lock = threading.Lock()
        base = FormTools(runner)  # the chat model's tools; the scope is the runner's subject
        self.definitions: list[JsonObject] = list(base.definitions)
        if goals is not None:
            self.definitions += goals.definitions
        if host_runner is not None:
            self.definitions.append(_RESOLVE_DEFINITION)
        self.tool_names = [d["name"] for d in self.definitions]

    # ------------------------------------------------------------------ tools

    def call(self, name: str, arguments: JsonValue, ask: Callable[[str], str | None] | None = None) -> Outcome:
        """Run one tool as the chat's model would (never raises). ``ask`` puts a question to the
        person and returns their answer, or None; it is called without the lock held."""
        with self.lock:
            if name == RESOLVE_TOOL and self.host_runner is not None:
                envelope = clipped(self._resolve(self.host_runner, arguments))  # as FormTools bounds every result
            elif self.goals is not None and self.goals.handles(name):
                envelope = self.goals.call(name, arguments)
            else:
                person = Person(ask=self._unlocked(ask) if ask is not None else None)
                for quote in _quotes(arguments):
                    # The client's quotes stand for the person's words, said now (a relative date
                    # in one, "next Tuesday", is read from today, as in a chat).
                    person.said(quote)
                envelope = FormTools(self.runner, person=person).call(name, arguments)
            return Outcome(envelope, self._tier0(), self.goals.line() if self.goals is not None else "")

    def _unlocked(self, ask: Callable[[str], str | None]) -> Callable[[str], str | None]:
        """``ask``, run with the lock released: the person may take their time, and other calls go on."""

        def asking(question: str) -> str | None:
            self.lock.release()
            try:
                return ask(question)
            finally:
                self.lock.acquire()

        return asking

    def _resolve(self, host: FormRunner, arguments: JsonValue) -> JsonObject:
        """The host's answer to a checkpoint of one of the subject's instances (only with --as-host)."""
        if not isinstance(arguments, dict):
            return error_envelope(f"Bad arguments for {RESOLVE_TOOL}: expected a JSON object.", "invalid_arguments")
        try:
            args = _ResolveArgs.model_validate(arguments).model_dump()
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(p) for p in first["loc"]) or "arguments"
            return error_envelope(f"Bad arguments for {RESOLVE_TOOL} ({where}: {first['msg']}).", "invalid_arguments")
        try:
            instance_id: str | None = args["instance_id"]
            instance = self.runner.open_instance(instance_id)
            if instance is None or instance.subject != self.subject:  # the scope, as FormTools keeps it
                raise NotFoundError(f'No form instance "{instance_id}".' if instance_id else "No open form.")
            from formctl.cli.host import Decision, resolve_as  # the role checks of formctl resolve (cli/host.py)

            # Started --as-host: the server's operator said so explicitly, as a chat opened
            # --as-host does; deciding their own subject's request is then recorded as such.
            decision = Decision(self.host_name, fail=args["fail"], reason=args["reason"], playing_host=True)
            result = resolve_as(host, instance.id, decision)
        except FormError as exc:
            return error_envelope(exc.message, exc.code)
        return success_envelope(result.to_dict())

    # ------------------------------------------------------------------ reads

    def _tier0(self) -> str:
        try:
            return str(self.runner.tier0() or "")
        except Exception:
            return ""

    def tier0(self) -> str:
        with self.lock:
            return self._tier0()

    def program(self) -> JsonObject:
        """The served program as program show --json prints it; NotFoundError without --program."""
        with self.lock:
            status = self.goals.runner.inspect() if self.goals is not None else None
            if status is None:
                raise NotFoundError("No goal program is served (formctl mcp --program KEY).")
            return dict(status.to_dict(full=True))  # as program show --json prints it

    def program_version(self) -> int | None:
        """The served program's version (the change watcher compares it), or None."""
        with self.lock:
            status = self.goals.runner.inspect() if self.goals is not None else None
            return status.version if status is not None else None

    def forms(self) -> list[dict[str, str]]:
        with self.lock:
            return list(self.runner.list())

    def instances(self) -> list[JsonObject]:
        """The subject's instances, most recently updated first (summaries)."""
        with self.lock:
            return [row.to_dict(subject=False) for row in self.runner.instances(subject=self.subject)]

    def versions(self) -> dict[str, int]:
        """Each of the subject's instances and its version: what the change watcher compares."""
        with self.lock:
            stamps = (self.runner.stamp(row.instance_id) for row in self.runner.instances(subject=self.subject))
            return {stamp[0]: stamp[1] for stamp in stamps if stamp is not None}

    def outline(self, form_id: str) -> JsonObject:
        """A registered form's outline: its steps and fields, as ``form_inspect`` shows an empty instance."""
        with self.lock:
            view = self.runner.outline(form_id).to_dict()
        for key in ("instance_id", "status", "complete"):
            view.pop(key, None)
        return dict(view)

    def instance(self, instance_id: str) -> JsonObject:
        """One of the subject's instances: its status view and its answers (``form_history``).
        Raises NotFoundError for an id that is not the subject's, exactly as for one that does not exist."""
        with self.lock:
            tools = FormTools(self.runner)
            status = tools.call("form_status", {"instance_id": instance_id})
            if is_error(status):
                raise NotFoundError(str(status.get("message") or f'No form instance "{instance_id}".'))
            history = tools.call("form_history", {"instance_id": instance_id})
            return {"status": status["data"], "history": history.get("data")}

    def prompt(self, form_id: str) -> str:
        """The form's conduct, as the chat's system prompt gives it to its model."""
        with self.lock:
            return system_prompt(self.runner.compiled(form_id))


def _quotes(arguments: JsonValue) -> list[str]:
    quotes = arguments.get("quotes") if isinstance(arguments, dict) else None
    if not isinstance(quotes, dict):
        return []
    return [q for q in quotes.values() if isinstance(q, str) and q.strip()]
