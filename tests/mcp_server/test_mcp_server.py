"""``formctl mcp`` driven by the ``mcp`` SDK's own client, as any agent would drive it.

Both protocol eras the SDK speaks are exercised where they differ: a 2026-07-28 client
("auto" negotiates it) asks the person through ``InputRequiredResult`` and hears of changes on
a ``subscriptions/listen`` stream; a handshake-era client ("legacy") is asked over the back
channel and subscribes to a resource.

Over stdio, with ``formctl mcp`` a child process as an agent starts it (``stdio``): a whole
claim whose checkpoint another process resolves, a handshake-era client hearing of a change
another process made, a person asked over the wire, the README's session, and the lazy
imports. The rest (what the tools store, refuse and ask; roles; prompts; a PostgreSQL store)
talk to the same server, :func:`formctl.cli.mcp.server.build_server` over the service
``formctl mcp`` opens, in this process (``local``): the SDK's client connects to a server
object directly, the handshake era through its in-memory JSON-RPC streams.
"""

from __future__ import annotations

import json
import os
import re
import runpy
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from clitools import Cli
from fixture_project import FORMS
from formctl import FormRegistry, FormRunner, JsonFileAdapter
from formctl.agent.tools import tool_definitions
from formctl.cli.mcp import open_service
from formctl.cli.mcp.server import build_server

CLAIMANT = {"full_name": "Dana Reeve", "staff_id": "AB1234", "email": "dana@example.com"}
TRIP = {"destination": "Leeds", "departure_date": "2026-03-02", "return_date": "2026-03-04", "purpose": "Workshop"}
OVER_THE_CAP = {"accommodation": 600, "meals": 212.5, "total": 812.5}


def quoted(values: dict[str, Any]) -> dict[str, Any]:
    """The arguments of a fill whose every value comes with the person's words holding it."""
    return {"values": values, "quotes": {k: str(v) for k, v in values.items()}}


def stdio(store: str) -> Any:
    """``formctl mcp`` for dana as a subprocess, as the SDK's stdio transport starts it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORMCTL_", "ANTHROPIC_", "OPENAI_"))}
    env.update(FORMCTL_STORE=store, FORMCTL_FORMS=str(FORMS))
    args = ["-m", "formctl.cli.app", "mcp", "--subject", "dana"]
    return stdio_client(StdioServerParameters(command=sys.executable, args=args, env=env))


@pytest.fixture
def local() -> Any:
    """``local(store, as_host=False)``: the server ``formctl mcp --subject dana [--as-host]`` serves,
    built in this process for a client to connect to directly; its store is closed after the test."""
    services: list[Any] = []

    def build(store: str, *, as_host: bool = False) -> Any:
        service = open_service("dana", store=store, forms=FORMS, as_host=as_host)
        services.append(service)
        return build_server(service)

    yield build
    for service in services:
        service.runner.adapter.close()


def envelope(result: types.CallToolResult) -> dict[str, Any]:
    return json.loads(result.content[0].text)


class Person:
    """The person behind the client: answers formctl's questions from a list, and keeps them."""

    def __init__(self, *answers: str | None) -> None:
        self.answers = list(answers)
        self.asked: list[str] = []

    async def __call__(self, ctx: Any, params: Any) -> types.ElicitResult:
        self.asked.append(params.message)
        answer = self.answers.pop(0) if self.answers else None
        if answer is None:
            return types.ElicitResult(action="cancel")
        if answer == "no":
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"answer": answer})


def run(coro: Any, *args: Any) -> Any:
    return anyio.run(coro, *args)


# --------------------------------------------------------------------------- a whole claim


