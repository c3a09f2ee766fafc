"""``formctl mcp``: :class:`~formctl.cli.mcp.state.FormService` served over stdio with the ``mcp`` SDK.

The SDK speaks two protocol eras and a client may use either; docs/mcp.md says what each
gets. What this module adds to the SDK:

- **Tool calls run in a thread of their own** (the engine and the stores are synchronous),
  so that a call can stop in the middle to ask the person (:class:`_Call`).
- **Asking the person** (elicitation, a form with one text answer): on a handshake-era
  connection the server asks at once over the back channel (``elicitation/create``) and the
  call goes on; on a 2026-07-28 connection, which has no back channel, the call answers
  ``InputRequiredResult`` carrying the question and a one-time token as ``request_state``,
  and the client's retry with the answer resumes the very call that asked (a retry with a
  token formctl did not issue changes nothing). Accept with text → that text ("yes", a
  value); decline → "no"; cancel, or no answer within :data:`ASK_TIMEOUT` → no answer. A
  client that declared no elicitation is never asked: nothing unconfirmed is stored.
- **Changes made elsewhere**: a watcher compares the subject's instances' versions every
  :data:`POLL_SECONDS` and tells the client which resources changed: ``ResourceUpdated``
  events on ``subscriptions/listen`` streams (2026-07-28), ``notifications/resources/updated``
  to a handshake-era client that subscribed to the URI, and list-changed when an instance
  appears.
"""

from __future__ import annotations

import json
import queue
import secrets
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, TypeAlias

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourcesListChanged, ResourceUpdated
from mcp.shared.exceptions import MCPError

from formctl.agent.tools import error_envelope
from formctl.cli.mcp.state import PROGRAM_URI, TIER0_URI, FormService, Outcome, form_uri, instance_uri
from formctl.errors import FormError
from formctl.json_types import JsonObject

Lifespan: TypeAlias = dict[str, object]  # what the server's lifespan yields to its handlers (nothing)

if TYPE_CHECKING:  # pragma: no cover
    from mcp.server.context import ServerRequestContext
    from mcp.server.session import ServerSession

    _Context: TypeAlias = ServerRequestContext[Lifespan, object]  # a request handler's context

__all__ = ["ASK_TIMEOUT", "POLL_SECONDS", "build_server", "serve_stdio"]

ASK_TIMEOUT = 600.0  # seconds a call waits for the person's answer before it goes on without one
POLL_SECONDS = 0.25  # how often the watcher reads the subject's instances' versions
RESOURCE_NOT_FOUND = -32002  # the MCP specification's code for a resource that does not exist
ANSWER_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {"answer": {"type": "string", "title": "Your answer", "description": "yes, no, or the right value"}},
    "required": ["answer"],
}


class _Call:
    """One tool call, run in its own thread; it may stop to ask the person a question.

    The thread reports a question (a ``str``) or its :class:`Outcome` on ``events`` and, after
    a question, waits for :meth:`answer`."""

    def __init__(self, service: FormService, name: str, arguments: JsonObject, *, can_ask: bool) -> None:
        self.events: queue.Queue[str | Outcome] = queue.Queue()
        self._answers: queue.Queue[str | None] = queue.Queue()
        self._service, self._name, self._arguments, self._can_ask = service, name, arguments, can_ask
        threading.Thread(target=self._run, name=f"formctl-mcp-{name[:20]}", daemon=True).start()

    def _run(self) -> None:
        try:
            outcome = self._service.call(self._name, self._arguments, ask=self._ask if self._can_ask else None)
        except BaseException as exc:  # FormTools.call never raises; this is the last line of defence
            outcome = Outcome(error_envelope(f"{type(exc).__name__}: {exc}", None), "")
        self.events.put(outcome)

    def _ask(self, question: str) -> str | None:
        self.events.put(question)
        try:
            return self._answers.get(timeout=ASK_TIMEOUT)
        except queue.Empty:
            return None

    def answer(self, text: str | None) -> None:
        self._answers.put(text)

    async def next(self) -> str | Outcome:
        return await anyio.to_thread.run_sync(self.events.get, abandon_on_cancel=True)


def _answer_text(result: object) -> str | None:
    """An elicitation's result as the answer line the chat would have read: accept → the text,
    decline → "no", cancel (or anything else) → None."""
    if isinstance(result, dict):
        action, content = result.get("action"), result.get("content")
    else:
        action, content = getattr(result, "action", None), getattr(result, "content", None)
    if action == "decline":
        return "no"
    if action != "accept" or not isinstance(content, dict):
        return None
    value = content.get("answer")
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value) if value is not None else None


