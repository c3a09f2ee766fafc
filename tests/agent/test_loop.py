"""The chat loop: tier 0 at the tail, a fixed prompt and tool list, and failures that lose nothing."""

from __future__ import annotations

import json
import threading

import pytest

from formctl.agent.events import LoopError, ModelCall, ModelTurn, TextDelta, Tier0Changed, ToolCall, ToolResult, TurnEnd
from formctl.agent.loop import ChatLoop
from formctl.agent.models.base import ModelReply
from formctl.agent.models.scripted import ScriptedModel
from formctl.errors import ModelError, ToolSelectionError
from formctl.store.conversations import ConversationStore

CLAIMANT = {"full_name": "Dana Reeve", "staff_id": "AB1234", "email": "dana@example.com"}


def say(text: str) -> ModelReply:
    return ModelReply([{"type": "text", "text": text}], "end_turn")


_n = iter(range(1, 10_000))


def call(name: str, input: dict, *more: tuple[str, dict], text: str | None = None) -> ModelReply:
    blocks = [{"type": "text", "text": text}] if text else []
    for tool_name, tool_input in ((name, input), *more):
        blocks.append({"type": "tool_use", "id": f"toolu_{next(_n)}", "name": tool_name, "input": tool_input})
    return ModelReply(blocks, "tool_use")


def make_loop(claim_runner, replies, **kwargs):
    events: list = []
    model = kwargs.pop("model", None) or ScriptedModel(replies)
    loop = ChatLoop(
        claim_runner, model, form_id=kwargs.pop("form_id", "travel-claim"), on_event=events.append, **kwargs
    )
    return loop, model, events


def tier0_of(request) -> str | None:
    last = request.messages[-1]["content"]
    return (
        last[-1]["text"] if last and last[-1].get("type") == "text" and last[-1]["text"].startswith("[form:") else None
    )


# --------------------------------------------------------------------------- tier 0 and the fixed prefix


def test_tier0_is_appended_after_the_tool_results_of_the_newest_user_turn(claim_runner):
    loop, model, _ = make_loop(claim_runner, [call("form_start", {"form": "travel-claim"}), say("What is your name?")])
    loop.send("I want to claim for a trip")
    second = model.requests[1]
    last_turn = second.messages[-1]
    assert last_turn["role"] == "user"
    assert [b["type"] for b in last_turn["content"]] == ["tool_result", "text"]
    assert last_turn["content"][-1]["text"] == claim_runner.tier0()
    assert claim_runner.tier0().startswith('[form: travel-claim] step 1/4 "Claimant"')


def test_earlier_turns_do_not_keep_old_tier0_text(claim_runner):
    loop, model, _ = make_loop(
        claim_runner,
        [
            call("form_start", {"form": "travel-claim"}),
            say("Name?"),
            call("form_fill", {"values": CLAIMANT, "quotes": CLAIMANT}),
            say("Where did you go?"),
        ],
    )
    loop.send("Start a claim")
    loop.send("Dana Reeve, AB1234, dana@example.com")
    last_request = model.requests[-1]
    texts = [b.get("text", "") for m in last_request.messages[:-1] for b in m["content"] if isinstance(b, dict)]
    assert not any(t.startswith("[form:") for t in texts)
    assert tier0_of(last_request).startswith('[form: travel-claim] step 2/4 "Trip"')
    stored = json.dumps(loop.messages)
    assert "[form:" not in stored


def test_tier0_is_never_in_the_system_prompt_and_the_prefix_never_changes(claim_runner):
    loop, model, _ = make_loop(
        claim_runner,
        [
            call("form_start", {"form": "travel-claim", "values": CLAIMANT, "quotes": CLAIMANT}),
            say("Where to?"),
            call("form_fill", {"values": {"destination": "Leeds"}}),
            say("When?"),
        ],
    )
    loop.send("hi")
    loop.send("Leeds")
    systems = {r.system for r in model.requests}
    tools = {json.dumps(r.tools) for r in model.requests}
    assert len(model.requests) == 4 and len(systems) == 1 and len(tools) == 1
    assert "[form: travel-claim]" not in model.requests[-1].system
    assert claim_runner.tier0() not in model.requests[-1].system
    assert loop.system_prompt == model.requests[0].system
    assert "Conversational: one or two questions at a time." in loop.system_prompt