@pytest.mark.e2e
def test_a_claim_waits_for_approval_a_host_in_another_process_resolves_it_and_the_client_hears(store):
    theirs = FormRunner(JsonFileAdapter(store), registry=FormRegistry.from_toml(FORMS / "registry.toml"), subject="sam")
    other = theirs.start("client-intake", seed={"full_name": "Sam Jones"}).view.instance_id

    async def session() -> None:
        async with Client(stdio(store), elicitation_callback=Person()) as client:
            assert client.protocol_version == "2026-07-28"
            tools = (await client.list_tools()).tools
            same = {t["name"]: (t["description"], t["input_schema"]) for t in tool_definitions()}
            assert {t.name: (t.description, t.input_schema) for t in tools} == same  # one source: no drift
            uris = [str(r.uri) for r in (await client.list_resources()).resources]
            assert uris == ["formctl://tier0", "formctl://forms/travel-claim", "formctl://forms/client-intake"]
            outline = json.loads((await client.read_resource("formctl://forms/travel-claim")).contents[0].text)
            assert [s["id"] for s in outline["steps"]] == ["claimant", "trip", "travel", "costs"]

            started = await client.call_tool("form_start", {"form": "travel-claim", **quoted(CLAIMANT)})
            instance_id = envelope(started)["data"]["instance_id"]
            assert started.content[1].text.startswith('[form: travel-claim] step 2/4 "Trip"')  # tier 0, each result
            for values in (TRIP, {"mode": "rail", "ticket_reference": "TR-99812"}, OVER_THE_CAP):
                result = await client.call_tool("form_fill", quoted(values))
                assert not result.is_error, result.content[0].text
            uri = f"formctl://instances/{instance_id}"
            view = json.loads((await client.read_resource(uri)).contents[0].text)
            assert view["status"]["status"] == "awaiting"
            assert "waiting for Finance" in (await client.read_resource("formctl://tier0")).contents[0].text

            # another subject's instance: refused as if it did not exist, by tool and by resource
            refused = await client.call_tool("form_status", {"instance_id": other})
            assert refused.is_error and envelope(refused)["data"] == {"code": "not_found"}
            assert "Sam" not in refused.content[0].text
            with pytest.raises(MCPError):
                await client.read_resource(f"formctl://instances/{other}")
            history = envelope(await client.call_tool("form_history", {"subject": "sam"}))
            assert history["data"] == {"instances": []}

            async with client.listen(resource_subscriptions=[uri]) as events:
                # the host: `formctl resolve` in this process, another process than the server's
                host = Cli(store)("resolve", instance_id, "--as", "finance")
                assert host.exit_code == 0, host.stderr
                with anyio.fail_after(20):
                    async for event in events:
                        if getattr(event, "uri", None) == uri:
                            break
            view = json.loads((await client.read_resource(uri)).contents[0].text)
            assert view["status"]["status"] == "ready"
            sent = await client.call_tool("form_submit", {})
            assert envelope(sent)["data"]["status"] == "complete"

    run(session)
    adapter = JsonFileAdapter(store)
    (row,) = adapter.find_instances(subject="dana")
    instance = adapter.get_instance(row.id)
    assert instance.status == "complete"
    assert instance.in_force_values()["total"] == 812.5


@pytest.mark.e2e
@pytest.mark.filterwarnings("ignore:resources/subscribe is removed")  # the handshake era's way, on purpose
def test_a_handshake_era_client_subscribes_and_hears_of_a_change_made_elsewhere(store):
    async def session() -> None:
        heard = anyio.Event()
        uris: list[str] = []

        async def on_message(message: Any) -> None:
            root = getattr(message, "root", message)
            if isinstance(root, types.ResourceUpdatedNotification):
                uris.append(str(root.params.uri))
                heard.set()

        async with Client(stdio(store), mode="legacy", message_handler=on_message) as client:
            started = await client.call_tool("form_start", {"form": "travel-claim", **quoted(CLAIMANT)})
            instance_id = envelope(started)["data"]["instance_id"]
            uri = f"formctl://instances/{instance_id}"
            await client.session.subscribe_resource(uri)
            # `formctl abandon` in this process: another process than the server's
            done = Cli(store)("abandon", instance_id, "--reason", "duplicate")
            assert done.exit_code == 0, done.stderr
            with anyio.fail_after(20):
                await heard.wait()
            assert uri in uris

    run(session)


# --------------------------------------------------------------------------- provenance by elicitation


