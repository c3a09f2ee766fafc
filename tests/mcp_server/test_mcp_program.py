"""``formctl mcp --subject S --program KEY``: the client gets the goal tools, the program as a
resource and the goals line after every tool result, on the folder store and PostgreSQL. The
program is found by the rule every command uses: one started ``--key intake`` is the one
``--program client-intake`` serves (no second one is started)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from mcp import Client

from clitools import Cli
from fixture_project import CLAIMS_PROGRAM, FORMS, forms_with_program
from formctl.cli.mcp import open_service
from formctl.cli.mcp.server import build_server

SUBJECT = "firm:1/matter:2"


@pytest.fixture(params=["folder", "postgres"])
def served(request, tmp_path) -> Any:
    """The store (a folder, or a PostgreSQL DSN), and ``serve(program)``: the server ``formctl mcp
    --subject firm:1/matter:2 --program KEY`` serves over it, built in this process."""
    store = str(tmp_path / "store") if request.param == "folder" else str(request.getfixturevalue("pg_dsn"))
    services: list[Any] = []

    def serve(program: str | None) -> Any:
        service = open_service(SUBJECT, store=store, forms=FORMS, program=program)
        services.append(service)
        return build_server(service)

    yield store, serve
    for service in services:
        service.runner.adapter.close()


def envelope(result: Any) -> dict[str, Any]:
    return json.loads(result.content[0].text)


def test_the_client_settles_the_program_started_with_a_key_through_the_goal_tools(served):
    store, serve = served
    cli = Cli(store)
    cli.ok("program", "start", "client-intake", "--subject", SUBJECT, "--key", "intake")

    async def session() -> dict[str, Any]:
        async with Client(serve("client-intake")) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            assert names[-2:] == ["goal_status", "goal_update"]
            uris = [str(r.uri) for r in (await client.list_resources()).resources]
            assert "formctl://program" in uris
            status = await client.call_tool("goal_status", {})
            assert (
                status.content[-1].text
                == '[goals: client-intake] goal 1/3 "Confirm identity" · pending: Verify the client'
            )
            version = envelope(status)["data"]["version"]
            update = {"goal": "identity", "completed": ["client"], "reason": "ID seen", "version": version}
            done = await client.call_tool("goal_update", update)
            assert not done.is_error, done.content[0].text
            assert done.content[-1].text.startswith('[goals: client-intake] goal 2/3 "Intake"')
            stale = envelope(await client.call_tool("goal_update", update))
            assert stale["status"] == "error" and stale["data"]["code"] == "goal_conflict"
            # A form tool's result ends with the goals line too.
            listed = await client.call_tool("form_list", {})
            assert listed.content[-1].text.startswith("[goals: client-intake]")
            return json.loads((await client.read_resource("formctl://program")).contents[0].text)

    program = anyio.run(session)
    assert program["scope"]["key"] == "intake" and program["version"] == 2
    shown = cli.json("program", "show", "--subject", SUBJECT)  # still the one program
    item = shown["goals"][0]["items"][0]
    assert item["disposition"] == "completed" and item["reason"] == "ID seen"
    last = cli.json("program", "history", "--subject", SUBJECT)["history"][-1]
    assert (last["actor"], last["source"]) == ("agent", "mcp")
    assert [r["scope"]["key"] for r in cli.json("program", "list")["running"]] == ["intake"]


def test_without_program_there_are_no_goal_tools_nor_resource(served):
    _, serve = served

    async def session() -> tuple[list[str], list[str], dict[str, Any]]:
        async with Client(serve(None)) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            uris = [str(r.uri) for r in (await client.list_resources()).resources]
            return names, uris, envelope(await client.call_tool("goal_status", {}))

    names, uris, result = anyio.run(session)
    assert "goal_status" not in names and "formctl://program" not in uris
    assert result["status"] == "error"


def test_a_program_not_registered_is_one_line_and_serves_nothing(cli):
    done = cli("mcp", "--subject", SUBJECT, "--program", "client-intaek")
    assert done.exit_code != 0 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and 'No program "client-intaek"' in done.stderr


def test_a_claim_the_client_completes_settles_its_bound_item_with_no_sync(served, tmp_path):
    """The write that completes a form settles the items bound to it, when the writer is an MCP client."""

    store, _ = served
    forms = forms_with_program(tmp_path / "forms", CLAIMS_PROGRAM, "claims", "claims_program:claims")
    service = open_service("dana", store=store, forms=forms, program="claims")
    claimant = {"full_name": "Dana Reeve", "staff_id": "AB1234", "email": "dana@example.com"}
    trip = {"destination": "Leeds", "departure_date": "2026-03-02", "return_date": "2026-03-04", "purpose": "Workshop"}
    costs = {"accommodation": 100, "meals": 20, "total": 120}

    def quoted(values: dict[str, Any]) -> dict[str, Any]:
        return {"values": values, "quotes": {k: str(v) for k, v in values.items()}}

    async def session() -> str:
        async with Client(build_server(service)) as client:
            await client.call_tool("form_start", {"form": "travel-claim", **quoted(claimant)})
            for values in (trip, {"mode": "rail", "ticket_reference": "TR-99812"}, costs):
                result = await client.call_tool("form_fill", quoted(values))
                assert not result.is_error, result.content[0].text
            sent = await client.call_tool("form_submit", {})
            assert envelope(sent)["data"]["status"] == "complete", sent.content[0].text
            return sent.content[-1].text

    try:
        goals_line = anyio.run(session)
    finally:
        service.runner.adapter.close()
    assert goals_line == "[goals: claims] complete"  # settled by the submit itself
    status = Cli(store, forms).json("program", "show", "--subject", "dana")
    (item,) = status["goals"][0]["items"]
    assert item["disposition"] == "completed" and item["instance"]
    last = Cli(store, forms).json("program", "history", "--subject", "dana")["history"][-1]
    assert (last["change"], last["source"]) == ("form", "mcp")
