"""Conversations saved beside their instance: atomic, private, and loud about corruption."""

from __future__ import annotations

import json
import os
import stat

import pytest

from formctl.errors import InvalidArgumentError, StoreError
from formctl.forms.exchange import ExchangeSave
from formctl.store.conversations import ConversationStore

MESSAGES = [
    {"role": "user", "content": [{"type": "text", "text": "Hi, I'm Dana — £310 for Leeds"}]},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "form_list", "input": {}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "{}", "is_error": False}]},
]


def test_a_saved_conversation_loads_back_exactly(tmp_path):
    store = ConversationStore(tmp_path)
    path = store.save("form_abc_123456", MESSAGES)
    assert path == tmp_path / "conversations" / "form_abc_123456.jsonl"
    assert store.load("form_abc_123456") == MESSAGES


def test_an_instance_without_a_conversation_loads_as_empty(tmp_path):
    assert ConversationStore(tmp_path).load("form_abc_123456") == []


def test_conversation_files_are_private_and_a_later_save_of_an_exchange_replaces_its_earlier_one(tmp_path):
    store = ConversationStore(tmp_path)
    pos, turn = store.claim("form_abc_123456", exchange=True, turn=True, known=(0, 0))
    assert (pos, turn) == (1, 1)
    store.save_exchange("form_abc_123456", ExchangeSave(pos, "a", MESSAGES[:1], [(1, "Hi")]))
    store.save_exchange("form_abc_123456", ExchangeSave(pos, "a", MESSAGES, [(1, "Hi")]))
    path = tmp_path / "conversations" / "form_abc_123456.jsonl"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert os.listdir(tmp_path / "conversations") == ["form_abc_123456.jsonl"]
    assert store.load("form_abc_123456") == MESSAGES
    assert [p.words for p in store.conversation("form_abc_123456").parts] == [[(1, "Hi")]]


def test_two_chats_on_one_instance_each_keep_every_exchange_and_turn_numbers_are_given_once(tmp_path):
    one, two = ConversationStore(tmp_path), ConversationStore(tmp_path)
    a, ta = one.claim("form_abc_123456", exchange=True, turn=True, known=(0, 0))
    b, tb = two.claim("form_abc_123456", exchange=True, turn=True, known=(0, 0))
    assert (a, ta, b, tb) == (1, 1, 2, 2)
    said_b = {"role": "user", "content": [{"type": "text", "text": "from b"}]}
    two.save_exchange("form_abc_123456", ExchangeSave(b, "b", [said_b], [(tb, "from b")]))
    one.save_exchange("form_abc_123456", ExchangeSave(a, "a", MESSAGES, [(ta, "Hi")]))
    conversation = one.conversation("form_abc_123456")
    assert [(p.pos, p.chat, p.words) for p in conversation.parts] == [(1, "a", [(1, "Hi")]), (2, "b", [(2, "from b")])]
    # joined as a model accepts it: the user message after the tool results is one user turn
    assert conversation.messages[-1]["content"][-1] == {"type": "text", "text": "from b"}


def test_a_last_line_cut_short_is_not_read_and_the_next_save_cuts_it_off(tmp_path):
    store = ConversationStore(tmp_path)
    store.save("form_abc_123456", MESSAGES)
    path = tmp_path / "conversations" / "form_abc_123456.jsonl"
    with open(path, "ab") as fh:
        fh.write(b'{"pos": 2, "chat": "x", "mess')  # a writer killed mid-line
    assert store.load("form_abc_123456") == MESSAGES
    store.save("form_abc_123456", MESSAGES[:1])
    assert path.read_text().count('"mess') == 2  # the cut-off line is gone, the new one whole
    assert [p.messages for p in store.conversation("form_abc_123456").parts] == [MESSAGES, MESSAGES[:1]]


@pytest.mark.parametrize("bad_id", ["../etc/passwd", "a/b", ".hidden", "", "x" * 200, "form_1.json"])
def test_an_id_that_could_escape_the_folder_is_refused(tmp_path, bad_id):
    with pytest.raises(InvalidArgumentError):
        ConversationStore(tmp_path).save(bad_id, MESSAGES)


def legacy(tmp_path, messages=MESSAGES):
    """A conversation saved whole by an earlier formctl (format 1)."""
    path = tmp_path / "conversations" / "form_abc_123456.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"format": 1, "instance_id": "form_abc_123456", "messages": messages}))
    return path


