"""One conversation with the guided model through the real chat loop, over the example forms
(shared by the guided model's tests and the review tests)."""

from __future__ import annotations

import json
from typing import Any

from fixture_project import REGISTRY as REGISTRY_TOML
from formctl import FormRegistry, FormRunner, MemoryAdapter
from formctl.agent.loop import ChatLoop
from formctl.agent.models.guided import GuidedModel

WRITES = {"start", "fill", "revise", "retract", "undo", "redo", "abandon", "resolve_checkpoint", "reopen"}


class ReadOnlyRunner:
    """The runner the model is given: reads pass through, and a direct write fails the test.

    Every write must reach the store through a tool call, so it shows in the transcript.
    """

    def __init__(self, runner: FormRunner) -> None:
        self._runner = runner

    def __getattr__(self, name: str) -> Any:
        if name in WRITES:
            raise AssertionError(f"the guided model called runner.{name}() directly instead of through a tool")
        return getattr(self._runner, name)


class Chat:
    """One conversation: the real ChatLoop driving a GuidedModel over a fresh in-memory store."""

    def __init__(self, form_id: str | None, *, adapter: Any = None, subject: str = "dana") -> None:
        registry = FormRegistry.from_toml(REGISTRY_TOML)
        self.runner = FormRunner(adapter or MemoryAdapter(), registry=registry, subject=subject)
        self.model = GuidedModel(ReadOnlyRunner(self.runner), form_id=form_id)
        self.loop = ChatLoop(self.runner, self.model, form_id=form_id)
        self.calls: list[dict[str, Any]] = []
        self.results: list[dict[str, Any]] = []

    def say(self, text: str) -> str:
        start = len(self.loop.messages)
        turn = self.loop.send(text)
        assert turn.error is None, turn.error
        new = self.loop.messages[start:]
        self.calls = [b for m in new if m["role"] == "assistant" for b in m["content"] if b["type"] == "tool_use"]
        self.results = [
            json.loads(b["content"])
            for m in new
            if m["role"] == "user"
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"
        ]
        return turn.text

    @property
    def tools(self) -> list[tuple[str, dict[str, Any]]]:
        """The calls made, without their quotes (every value is quoted with the person's line:
        ``quotes`` below, and the quote tests, check those)."""
        return [(c["name"], {k: v for k, v in c["input"].items() if k != "quotes"}) for c in self.calls]

    @property
    def quotes(self) -> dict[str, str]:
        return {k: v for c in self.calls for k, v in (c["input"].get("quotes") or {}).items()}

    def values(self) -> dict[str, Any]:
        from formctl.forms.validate import to_jsonable

        _, _, ev = self.runner.evaluation()
        return {k: to_jsonable(v) for k, v in ev.values.items() if v is not None}

    def instance(self):
        return self.runner.open_instance(self.loop.instance_id)