def _tool_result(outcome: Outcome) -> types.CallToolResult:
    content: list[types.ContentBlock] = [types.TextContent(type="text", text=outcome.text)]
    for line in (outcome.tier0, outcome.goals):
        if line:
            content.append(types.TextContent(type="text", text=line))
    return types.CallToolResult(content=content, is_error=outcome.is_error)


def _can_elicit(ctx: _Context) -> bool:
    capabilities = ctx.session.client_capabilities
    return capabilities is not None and getattr(capabilities, "elicitation", None) is not None


class _Handlers:
    """The server's request handlers for one service, as methods over the state they share: the
    calls waiting for the person's answer, the listen bus and the handshake-era subscriptions."""

    def __init__(self, service: FormService, poll_seconds: float) -> None:
        self.service = service
        self.poll_seconds = poll_seconds
        self.pending: dict[str, _Call] = {}  # request_state token → the call waiting for the person's answer
        self.bus = InMemorySubscriptionBus()
        self.subscribed: dict[str, set[ServerSession]] = {}  # URI → handshake-era sessions that subscribed to it

    # ------------------------------------------------------------------ tools

    async def list_tools(self, ctx: _Context, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(name=d["name"], description=d["description"], input_schema=d["input_schema"])
                for d in self.service.definitions
            ]
        )

    async def call_tool(
        self, ctx: _Context, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        token = params.request_state
        if token is None:
            return await self._drive(
                ctx, _Call(self.service, params.name, params.arguments or {}, can_ask=_can_elicit(ctx))
            )
        call = self.pending.pop(token, None)  # a retry carrying the person's answer
        if call is None:
            message = "That answer is to a question formctl did not ask (or no longer waits on); nothing was stored."
            outcome = Outcome(error_envelope(message, "not_asked"), await anyio.to_thread.run_sync(self.service.tier0))
            return _tool_result(outcome)
        call.answer(_answer_text((params.input_responses or {}).get("answer")))
        return await self._drive(ctx, call)

    async def _drive(self, ctx: _Context, call: _Call) -> types.CallToolResult | types.InputRequiredResult:
        """Run ``call`` until it is done, asking the person over the back channel when there is one,
        else returning the question with a one-time token the client's retry resumes."""
        while True:
            question = await call.next()
            if isinstance(question, Outcome):
                return _tool_result(question)
            if ctx.session.can_send_request:  # a back channel: ask now, and go on
                result: types.ElicitResult | None
                try:
                    result = await ctx.session.elicit_form(question, ANSWER_SCHEMA, related_request_id=ctx.request_id)
                except Exception:
                    result = None
                call.answer(_answer_text(result))
                continue
            token = secrets.token_urlsafe(24)
            self.pending[token] = call
            return types.InputRequiredResult(
                input_requests={
                    "answer": types.ElicitRequest(
                        params=types.ElicitRequestFormParams(message=question, requested_schema=ANSWER_SCHEMA)
                    )
                },
                request_state=token,
            )

    # ------------------------------------------------------------------ resources

    async def list_resources(
        self, ctx: _Context, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        forms = await anyio.to_thread.run_sync(self.service.forms)
        instances = await anyio.to_thread.run_sync(self.service.instances)
        tier0 = types.Resource(
            uri=TIER0_URI,
            name="tier0",
            title="The open form's state",
            description="The one-line state of the subject's open form (the tier-0 line).",
            mime_type="text/plain",
        )
        outlines = [
            types.Resource(
                uri=form_uri(form["id"]),
                name=form["id"],
                title=form["name"],
                description=f"Outline: steps and fields. {form.get('description') or ''}".strip(),
                mime_type="application/json",
            )
            for form in forms
        ]
        records = [
            types.Resource(
                uri=instance_uri(row["instance_id"]),
                name=row["instance_id"],
                title=f"{row.get('form')} ({row.get('status')})",
                description="Status view and answers.",
                mime_type="application/json",
            )
            for row in instances
        ]
        program = []
        if self.service.goals is not None:
            program.append(
                types.Resource(
                    uri=PROGRAM_URI,
                    name="program",
                    title="The goal program",
                    description="The subject's goal program: goals, items, dispositions, follow-ups, version.",
                    mime_type="application/json",
                )
            )
        return types.ListResourcesResult(resources=[tier0, *program, *outlines, *records])

    async def read_resource(self, ctx: _Context, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            if uri == TIER0_URI:
                text, mime = await anyio.to_thread.run_sync(self.service.tier0), "text/plain"
            elif uri == PROGRAM_URI:
                data = await anyio.to_thread.run_sync(self.service.program)
                text, mime = json.dumps(data, ensure_ascii=False), "application/json"
            elif uri.startswith("formctl://forms/"):
                data = await anyio.to_thread.run_sync(self.service.outline, uri.removeprefix("formctl://forms/"))
                text, mime = json.dumps(data, ensure_ascii=False), "application/json"
            elif uri.startswith("formctl://instances/"):
                data = await anyio.to_thread.run_sync(self.service.instance, uri.removeprefix("formctl://instances/"))
                text, mime = json.dumps(data, ensure_ascii=False), "application/json"
            else:
                raise MCPError(RESOURCE_NOT_FOUND, f"No resource {uri}.")
        except FormError as exc:
            raise MCPError(RESOURCE_NOT_FOUND, exc.message) from None
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=text)])

    async def subscribe(self, ctx: _Context, params: types.SubscribeRequestParams) -> types.EmptyResult:
        self.subscribed.setdefault(str(params.uri), set()).add(ctx.session)
        return types.EmptyResult()

    async def unsubscribe(self, ctx: _Context, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        self.subscribed.get(str(params.uri), set()).discard(ctx.session)
        return types.EmptyResult()

    # ------------------------------------------------------------------ prompts

    async def list_prompts(self, ctx: _Context, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        forms = await anyio.to_thread.run_sync(self.service.forms)
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name=form["id"],
                    title=form["name"],
                    description=f"Fill in the {form['name']} with the person, using the form_* tools.",
                )
                for form in forms
            ]
        )

    async def get_prompt(self, ctx: _Context, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        try:
            text = await anyio.to_thread.run_sync(self.service.prompt, params.name)
        except FormError as exc:
            raise MCPError(types.INVALID_PARAMS, exc.message) from None
        return types.GetPromptResult(
            description=f"How to conduct the form {params.name}.",
            messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))],
        )

    # ------------------------------------------------------------------ changes made elsewhere

    async def changed(self, uris: list[str], listed: bool) -> None:
        if listed:
            await self.bus.publish(ResourcesListChanged())
        for uri in uris:
            await self.bus.publish(ResourceUpdated(uri=uri))
            for session in list(self.subscribed.get(uri, ())):
                try:
                    await session.send_resource_updated(uri)
                except Exception:  # a client gone: forget it
                    self.subscribed[uri].discard(session)

    async def watch(self) -> None:
        """Tell the client when the subject's instances change, whoever changed them."""
        before = await anyio.to_thread.run_sync(self.service.versions)
        program = await anyio.to_thread.run_sync(self.service.program_version)
        while True:
            await anyio.sleep(self.poll_seconds)
            try:
                now = await anyio.to_thread.run_sync(self.service.versions)
                program_now = await anyio.to_thread.run_sync(self.service.program_version)
            except Exception:  # a store that cannot be read this moment: try again next time
                continue
            moved = [instance_uri(i) for i, v in now.items() if before.get(i) != v]
            if moved:
                moved.append(TIER0_URI)
            if program_now != program:
                moved.append(PROGRAM_URI)
            if moved:
                await self.changed(moved, listed=bool(set(now) - set(before)))
            before, program = now, program_now

    @asynccontextmanager
    async def lifespan(self, _: Server[Lifespan]) -> AsyncIterator[Lifespan]:
        async with anyio.create_task_group() as group:
            group.start_soon(self.watch)
            try:
                yield {}
            finally:
                group.cancel_scope.cancel()