def _log(store: str, field: str) -> list[Any]:
    adapter = JsonFileAdapter(store)
    (row,) = adapter.find_instances(subject="dana")
    return adapter.get_instance(row.id).entries[field].revisions


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize(
    ("answer", "expect"),
    [
        ("yes", ("AB1234", "confirmed")),
        ("AB9876", ("AB9876", "said")),
        ("no", None),
        # a confirmation is a clear yes or it is not one (issue 37): a correction gives its value
        ("The correct one is CD5678", ("CD5678", "said")),
        ("yes, but it is actually AB9999", ("AB9999", "said")),
        ("no, it's CD5678", ("CD5678", "said")),
    ],
)
def test_a_value_without_the_persons_words_is_asked_through_the_client(store, local, mode, answer, expect):
    asked_without_quotes(local(store), store, mode, answer, expect)


@pytest.mark.e2e
def test_over_stdio_a_value_without_the_persons_words_is_asked_through_the_client(store):
    """The same, with the question and the answer's retry (its request_state token) on the wire."""
    asked_without_quotes(stdio(store), store, "auto", "AB9876", ("AB9876", "said"))


def asked_without_quotes(server: Any, store: str, mode: str, answer: str, expect: tuple[str, str] | None) -> None:
    person = Person(answer)

    async def session() -> dict:
        async with Client(server, elicitation_callback=person, mode=mode) as client:
            await client.call_tool("form_start", {"form": "travel-claim", **quoted({"full_name": "Dana Reeve"})})
            result = await client.call_tool("form_fill", {"values": {"staff_id": "AB1234"}})  # no quote
            return envelope(result)

    result = run(session)
    assert person.asked == ["Staff ID: AB1234. Is that right? (yes, or type it)"]
    (asked,) = result["data"]["asked_person"]
    revisions = _log(store, "staff_id") if expect else []
    if expect is None:
        assert asked["outcome"] == "declined" and "staff_id" not in result["data"].get("captured", [])
        adapter = JsonFileAdapter(store)
        (row,) = adapter.find_instances(subject="dana")
        assert "staff_id" not in adapter.get_instance(row.id).in_force_values()
    else:
        value, kind = expect
        assert revisions[-1].value == value and revisions[-1].provenance.kind == kind
        assert revisions[-1].provenance.source == "mcp"


def test_a_client_without_elicitation_gets_told_what_is_needed_and_nothing_is_stored(store, local):
    async def session() -> dict:
        async with Client(local(store)) as client:
            await client.call_tool("form_start", {"form": "travel-claim", **quoted({"full_name": "Dana Reeve"})})
            return envelope(await client.call_tool("form_fill", {"values": {"staff_id": "AB1234"}}))

    result = run(session)
    assert [u["field"] for u in result["data"]["not_stored"]] == ["staff_id"]
    assert result["data"]["not_stored_note"]
    adapter = JsonFileAdapter(store)
    (row,) = adapter.find_instances(subject="dana")
    assert "staff_id" not in adapter.get_instance(row.id).in_force_values()


def test_a_quote_that_does_not_hold_the_value_is_not_taken(store, local):
    person = Person("no")

    async def session() -> dict:
        async with Client(local(store), elicitation_callback=person) as client:
            values = {"values": {"full_name": "Dana Reeve"}, "quotes": {"full_name": "my name is on the badge"}}
            return envelope(await client.call_tool("form_start", {"form": "travel-claim", **values}))

    result = run(session)
    assert person.asked and result["data"]["asked_person"][0]["outcome"] == "declined"


# --------------------------------------------------------------------------- roles and prompts


def test_resolving_a_checkpoint_is_a_tool_only_with_as_host(store, local):
    async def session(as_host: bool) -> tuple[list[str], dict]:
        async with Client(local(store, as_host=as_host)) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            return names, envelope(await client.call_tool("form_resolve", {}))

    names, result = run(session, False)
    assert "form_resolve" not in names and result["data"] == {"code": "unknown_tool"}
    names, result = run(session, True)
    assert names[-1] == "form_resolve" and result["status"] == "error"  # nothing open, so nothing waits