def test_no_empty_text_block_is_sent_when_there_is_no_tier0(claim_runner):
    loop, model, events = make_loop(claim_runner, [say("Which form?")])
    loop.send("hello")
    assert claim_runner.tier0() == ""
    assert model.requests[0].messages == [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]
    assert [e for e in events if isinstance(e, ModelCall)][0].tier0 == ""


def test_a_form_started_by_the_host_shows_its_tier0_on_the_first_call(claim_runner):
    claim_runner.start("travel-claim")
    loop, model, events = make_loop(claim_runner, [say("Hello! What's your full name?")])
    loop.send("hi")
    sent = model.requests[0].messages[-1]["content"]
    assert sent[0] == {"type": "text", "text": "hi"}
    assert sent[1]["text"] == claim_runner.tier0()
    assert events[0].tier0 == claim_runner.tier0()


def test_the_tier0_at_the_start_of_travel_claim_is_short(claim_runner):
    claim_runner.start("travel-claim")
    assert len(claim_runner.tier0()) <= 260


# --------------------------------------------------------------------------- the turn


def test_every_tool_call_in_a_reply_runs_in_order_and_answers_in_one_turn(claim_runner):
    reply = call(
        "form_start",
        {"form": "travel-claim"},
        ("form_fill", {"values": CLAIMANT, "quotes": CLAIMANT}),
        ("form_status", {}),
    )
    loop, model, events = make_loop(claim_runner, [reply, say("Where did you travel?")])
    turn = loop.send("Dana Reeve, AB1234, dana@example.com")
    assert turn.tool_calls == 3 and turn.iterations == 2 and turn.error is None
    results = loop.messages[2]["content"]
    assert [b["tool_use_id"] for b in results] == [b["id"] for b in reply.content]
    assert [e.name for e in events if isinstance(e, ToolResult)] == ["form_start", "form_fill", "form_status"]
    assert claim_runner.open_instance().in_force_values() == CLAIMANT


def test_events_come_in_order_and_tier0_changes_are_announced(claim_runner):
    loop, _, events = make_loop(claim_runner, [call("form_start", {"form": "travel-claim"}), say("Name?")])
    loop.send("start")
    kinds = [e.kind for e in events]
    assert kinds == [
        "model_call",
        "model_turn",
        "tool_call",
        "tool_result",
        "tier0_changed",
        "model_call",
        "text_delta",
        "model_turn",
        "turn_end",
    ]
    changed = [e for e in events if isinstance(e, Tier0Changed)]
    assert changed and changed[-1].text == claim_runner.tier0()
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Name?"]
    end = events[-1]
    assert isinstance(end, TurnEnd) and end.text == "Name?" and end.iterations == 2


def test_a_tool_result_event_carries_the_exact_envelope_the_model_receives(claim_runner):
    loop, _, events = make_loop(claim_runner, [call("form_fill", {"values": 5}), say("Sorry.")])
    claim_runner.start("travel-claim")
    loop.send("x")
    result = next(e for e in events if isinstance(e, ToolResult))
    assert result.is_error and result.result["data"] == {"code": "invalid_arguments"}
    block = loop.messages[2]["content"][0]
    assert json.loads(block["content"]) == result.result and block["is_error"] is True


def test_a_completed_form_ends_with_no_tier0(claim_runner):
    claim_runner.start(
        "travel-claim",
        seed=CLAIMANT
        | {
            "destination": "Leeds",
            "departure_date": "2026-03-02",
            "return_date": "2026-03-04",
            "purpose": "Client workshop",
            "mode": "rail",
            "ticket_reference": "TR-99812",
            "total": 310,
        },
    )
    assert claim_runner.open_instance().status == "ready"  # the claim is read back before it is sent
    loop, model, events = make_loop(claim_runner, [call("form_submit", {}), say("All done.")])
    turn = loop.send("yes, send it")
    assert turn.text == "All done."
    assert claim_runner.open_instance().status == "complete"
    assert [b["type"] for b in model.requests[1].messages[-1]["content"]] == ["tool_result"]
    assert [e for e in events if isinstance(e, Tier0Changed)][-1].text == ""


# --------------------------------------------------------------------------- failures


class FailingOnce:
    """A model that raises ModelError on chosen calls and otherwise plays a script."""

    name = "failing"

    def __init__(self, replies, fail_on):
        self.inner = ScriptedModel(replies)
        self.fail_on = set(fail_on)
        self.calls = 0
        self.requests = []

    def respond(self, request, on_text=None):
        self.calls += 1
        self.requests.append(json.loads(json.dumps(request.messages)))
        if self.calls in self.fail_on:
            raise ModelError("The Anthropic API is overloaded (529). Send again in a moment.")
        return self.inner.respond(request, on_text)


