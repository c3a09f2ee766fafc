"""A recording depends on the conversation, not on where it ran: two recordings with different
subjects and stores are identical, and one whose model named the instance still replays.
"""

from __future__ import annotations

import json
import re

from example_forms import secret
from formctl import FormRegistry, FormRunner, MemoryAdapter
from formctl.agent.loop import ChatLoop
from formctl.agent.models.guided import GuidedModel
from formctl.transcripts.replay import replay_file

# --------------------------------------------------------------------------- transcripts: determinism


def _record_claim(path, adapter, subject):
    from formctl.transcripts.record import Recorder
    from helpers.recording import forms_registry

    runner = FormRunner(adapter, registry=forms_registry(), subject=subject)
    model = GuidedModel(runner, form_id="travel-claim")
    rec = Recorder(path, form_id="travel-claim", form_version=1, model=model.name, subject=subject, runner=runner)
    loop = ChatLoop(runner, model, form_id="travel-claim", on_event=rec.event)
    for words in [
        "hi",
        "Dana Reeve",
        "AB1234",
        "dana@example.org",
        "Leeds",
        "2026-11-03",
        "2026-11-05",
        "conference",
        "rail",
        "TKT-991",
        "skip",
        "skip",
        "900",
        "status",
    ]:
        rec.person(words)
        loop.send(words)
    rec.finish(runner)
    return path.read_text()


def test_two_recordings_with_different_subjects_and_stores_are_identical_even_while_waiting(tmp_path):
    from formctl import JsonFileAdapter

    first = _record_claim(tmp_path / "a.toml", MemoryAdapter(), "dana")
    second = _record_claim(tmp_path / "b.toml", JsonFileAdapter(tmp_path / "store"), "sam")
    assert 'status = "awaiting"' in first
    assert not re.search(r"form_[0-9a-z]{1,16}_[0-9a-z]{6}", first)  # the model's text names the instance too
    assert first == second


class _ExplicitInstance:
    """A model that names the instance in every write (as a real model copying it from a result may)."""

    def __init__(self, inner) -> None:
        self.inner, self.name = inner, inner.name

    def respond(self, request, on_text=None):
        reply = self.inner.respond(request, on_text)
        seen = None
        for message in request.messages:
            for block in message.get("content") if isinstance(message.get("content"), list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    data = json.loads(block["content"]).get("data")
                    if isinstance(data, dict) and isinstance(data.get("instance_id"), str):
                        seen = data["instance_id"]
        for block in reply.content:
            if block.get("type") == "tool_use" and block["name"] in ("form_fill", "form_revise") and seen:
                block["input"] = {**block["input"], "instance_id": seen}
        return reply


def test_a_transcript_whose_model_named_the_instance_still_replays(tmp_path):
    from formctl.transcripts.record import Recorder

    registry = FormRegistry().register("secret", name="Secret", description="", load=secret)
    runner = FormRunner(MemoryAdapter(), registry=registry, subject="qa")
    model = _ExplicitInstance(GuidedModel(runner, form_id="secret"))
    path = tmp_path / "explicit.toml"
    rec = Recorder(path, form_id="secret", form_version=1, model=model.name, subject="qa", runner=runner)
    loop = ChatLoop(runner, model, form_id="secret", on_event=rec.event)
    for words in ["hi", "Dana Reeve", "4821", "undo", "4822", "blue"]:
        rec.person(words)
        loop.send(words)
    rec.finish(runner)
    assert 'instance_id = "<instance>"' in path.read_text()
    result = replay_file(path, registry=registry)
    assert result.passed, result.diff


def test_a_recording_written_turn_by_turn_is_the_file_the_whole_transcript_makes_at_once(tmp_path):
    """The recorder rewrites its file after every turn, and dumps renders each turn once and keeps
    it (transcripts/format.py): the file at the end is what rendering the whole document afresh,
    in one piece, gives."""
    import tomlkit

    from formctl.transcripts import format as fmt

    written = _record_claim(tmp_path / "a.toml", MemoryAdapter(), "dana")
    transcript = fmt.load(tmp_path / "a.toml")
    fmt._RENDERED.clear()

    assert fmt.dumps(transcript) == written
    assert fmt.DEFAULT_HEADER + tomlkit.dumps(fmt._table(tomlkit.document(), fmt.to_doc(transcript))) == written