def test_a_conversation_saved_whole_before_is_read_first_and_its_turns_counted_after_it(tmp_path):
    legacy(tmp_path)
    store = ConversationStore(tmp_path)
    store.save("form_abc_123456", MESSAGES[:1])
    conversation = store.conversation("form_abc_123456")
    assert [p.pos for p in conversation.parts] == [0, 1] and conversation.parts[0].words is None
    assert [p.messages for p in conversation.parts] == [MESSAGES, MESSAGES[:1]]


def test_a_corrupt_file_is_reported_with_its_path_and_left_alone(tmp_path):
    store = ConversationStore(tmp_path)
    path = legacy(tmp_path)
    path.write_text('{"format": 1, "messages": [', encoding="utf-8")
    with pytest.raises(StoreError) as raised:
        store.load("form_abc_123456")
    assert str(path) in raised.value.message
    assert path.read_text(encoding="utf-8") == '{"format": 1, "messages": ['


def test_a_damaged_line_with_lines_after_it_is_damage(tmp_path):
    store = ConversationStore(tmp_path)
    store.save("form_abc_123456", MESSAGES)
    path = store.log("form_abc_123456")
    path.write_text("[]\n" + path.read_text())
    with pytest.raises(StoreError) as raised:
        store.load("form_abc_123456")
    assert str(path) in raised.value.message and "line 1" in raised.value.message


def test_a_file_of_another_shape_is_reported(tmp_path):
    store = ConversationStore(tmp_path)
    legacy(tmp_path, [{"role": "system"}])
    with pytest.raises(StoreError):
        store.load("form_abc_123456")


# --------------------------------------------------------------------------- saving never fails on content


def test_lone_surrogates_and_any_text_round_trip(tmp_path):
    store = ConversationStore(tmp_path)
    odd = ["Dana\udc80Reeve", "\ud800", "\udfff\ud800", "nul\x00byte", "José — £310 🧾", "\x1b[2J"]
    messages = [
        {"role": "user", "content": [{"type": "text", "text": text} for text in odd]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "form_fill", "input": {"values": {"\ud800key": odd}}}],
        },
    ]
    path = store.save("form_abc_123456", messages)
    assert store.load("form_abc_123456") == messages
    path.read_bytes().decode("ascii")  # escaped throughout: nothing the file system could mangle


def test_a_value_nested_900_levels_deep_is_saved_with_a_placeholder(tmp_path):
    from formctl.store.conversations import MAX_DEPTH, TOO_DEEP

    deep: object = "bottom"
    for _ in range(900):
        deep = {"a": [deep]}
    messages = [
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "form_fill", "input": {"values": {"full_name": deep}}}
            ],
        }
    ]
    store = ConversationStore(tmp_path)
    store.save("form_abc_123456", messages)
    loaded = store.load("form_abc_123456")
    # messages, message, content, block, input, values: full_name's value sits at depth 6
    node, depth = loaded[0]["content"][0]["input"]["values"]["full_name"], 6
    while isinstance(node, (dict, list)):
        node = node[0] if isinstance(node, list) else node["a"]
        depth += 1
    assert node == TOO_DEEP and depth == MAX_DEPTH


def test_a_chat_opening_loads_an_intact_conversation_and_says_nothing(tmp_path):
    store = ConversationStore(tmp_path)
    store.save("form_abc_123456", MESSAGES)
    assert store.load_or_set_aside("form_abc_123456") == (MESSAGES, None)
    assert store.load_or_set_aside("form_abc_999999") == ([], None)


@pytest.mark.parametrize("damage", [b'{"format": 1, "messages": [', b"\xff\xfe not utf-8", b'{"format": 9}'])
def test_a_chat_opening_sets_a_damaged_conversation_aside_and_keeps_each_one(tmp_path, damage):
    store = ConversationStore(tmp_path)
    path = legacy(tmp_path)
    notes = []
    for n in (1, 2):
        path.write_bytes(damage)
        messages, note = store.load_or_set_aside("form_abc_123456")
        assert messages == [] and not path.exists()
        aside = path.with_name("form_abc_123456.json.damaged" + ("" if n == 1 else "-2"))
        assert aside.read_bytes() == damage  # kept as it was, never overwritten
        assert str(path) in note and f"moved to {aside}" in note and "every answer is kept" in note
        notes.append(note)
    assert notes[0] != notes[1]


def test_a_damaged_log_is_set_aside_and_what_was_saved_whole_before_goes_on(tmp_path):
    store = ConversationStore(tmp_path)
    legacy(tmp_path)
    store.log("form_abc_123456").write_bytes(b"[]\n")
    messages, note = store.load_or_set_aside("form_abc_123456")
    assert messages == MESSAGES and "goes on from what is left" in note
    assert store.log("form_abc_123456").with_name("form_abc_123456.jsonl.damaged").read_bytes() == b"[]\n"