def test_a_model_error_is_one_line_and_the_next_message_tries_again_with_nothing_lost(claim_runner):
    model = FailingOnce(
        [call("form_start", {"form": "travel-claim", "values": CLAIMANT, "quotes": CLAIMANT}), say("Where to?")],
        fail_on={2},
    )
    loop, _, events = make_loop(claim_runner, [], model=model)
    turn = loop.send("Dana Reeve, AB1234, dana@example.com")
    assert turn.error == "The Anthropic API is overloaded (529). Send again in a moment."
    assert turn.stop_reason == "error"
    assert [e.message for e in events if isinstance(e, LoopError)] == [turn.error]
    assert claim_runner.open_instance().in_force_values() == CLAIMANT  # the committed answers stayed
    retry = loop.send("Did that work?")
    assert retry.error is None and retry.text == "Where to?"
    last = model.requests[-1][-1]
    assert last["role"] == "user"
    assert [b["type"] for b in last["content"]] == ["tool_result", "text", "text"]
    assert last["content"][1]["text"] == "Did that work?"
    roles = [m["role"] for m in loop.messages]
    assert all(a != b for a, b in zip(roles, roles[1:])), roles


def test_a_failed_first_call_keeps_the_message_and_joins_the_next_one(claim_runner):
    model = FailingOnce([say("Hello Dana.")], fail_on={1})
    loop, _, _ = make_loop(claim_runner, [], model=model)
    assert loop.send("I'm Dana").error
    assert loop.send("Hello?").text == "Hello Dana."
    assert model.requests[-1] == [
        {"role": "user", "content": [{"type": "text", "text": "I'm Dana"}, {"type": "text", "text": "Hello?"}]}
    ]


def test_a_model_that_raises_something_else_is_still_one_line(claim_runner):
    class Broken:
        name = "broken"

        def respond(self, request, on_text=None):
            raise RuntimeError("socket went away\nwith a second line")

    loop, _, _ = make_loop(claim_runner, [], model=Broken())
    turn = loop.send("hi")
    assert turn.stop_reason == "error" and turn.error.startswith("The model failed: RuntimeError")


def test_the_iteration_limit_stops_a_model_that_never_answers(claim_runner):
    claim_runner.start("travel-claim")
    replies = [call("form_status", {}) for _ in range(3)] + [say("Sorry, where were we?")]
    loop, model, events = make_loop(claim_runner, replies, max_iterations=3)
    turn = loop.send("hi")
    assert turn.stop_reason == "iteration_limit" and turn.iterations == 3 and turn.tool_calls == 3
    assert "iteration limit" in turn.error
    assert loop.messages[-1]["role"] == "user"
    assert loop.send("hello?").text == "Sorry, where were we?"


def test_a_reply_cut_off_at_max_tokens_is_reported_and_its_tool_calls_not_run(claim_runner):
    claim_runner.start("travel-claim")
    cut = ModelReply(
        [
            {"type": "text", "text": "Let me save"},
            {
                "type": "tool_use",
                "id": "toolu_cut",
                "name": "form_fill",
                "input": {"values": CLAIMANT, "quotes": CLAIMANT},
            },
        ],
        "max_tokens",
    )
    loop, model, events = make_loop(claim_runner, [cut, say("Saved.")])
    turn = loop.send("Dana Reeve, AB1234, dana@example.com")
    assert turn.stop_reason == "max_tokens" and "token limit" in turn.error
    assert claim_runner.open_instance().in_force_values() == {}
    assert not [e for e in events if isinstance(e, ToolCall)]
    assert loop.messages[-1] == {"role": "assistant", "content": [{"type": "text", "text": "Let me save"}]}
    assert loop.send("go on").text == "Saved."


def test_a_refusal_is_reported_not_taken_for_an_answer(claim_runner):
    loop, _, events = make_loop(
        claim_runner, [ModelReply([{"type": "text", "text": "I can't help with that."}], "refusal")]
    )
    turn = loop.send("hi")
    assert turn.stop_reason == "refusal" and "refusal" in turn.error
    assert [e.message for e in events if isinstance(e, LoopError)] == [turn.error]


