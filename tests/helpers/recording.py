"""Conversations recorded with the guided model, over the example forms or edited copies of them
(shared by the transcript tests and the guided model's odd-input tests)."""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path

from fixture_project import FORMS
from formctl import FormRegistry, FormRunner, MemoryAdapter
from formctl.agent.loop import ChatLoop
from formctl.agent.models.guided import GuidedModel
from formctl.transcripts.format import Transcript
from formctl.transcripts.record import Recorder

_modules = itertools.count()


def forms_registry(**edits: tuple[str, str]) -> FormRegistry:
    """The example forms from ``forms/``, each module loaded afresh with textual edits applied.

    ``edits`` maps a module name (``travel_claim``) to ``(old, new)``: a form author's change
    to a definition, made without touching the files the shipped transcripts replay against.
    """
    registry = FormRegistry()
    for form_id, module, attribute in (
        ("travel-claim", "travel_claim", "travel_claim"),
        ("client-intake", "client_intake", "client_intake"),
    ):
        source = (FORMS / f"{module}.py").read_text()
        if module in edits:
            old, new = edits[module]
            assert old in source, f"edit does not apply to {module}.py: {old!r}"
            source = source.replace(old, new)

        def load(source=source, attribute=attribute, module=module):
            spec = importlib.util.spec_from_loader(f"_edited_{module}_{next(_modules)}", loader=None)
            mod = importlib.util.module_from_spec(spec)
            exec(compile(source, f"{module}.py", "exec"), mod.__dict__)
            return getattr(mod, attribute)

        registry.register(form_id, name=form_id, description=form_id, load=load)
    return registry


def record(path: Path, registry, form_id: str, messages: list, subject: str = "dana") -> Transcript:
    """Record a conversation with the guided model, as ``formctl run --record`` does."""
    runner = FormRunner(MemoryAdapter(), registry=registry, subject=subject)
    model = GuidedModel(runner, form_id=form_id)
    rec = Recorder(
        path,
        form_id=form_id,
        form_version=registry.load(form_id).version,
        model=model.name,
        subject=subject,
        runner=runner,
    )
    loop = ChatLoop(runner, model, form_id=form_id, on_event=rec.event)
    for message in messages:
        if isinstance(message, dict):
            result = runner.resolve_checkpoint(**message)
            rec.host("resolve", result=result, **message)
        else:
            rec.person(message)
            loop.send(message)
    return rec.finish(runner)