def build_server(service: FormService, *, poll_seconds: float = POLL_SECONDS) -> Server[Lifespan]:
    """The MCP server for ``service``: its handlers, the listen bus and the change watcher."""
    handlers = _Handlers(service, poll_seconds)
    return Server(
        "formctl",
        version=_version(),
        instructions=(
            f"formctl forms for {service.subject}: start and fill them with the form_* tools. Each tool result "
            "ends with the form's state (the tier-0 line); trust it over memory. Send the person's exact words "
            "as quotes; a value without them is confirmed with the person or not stored."
            + (
                " A goal program is served too: goal_status and goal_update settle its items, and each result "
                "ends with the goals line."
                if service.goals is not None
                else ""
            )
        ),
        lifespan=handlers.lifespan,
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
        on_list_resources=handlers.list_resources,
        on_read_resource=handlers.read_resource,
        on_subscribe_resource=handlers.subscribe,
        on_unsubscribe_resource=handlers.unsubscribe,
        on_subscriptions_listen=ListenHandler(handlers.bus),
        on_list_prompts=handlers.list_prompts,
        on_get_prompt=handlers.get_prompt,
    )


def _version() -> str:
    from formctl import __version__  # the one source (pyproject.toml reads it too)

    return __version__


async def _serve(server: Server[Lifespan]) -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def serve_stdio(service: FormService) -> None:
    """Serve until the client closes stdin. stdout carries the protocol: nothing else is printed there."""
    server = build_server(service)
    try:
        anyio.run(_serve, server)
    except KeyboardInterrupt:
        pass
    finally:
        sys.stdout.flush()