def test_a_read_that_changes_nothing_announces_no_tier0_change(claim_runner):
    claim_runner.start("travel-claim")
    loop, _, events = make_loop(claim_runner, [call("form_status", {}), say("Your name?")])
    loop.send("where are we?")
    assert not [e for e in events if isinstance(e, Tier0Changed)]


def test_empty_text_blocks_from_a_model_are_not_kept(claim_runner):
    loop, _, _ = make_loop(
        claim_runner,
        [
            ModelReply(
                [{"type": "text", "text": ""}, {"type": "tool_use", "id": "t1", "name": "form_list", "input": {}}],
                "tool_use",
            ),
            say("Two forms."),
        ],
    )
    loop.send("what forms are there?")
    assert loop.messages[1]["content"] == [{"type": "tool_use", "id": "t1", "name": "form_list", "input": {}}]


def test_an_empty_message_is_not_sent(claim_runner):
    loop, model, events = make_loop(claim_runner, [])
    turn = loop.send("   ")
    assert turn.stop_reason == "empty" and turn.error and model.requests == []
    assert loop.messages == []


def test_an_unknown_tool_call_gets_an_error_result(claim_runner):
    loop, _, events = make_loop(claim_runner, [call("form_delete", {}), say("Sorry.")])
    loop.send("delete it")
    result = next(e for e in events if isinstance(e, ToolResult))
    assert result.result["data"]["code"] == "unknown_tool"


# --------------------------------------------------------------------------- cancellation


def test_cancel_between_tool_calls_answers_the_rest_as_not_run_and_keeps_what_committed(claim_runner):
    box = {}

    def on_event(event):
        if isinstance(event, ToolResult) and event.name == "form_start":
            box["loop"].cancel()

    reply = call(
        "form_start",
        {"form": "travel-claim", "values": {"full_name": "Dana Reeve"}, "quotes": {"full_name": "Dana Reeve"}},
        ("form_fill", {"values": {"email": "dana@example.com"}}),
    )
    model = ScriptedModel([reply, say("Go on.")])
    loop = ChatLoop(claim_runner, model, form_id="travel-claim", on_event=on_event)
    box["loop"] = loop
    turn = loop.send("Dana Reeve, dana@example.com")
    assert turn.stop_reason == "cancelled" and turn.error
    assert claim_runner.open_instance().in_force_values() == {"full_name": "Dana Reeve"}
    results = loop.messages[-1]["content"]
    assert [json.loads(b["content"])["status"] for b in results] == ["success", "error"]
    assert json.loads(results[1]["content"])["data"]["code"] == "cancelled"
    assert loop.send("carry on").text == "Go on."


def test_cancel_from_another_thread_discards_the_reply_in_flight(claim_runner):
    started, release = threading.Event(), threading.Event()

    class Slow:
        name = "slow"

        def respond(self, request, on_text=None):
            started.set()
            release.wait(5)
            return ModelReply(
                [{"type": "tool_use", "id": "t1", "name": "form_start", "input": {"form": "travel-claim"}}], "tool_use"
            )

    loop = ChatLoop(claim_runner, Slow(), form_id="travel-claim")
    out = {}
    worker = threading.Thread(target=lambda: out.setdefault("turn", loop.send("start")))
    worker.start()
    assert started.wait(5)
    loop.cancel()
    release.set()
    worker.join(5)
    assert out["turn"].stop_reason == "cancelled"
    assert claim_runner.open_instance() is None
    assert loop.messages == [{"role": "user", "content": [{"type": "text", "text": "start"}]}]


def test_a_keyboard_interrupt_during_a_turn_is_a_cancel(claim_runner):
    class Interrupted:
        name = "interrupted"

        def respond(self, request, on_text=None):
            raise KeyboardInterrupt

    loop = ChatLoop(claim_runner, Interrupted(), form_id="travel-claim")
    turn = loop.send("hi")
    assert turn.stop_reason == "cancelled" and turn.error


# --------------------------------------------------------------------------- resume


