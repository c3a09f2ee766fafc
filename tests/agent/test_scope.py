"""A conversation sees one subject: the tools reach only their scope's instances (another
subject's id is not_found, exactly like an id that does not exist), form_history lists only
the scope's instances, and a conversation is saved under its own id, never under one the
model named."""

from __future__ import annotations

import json

import pytest

from clitools import FORMS
from fake_anthropic import FakeAnthropic, text, tool_use
from formctl import FormRegistry, FormRunner, JsonFileAdapter
from formctl.agent.loop import ChatLoop
from formctl.agent.tools import EVERY_SUBJECT, FormTools
from formctl.errors import InvalidArgumentError
from formctl.store.conversations import ConversationStore

ALICE = {"full_name": "Alice Adams", "staff_id": "AA1111", "email": "alice@example.org"}


def runner_for(store: str, subject: str) -> FormRunner:
    return FormRunner(JsonFileAdapter(store), registry=FormRegistry.from_toml(FORMS / "registry.toml"), subject=subject)


@pytest.fixture
def alice_and_bob(store):
    alice = runner_for(store, "alice")
    alice_id = alice.start("travel-claim", seed=ALICE).view.instance_id
    bob = runner_for(store, "bob")
    bob_id = bob.start("travel-claim", seed={"full_name": "Bob Brown"}).view.instance_id
    return alice, alice_id, bob, bob_id


def test_bobs_tools_cannot_read_write_or_list_alices_instance(alice_and_bob):
    alice, alice_id, bob, bob_id = alice_and_bob
    tools = FormTools(bob)  # the runner's subject is the scope by default
    version = alice.open_instance(alice_id).version
    missing = tools.call("form_status", {"instance_id": "form_zzzzzzzz_zzzzzz"})

    calls = [
        ("form_status", {}),
        ("form_inspect", {"scope": "outline"}),
        ("form_history", {}),
        ("form_fill", {"values": {"email": "mallory@example.org"}}),
        ("form_revise", {"action": "set", "field": "full_name", "value": "Mallory"}),
        ("form_revise", {"action": "undo"}),
        ("form_abandon", {"reason": "gone"}),
    ]
    for name, args in calls:
        envelope = tools.call(name, {**args, "instance_id": alice_id})
        assert envelope["status"] == "error" and envelope["data"] == {"code": "not_found"}, name
        assert envelope["message"] == f'No form instance "{alice_id}".'  # as for an id that does not exist
        assert "Alice" not in json.dumps(envelope)
    assert missing["data"] == {"code": "not_found"}

    for args in ({}, {"subject": "alice"}, {"subject": "bob"}):
        listed = tools.call("form_history", args)["data"]["instances"]
        assert [row["instance_id"] for row in listed] == ([] if args.get("subject") == "alice" else [bob_id])
    stored = alice.open_instance(alice_id)
    assert (stored.version, stored.in_force_values()["email"]) == (version, "alice@example.org")
    assert tools.call("form_status", {"instance_id": bob_id})["status"] == "success"


def test_a_host_chooses_the_scope_explicitly(alice_and_bob):
    alice, alice_id, bob, bob_id = alice_and_bob

    as_alice = FormTools(bob, scope="alice")
    assert as_alice.call("form_status", {"instance_id": alice_id})["status"] == "success"
    assert as_alice.call("form_status", {"instance_id": bob_id})["data"] == {"code": "not_found"}
    everyone = FormTools(bob, scope=EVERY_SUBJECT)
    assert everyone.call("form_history", {"subject": "alice"})["data"]["instances"][0]["instance_id"] == alice_id
    assert everyone.call("form_status", {"instance_id": alice_id})["status"] == "success"
    with pytest.raises(InvalidArgumentError):
        FormTools(bob, scope="")


def test_a_conversation_is_saved_under_its_own_id_never_one_the_model_named(alice_and_bob, store):
    alice, alice_id, bob, bob_id = alice_and_bob
    conversations = ConversationStore(store)
    conversations.save(alice_id, [{"role": "user", "content": [{"type": "text", "text": "Alice's chat"}]}])
    alice_file = conversations.log(alice_id)
    before = alice_file.read_bytes()
    # Bob's other claim, named by the model in Bob's own chat: readable, but the chat stays with its own.
    other_id = bob.start("client-intake").view.instance_id
    runner = runner_for(store, "bob")
    with FakeAnthropic() as api:
        from formctl.agent.models.anthropic import AnthropicModel

        api.reply(
            tool_use("form_status", {"instance_id": alice_id}), tool_use("form_status", {"instance_id": other_id})
        )
        api.reply(text("Done."))
        loop = ChatLoop(
            runner,
            AnthropicModel("claude-test", api_key="sk-test", base_url=api.url, max_retries=0),
            form_id="travel-claim",
            conversation_store=conversations,
            scope="bob",
        )
        loop.instance_id = bob_id  # the conversation is about Bob's first claim
        loop.send("What's on file?")
    assert alice_file.read_bytes() == before
    assert loop.instance_id == bob_id
    assert conversations.load(bob_id)[-1]["content"][0]["text"] == "Done."
    assert not conversations.path(other_id).exists()


def test_formctl_run_with_a_model_that_reaches_for_alices_instance_reads_and_writes_nothing_of_hers(cli):
    from pathlib import Path

    store = cli.store
    cli.ok("run", "travel-claim", "--subject", "alice", "--offline", input="Alice Adams\nAA1111\n")
    (alice_id,) = [p.stem for p in (Path(store) / "conversations").glob("*.jsonl")]
    files = [p for p in Path(store).rglob("*") if p.is_file() and alice_id in p.name]
    assert len(files) >= 2  # her instance and her saved conversation, at least
    before = {p: p.read_bytes() for p in files}

    with FakeAnthropic() as api:
        api.reply(text("Let me look."), tool_use("form_status", {"instance_id": alice_id}))
        api.reply(
            tool_use("form_fill", {"instance_id": alice_id, "values": {"email": "mallory@example.org"}}),
            tool_use(
                "form_revise", {"instance_id": alice_id, "action": "set", "field": "full_name", "value": "Mallory"}
            ),
        )
        api.reply(
            tool_use("form_history", {"subject": "alice"}),
            tool_use("form_history", {"instance_id": alice_id}),
            tool_use("form_history", {}),
        )
        api.reply(tool_use("form_start", {"form": "travel-claim"}))
        api.reply(text("Nothing of anyone else's here. What's your full name?"))
        env = {"ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": api.url}
        bobs = cli.ok("run", "travel-claim", "--subject", "bob", env=env, input="")
        assert api.unexpected == []
        sent = json.dumps(api.bodies)

    assert "Nothing of anyone else's here." in bobs.stdout
    assert "Alice Adams" not in sent and "AA1111" not in sent  # nothing of hers reached the model
    results = [
        json.loads(block["content"])
        for message in api.bodies[-1]["messages"]  # the whole conversation
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    not_found = {"status": "error", "message": f'No form instance "{alice_id}".', "data": {"code": "not_found"}}
    assert results[:3] == [not_found] * 3  # form_status, form_fill, form_revise
    assert results[3:6] == [
        {"status": "success", "data": {"instances": []}},
        not_found,
        {"status": "success", "data": {"instances": []}},
    ]  # form_history: hers, by id, his
    assert {p: p.read_bytes() for p in files} == before  # nothing of hers was written
    (bob_row,) = cli.json("instances", "--subject", "bob")["instances"]
    assert (Path(store) / "conversations" / f"{bob_row['instance_id']}.jsonl").exists()
