"""A conversation restored from disk: the question its last reply asked, and the fields left out.

A fresh model (``formctl resume``) has not asked anything itself, but the person has seen the
last reply: a bare answer is for the question shown last, always (docs/guided.md). So the
question is read back from that reply's own words (a question line starts with the field's
label, as :func:`~formctl.agent.models.guided.phrasing.question` writes it), and the optional
fields the conversation left out ("Skipped X.", "Left out X.") stay left out.
"""

from __future__ import annotations

import re

from formctl.agent.models.base import content_blocks
from formctl.agent.models.guided.phrasing import KEEP_OFFER
from formctl.agent.models.guided.questions import askable
from formctl.agent.models.guided.state import GuidedState, Snapshot
from formctl.json_types import JsonObject


def assistant_texts(messages: list[JsonObject]) -> list[str]:
    """The text of every assistant turn, oldest first."""
    out = []
    for message in messages:
        if message.get("role") == "assistant":
            texts = [b.get("text", "") for b in content_blocks(message.get("content")) if b.get("type") == "text"]
            if any(texts):
                out.append("\n".join(texts))
    return out


def asked_in(text: str, snap: Snapshot) -> str | None:
    """The field whose question ``text`` (one reply) ends on, or None when it asked none."""
    fields = sorted(snap.compiled.fields, key=lambda f: len(f.label), reverse=True)
    for line in reversed([ln.strip() for ln in text.splitlines() if ln.strip()]):
        for field in fields:
            label = field.label
            if line.startswith(label) and line[len(label) : len(label) + 1] in ("?", " "):
                rest = line[len(label) :]
                if rest.startswith("?") or rest.startswith(" — "):
                    return str(field.id)
        return None  # the reply's last line is not a question: it asked nothing
    return None


def left_out_in(texts: list[str], snap: Snapshot) -> set[str]:
    """The optional fields the conversation said it left out."""
    by_label = {f.label: f.id for f in snap.compiled.fields if not f.required}
    out: set[str] = set()
    for text in texts:
        for m in re.finditer(r"(?:Skipped|Left out) ([^.\n]+)\.", text):
            field_id = by_label.get(m.group(1).strip())
            if field_id is not None:
                out.add(field_id)
    return out


def restore(state: GuidedState, messages: list[JsonObject], snap: Snapshot) -> None:
    """Take up a restored conversation: the question its last reply asked becomes the one asked
    (at the instance's version now), and what it left out stays left out. A conversation whose
    last reply asked no question (a read-back, a wait) is left to the form's own order."""
    texts = assistant_texts(messages)
    if not texts:
        return
    asked = asked_in(texts[-1], snap)
    if asked is None:
        return
    state.skipped |= left_out_in(texts, snap) - {asked}
    state.asked = asked
    # Still open: asked at this version. Answered since (a host's write): the form changed since
    # it was asked, so a bare answer to it is not used for another question.
    state.asked_at = (snap.instance.id, snap.instance.version) if askable(snap, asked) else None
    state.asked_known = True
    if KEEP_OFFER in texts[-1]:  # a refused correction's offer stands: "keep" puts the earlier answer back
        state.keep_offer = (snap.instance.id, asked)