def test_a_saved_conversation_resumes_with_its_context_and_the_same_prefix(claim_runner, tmp_path):
    store = ConversationStore(tmp_path)
    first = ScriptedModel(
        [call("form_start", {"form": "travel-claim", "values": {"full_name": "Dana Reeve"}}), say("Your staff ID?")]
    )
    loop = ChatLoop(claim_runner, first, form_id="travel-claim", conversation_store=store)
    loop.send("I'm Dana Reeve")
    instance_id = claim_runner.open_instance().id
    assert loop.instance_id == instance_id
    saved = store.load(instance_id)
    assert saved == loop.messages

    second = ScriptedModel([say("Thanks. Your work email?")])
    resumed = ChatLoop(claim_runner, second, messages=store.load(instance_id), conversation_store=store)
    assert resumed.system_prompt == loop.system_prompt
    assert resumed.tool_definitions == loop.tool_definitions
    resumed.send("AB1234")
    sent = second.requests[0].messages
    assert sent[:-1] == saved
    assert sent[0]["content"][0]["text"] == "I'm Dana Reeve"
    assert sent[-1]["content"][-1]["text"] == claim_runner.tier0()
    assert len(store.load(instance_id)) == len(saved) + 2


def test_the_conversation_is_saved_with_the_tool_results_even_when_the_turn_then_fails(claim_runner, tmp_path):
    store = ConversationStore(tmp_path)
    model = FailingOnce(
        [call("form_start", {"form": "travel-claim", "values": CLAIMANT, "quotes": CLAIMANT})], fail_on={2}
    )
    loop = ChatLoop(claim_runner, model, form_id="travel-claim", conversation_store=store)
    assert loop.send("Dana Reeve, AB1234, dana@example.com").error
    saved = store.load(claim_runner.open_instance().id)
    assert [m["role"] for m in saved] == ["user", "assistant", "user"]
    assert saved[-1]["content"][0]["type"] == "tool_result"


def test_tool_calls_with_lone_surrogates_or_deep_values_are_saved_and_load_back(claim_runner, tmp_path):
    deep: object = "x"
    for _ in range(950):
        deep = [deep]

    class Uncopied(ScriptedModel):  # the recording model deep-copies, which a 950-level value would overflow
        def respond(self, request, on_text=None):
            self.played += 1
            return self._replies[self.played - 1]

    store = ConversationStore(tmp_path)
    model = Uncopied(
        [
            call("form_start", {"form": "travel-claim", "values": {"staff_id": "AB1234"}}),
            call("form_fill", {"values": {"full_name": "Dana\udc80Reeve"}}),
            call("form_fill", {"values": {"no_such\ud800field": "\ud800"}}),
            call("form_fill", {"values": {"full_name": deep}}),
            say("Done \udfff"),
        ]
    )
    loop = ChatLoop(claim_runner, model, form_id="travel-claim", conversation_store=store)
    turn = loop.send("I'm Dana\udc80")
    assert not turn.error
    saved = store.load(claim_runner.open_instance().id)
    assert saved[0]["content"][0]["text"] == "I'm Dana\udc80"
    calls = [block["input"] for message in saved for block in message["content"] if block.get("type") == "tool_use"]
    assert calls[1] == {"values": {"full_name": "Dana\udc80Reeve"}}
    assert calls[2] == {"values": {"no_such\ud800field": "\ud800"}}
    assert saved[-1]["content"][-1]["text"] == "Done \udfff"


def test_a_resumed_conversation_with_an_unanswered_tool_call_is_repaired(claim_runner):
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "start"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t9", "name": "form_status", "input": {}}]},
    ]
    model = ScriptedModel([say("Where were we?")])
    loop = ChatLoop(claim_runner, model, form_id="travel-claim", messages=messages)
    loop.send("hello again")
    last = model.requests[0].messages[-1]["content"]
    assert last[0]["type"] == "tool_result" and last[0]["tool_use_id"] == "t9"
    assert last[1] == {"type": "text", "text": "hello again"}


# --------------------------------------------------------------------------- tool selection


def test_allow_and_deny_narrow_the_tools_sent(claim_runner):
    loop, model, _ = make_loop(claim_runner, [say("ok")], deny=["start", "abandon"])
    loop.send("hi")
    assert [t["name"] for t in model.requests[0].tools] == [
        "form_list",
        "form_status",
        "form_inspect",
        "form_fill",
        "form_revise",
        "form_submit",
        "form_withdraw",
        "form_history",
    ]


def test_an_unknown_selector_is_refused_when_the_loop_is_built(claim_runner):
    with pytest.raises(ToolSelectionError):
        ChatLoop(claim_runner, ScriptedModel([]), allow=["delete"])


def test_the_model_turn_event_holds_the_reply(claim_runner):
    loop, _, events = make_loop(claim_runner, [say("Hi.")])
    loop.send("hello")
    turns = [e for e in events if isinstance(e, ModelTurn)]
    assert turns[0].reply.text == "Hi." and turns[0].iteration == 1
