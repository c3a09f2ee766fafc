"""A chat that settles goal items through the real ``anthropic`` SDK (against the loopback server
in ``fake_anthropic.py``): the model reads ``goal_status`` and settles items with ``goal_update``;
the goals line is at the tail of every request, re-rendered from stored state, never saved;
the system prompt and tools are byte-identical on every request."""

from __future__ import annotations

import json

import pytest

import goal_programs as gp
from fake_anthropic import FakeAnthropic, text, tool_use
from fixture_project import REGISTRY as FORMS
from formctl import FormRegistry, FormRunner, GoalRunner, GoalScope, JsonFileAdapter, define_program
from formctl.agent.goal_tools import GoalTools
from formctl.agent.loop import ChatLoop
from formctl.agent.models.anthropic import AnthropicModel

KEY = "sk-ant-test-0123456789abcdef"
SCOPE = GoalScope(subject="dana", key="intake")


@pytest.fixture
def api():
    with FakeAnthropic() as server:
        yield server


def story_program():
    return define_program("client-intake", goals=[gp.IDENTITY, gp.UPDATES])


def make_loop(api, store, **tool_selection):
    adapter = JsonFileAdapter(store)
    goals = GoalRunner(adapter, scope=SCOPE, actor="model", source="conversation:test")
    forms = FormRunner(adapter, registry=FormRegistry.from_toml(FORMS), subject="dana")
    model = AnthropicModel("claude-test", api_key=KEY, base_url=api.url, max_retries=1, timeout=5)
    return ChatLoop(forms, model, goals=GoalTools(goals, **tool_selection)), goals


def tail(body: dict) -> str:
    block = body["messages"][-1]["content"][-1]
    assert block["type"] == "text"
    return block["text"]


def test_a_chat_settles_goal_items_with_goal_update_and_the_goals_line_rides_the_tail(api, store):
    loop, goals = make_loop(api, store)
    GoalRunner(JsonFileAdapter(store), scope=SCOPE, actor="host").start(story_program())

    api.reply(tool_use("goal_status", {}))
    api.reply(
        tool_use(
            "goal_update",
            {"goal": "identity", "completed": ["client"], "reason": "Returning client verified", "version": 1},
        )
    )
    api.reply(text("Welcome back, Dana. What has changed since we last spoke?"))
    loop.send("Hi, it's Dana Reeve again, same address as before.")

    api.reply(
        tool_use(
            "goal_update",
            {
                "goal": "updates",
                "completed": ["changes"],
                "deferred": ["documents"],
                "reason": "Update recorded; client will send documents tomorrow",
                "version": 2,
            },
        )
    )
    api.reply(text("Noted. Send the documents when you can."))
    loop.send("The landlord wrote again last week. I'll send the letters tomorrow.")

    bodies = api.bodies
    assert len(bodies) == 5
    # The goals line at the tail of every request, as stored when the request was made.
    assert [tail(b) for b in bodies] == [
        '[goals: client-intake] goal 1/2 "Confirm identity" · pending: Verify the client',
        '[goals: client-intake] goal 1/2 "Confirm identity" · pending: Verify the client',
        '[goals: client-intake] goal 2/2 "Matter updates" · pending: New developments, New documents',
        '[goals: client-intake] goal 2/2 "Matter updates" · pending: New developments, New documents',
        "[goals: client-intake] complete · deferred: 1",
    ]
    for body in bodies:  # only at the tail: earlier turns carry no stale line
        for message in body["messages"][:-1]:
            assert not any(str(b.get("text", "")).startswith("[goals:") for b in message["content"])
    # The prefix is byte-identical, and it offers both goal tools after the form tools.
    assert len({json.dumps(b["system"]) for b in bodies}) == 1
    assert len({json.dumps(b["tools"]) for b in bodies}) == 1
    names = [t["name"] for t in bodies[0]["tools"]]
    assert names[-2:] == ["goal_status", "goal_update"] and names[0] == "form_list"
    # A turn answering tool calls begins with its results; the line comes after them.
    types = [b["type"] for b in bodies[1]["messages"][-1]["content"]]
    assert types == ["tool_result", "text"]

    status = goals.inspect()
    assert status.version == 3 and status.complete
    assert [(f.item, f.reason) for f in status.follow_ups] == [
        ("documents", "Update recorded; client will send documents tomorrow")
    ]
    assert status.item("identity", "client").reason == "Returning client verified"
    history = goals.history()
    assert [(h.actor, h.source) for h in history[1:]] == [("model", "conversation:test")] * 2
    # The saved conversation holds no goals line.
    assert not any("[goals:" in json.dumps(m) for m in loop.messages)


def test_a_stale_version_from_the_model_is_a_conflict_it_can_read(api, store):
    loop, goals = make_loop(api, store)
    GoalRunner(JsonFileAdapter(store), scope=SCOPE, actor="host").start(story_program())
    GoalRunner(JsonFileAdapter(store), scope=SCOPE, actor="host").update(goal="updates", completed=["changes"])

    api.reply(tool_use("goal_update", {"goal": "identity", "completed": ["client"], "version": 1}))
    api.reply(text("Let me check again."))
    loop.send("It's Dana.")

    result = json.loads(api.bodies[1]["messages"][-1]["content"][0]["content"])
    assert result["status"] == "error" and result["data"] == {"code": "goal_conflict"}
    assert goals.inspect().item("identity", "client").disposition == "pending"


def test_a_host_may_withhold_goal_update_from_the_model(api, store):
    loop, _ = make_loop(api, store, deny=["update"])
    GoalRunner(JsonFileAdapter(store), scope=SCOPE, actor="host").start(story_program())
    api.reply(tool_use("goal_update", {"goal": "identity", "completed": ["client"], "version": 1}))
    api.reply(text("I can't change that."))
    loop.send("Mark me verified.")

    body = api.bodies[0]
    assert [t["name"] for t in body["tools"] if t["name"].startswith("goal_")] == ["goal_status"]
    result = json.loads(api.bodies[1]["messages"][-1]["content"][0]["content"])
    assert result["data"] == {"code": "unknown_tool"}