def test_each_form_has_a_prompt_with_its_conduct(store, local):
    async def session() -> tuple[list[str], str]:
        async with Client(local(store)) as client:
            names = [p.name for p in (await client.list_prompts()).prompts]
            prompt = await client.get_prompt("travel-claim")
            return names, prompt.messages[0].content.text

    names, text = run(session)
    assert names == ["travel-claim", "client-intake"]
    assert "Conduct:" in text and "Travel reimbursement claim" in text


def test_without_a_subject_the_server_does_not_start(cli):
    done = cli("mcp")
    assert done.exit_code == 2 and "needs --subject" in done.stderr and done.stdout == ""


@pytest.mark.e2e
def test_importing_formctl_and_listing_forms_does_not_import_mcp():
    code = (
        "import sys, formctl, formctl.cli.app;"
        "bad = [m for m in ('mcp', 'mcp_types', 'openai', 'anthropic') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


# --------------------------------------------------------------------------- the README's session


@pytest.mark.e2e
def test_the_readme_session_prints_what_its_comments_say(tmp_path, monkeypatch, capfd):
    """The README's client script, run in this process (a client program; the server it starts
    is the process boundary, as an agent starts it)."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    start = readme.index("\n## Any agent: `formctl mcp`")
    section = readme[start : readme.index("\n## ", start + 1)]
    (script,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    config = json.loads(re.findall(r"```json\n(.*?)```", section, flags=re.S)[0])
    assert config["mcpServers"]["formctl"]["args"][:3] == ["mcp", "--subject", "dana"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORMCTL_", "ANTHROPIC_", "OPENAI_"))}
    env["FORMCTL_STORE"] = str(tmp_path / "store")
    runnable = script.replace(
        'StdioServerParameters(command="formctl", args=["mcp", ',
        f"StdioServerParameters(command={sys.executable!r}, env={env!r}, args=['-m', 'formctl.cli.app', 'mcp', ",
    )
    assert runnable != script
    (tmp_path / "mcp_session.py").write_text(runnable)
    monkeypatch.chdir(FORMS.parent)
    capfd.readouterr()
    runpy.run_path(str(tmp_path / "mcp_session.py"), run_name="__main__")  # an error fails the test
    expected = [line.split("# ", 1)[1] for line in script.splitlines() if "print(" in line]
    assert capfd.readouterr().out.splitlines() == expected


def test_a_postgresql_store_is_served_the_same_way(pg_dsn, local):
    async def session() -> None:
        async with Client(local(pg_dsn)) as client:
            started = await client.call_tool("form_start", {"form": "travel-claim", **quoted(CLAIMANT)})
            instance_id = envelope(started)["data"]["instance_id"]
            uris = [str(r.uri) for r in (await client.list_resources()).resources]
            assert f"formctl://instances/{instance_id}" in uris
            view = json.loads((await client.read_resource(f"formctl://instances/{instance_id}")).contents[0].text)
            assert view["status"]["status"] == "active"
            assert view["history"]["values"]["staff_id"] == "AB1234"

    run(session)


def test_as_host_the_client_resolves_the_subjects_checkpoint_and_no_one_elses(store, local):
    theirs = FormRunner(JsonFileAdapter(store), registry=FormRegistry.from_toml(FORMS / "registry.toml"), subject="sam")
    other = theirs.start("travel-claim", seed={"full_name": "Sam Jones"}).view.instance_id

    async def session() -> tuple[dict, dict]:
        async with Client(local(store, as_host=True)) as client:
            await client.call_tool("form_start", {"form": "travel-claim", **quoted(CLAIMANT)})
            for values in (TRIP, {"mode": "rail", "ticket_reference": "TR-99812"}, OVER_THE_CAP):
                await client.call_tool("form_fill", quoted(values))
            refused = envelope(await client.call_tool("form_resolve", {"instance_id": other}))
            approved = await client.call_tool("form_resolve", {"reason": "conference rates"})
            return refused, envelope(approved)

    refused, approved = run(session)
    assert refused["data"] == {"code": "not_found"}
    assert approved["status"] == "success" and approved["data"]["status"] == "ready"
    adapter = JsonFileAdapter(store)
    (row,) = adapter.find_instances(subject="dana")
    assert adapter.get_instance(row.id).status == "ready"
