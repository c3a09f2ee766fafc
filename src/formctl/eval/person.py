"""The simulated person of an eval run: someone who knows only their persona, never the form.

Two of them, behind one interface (:class:`SimulatedPerson`):

- :class:`ScriptedPerson`: deterministic. It reads the model's newest question, finds the
  fact (or facts, for "your name and staff ID?") whose topic words the question uses, and
  types what the persona says about it (the next line each time it is asked again). It reads the chat's words only, as a person would:
  no tool results, no field ids. Used in CI and with the guided model.
- :class:`ModelPerson`: any configured chat model, prompted with the persona alone
  (:meth:`~formctl.eval.scenario.Persona.describe`), playing the person's side.

Both also answer formctl's own questions (a value the model wrote that the person's words do
not hold: "Work email: dana@example.com. Is that right?").
"""

from __future__ import annotations

import re
from typing import Protocol

from formctl.agent.models.base import ChatModel, ModelRequest
from formctl.agent.usage import Usage
from formctl.errors import ModelError
from formctl.eval.scenario import Fact, Persona
from formctl.json_types import JsonObject

__all__ = ["ModelPerson", "ScriptedPerson", "SimulatedPerson", "match_fact"]


class SimulatedPerson(Protocol):
    name: str

    def opening(self) -> str:
        """The first message of the conversation."""
        ...

    def reply(self, model_text: str) -> str | None:
        """The person's next message after the model said ``model_text``; None when they leave."""
        ...

    def answer(self, question: str) -> str | None:
        """Their answer to formctl's own question about a value (None: no answer)."""
        ...

    def after_wait(self) -> str | None:
        """What they say once a host has decided on a wait (None: they leave)."""
        ...


_WORD = re.compile(r"[a-z0-9]+")
# "Shall I send it?", "Ready to submit?", "Should I go ahead and submit the claim?"
_READ_BACK = re.compile(r"\b(send|submit)\w*\b[^?]*\?|\?[^?]*\b(send|submit)\w*\b", re.I)
# "Does everything look right?", "Is all of that correct?": a read-back when it repeats their answers.
_CHECK = re.compile(r"\b(correct|right|accurate|look(s)? good|confirm)\b", re.I)
_DONE = re.compile(r"\b(sent|submitted|complete[d]?|all done|finished)\b", re.I)


def _tokens(text: str) -> list[str]:
    return [_stem(w) for w in _WORD.findall(text.lower())]


def _stem(word: str) -> str:
    """Plurals and a few endings away ("costs" → "cost", "emails" → "email"): topics match either form."""
    for end in ("ies", "es", "s"):
        if len(word) > 4 and word.endswith(end) and not word.endswith("ss"):
            return word[: -len(end)] + ("y" if end == "ies" else "")
    return word


def _has_phrase(tokens: list[str], phrase: list[str]) -> bool:
    n = len(phrase)
    return n > 0 and any(tokens[i : i + n] == phrase for i in range(len(tokens) - n + 1))


_BULLET = re.compile(r"^(?:[-*•]|\d+[.)])\s+")


def question_of(text: str) -> tuple[str, str]:
    """The question in a model message and the words around it: its last line with a question
    mark (else its last line), as (the sentence asking, the whole line). A question that is a
    list ("Could you tell me:\n- your name\n- your staff ID?") is its items, and the line that
    introduces it is the words around them."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    asked = [i for i, ln in enumerate(lines) if "?" in ln]
    if not asked:
        line = lines[-1] if lines else ""
        return line, line
    at = asked[-1]
    last = lines[at]
    if _BULLET.match(last):
        start = at
        while start > 0 and _BULLET.match(lines[start - 1]):
            start -= 1
        items = " ".join(_BULLET.sub("", ln) for ln in lines[start : at + 1])
        return items, " ".join(lines[max(0, start - 1) : at + 1])
    parts = re.split(r"(?<=[.!?])\s+", last)
    return next(p for p in reversed(parts) if "?" in p), last


def match_fact(facts: tuple[Fact, ...], question: str) -> int | None:
    """The fact a question is about: the one whose topic phrases the question uses most
    (longer phrases weigh more; the first in the persona wins a tie), or None."""
    tokens = _tokens(question)
    best, best_score = None, 0
    for index, fact in enumerate(facts):
        score = sum(len(p) for p in (_tokens(t) for t in fact.topic) if _has_phrase(tokens, p))
        if score > best_score:
            best, best_score = index, score
    return best


def facts_asked(facts: tuple[Fact, ...], question: str, limit: int = 4) -> list[int]:
    """Every fact a question asks about ("your name and staff ID?"), in the order the question
    names them, at most ``limit``. A phrase inside a longer matched phrase of another fact
    ("date" in "return date") does not count for that other fact."""
    tokens = _tokens(question)
    found: list[tuple[int, int, int]] = []  # (position, -length, fact)
    for index, fact in enumerate(facts):
        places = [
            (i, len(p))
            for p in (_tokens(t) for t in fact.topic)
            for i in range(len(tokens) - len(p) + 1)
            if p and tokens[i : i + len(p)] == p
        ]
        if places:
            at, length = min(places, key=lambda x: (x[0], -x[1]))
            found.append((at, -length, index))
    found.sort()
    taken: list[int] = []
    spans: list[tuple[int, int]] = []
    for at, neg, index in found:
        end = at - neg
        if any(a <= at and end <= b and (a, b) != (at, end) for a, b in spans):
            continue
        spans.append((at, end))
        taken.append(index)
    return taken[:limit]


def _fold(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


READBACK_REPEATS = 2  # times a person says their change again when a read-back does not show it
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def changed_value(change: str) -> str | None:
    """The value a read-back change ends with, when it is written "Label: value" ("Actually the
    total was 190. Total claimed: 190" → "190"); None for a change in other words ("The return
    date's wrong: I came back on 5 March, not the 4th": more than a value follows the colon)."""
    if ":" not in change:
        return None
    value = change.rsplit(":", 1)[1].strip().rstrip(".!")
    if not value or "," in value or len(value.split()) > 4:
        return None
    return value


def _shows(text: str, value: str) -> bool:
    """Whether a message shows ``value``: as a number ("190" in "Total: £190.00"), else as words."""
    try:
        wanted = float(value.replace(",", ""))
    except ValueError:
        folded = _fold(value)
        return bool(folded) and f" {folded} " in f" {_fold(text)} "
    return any(_as_float(n) == wanted for n in _NUMBER.findall(text))


def _as_float(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


class ScriptedPerson:
    """A deterministic person acting out a persona from its facts (see the module docstring)."""

    name = "scripted"

    def __init__(self, persona: Persona) -> None:
        self.persona = persona
        self.asked: dict[int, int] = {}  # fact index -> how many times it was asked
        self._pending: list[str] = []  # messages they mean to send unasked (a self-correction)
        self._changed = 0  # how many times they said their read-back change
        self._answered: str | None = None  # the read-back they first answered with it (folded)

    def opening(self) -> str:
        return self.persona.opening

    def after_wait(self) -> str:
        return self.persona.after_wait

    def reply(self, model_text: str) -> str | None:
        if self._pending:
            return self._pending.pop(0)
        question, line = question_of(model_text)
        if _READ_BACK.search(line) or (_CHECK.search(question) and self._values_in(model_text) >= 2):
            return self._read_back(model_text)
        # The sentence that asks first; the help around it ("Optional: say skip to leave it out")
        # only when the question itself names nothing they know.
        asked = facts_asked(self.persona.facts, question)
        if len(asked) > 1:  # "What's your name and staff ID?": both, in the order asked
            return ", ".join(self._say(i) for i in asked)
        index = match_fact(self.persona.facts, question)
        if index is None:
            index = match_fact(self.persona.facts, line)
        if index is not None:
            return self._say(index)
        if "?" not in question:
            if _DONE.search(model_text):
                return None  # nothing asked of them, and the model says it is done: they leave
            return self.persona.nudge
        if re.search(r"\bsay \W?skip\b", line, re.I):
            return "skip"  # the model says how to pass over a question they have no answer to
        return self.persona.unknown

    def _read_back(self, model_text: str) -> str:
        """Their answer to a read-back: the ``readback_change`` the first time; "yes" once a
        read-back shows it applied; the change again when it does not, at most
        :data:`READBACK_REPEATS` times, then "no": never "yes" to a read-back missing their change.

        Applied: the read-back shows the value a "Label: value" change ends with (numbers as
        numbers); for a change in other words, the read-back is not the one they answered."""
        change = self.persona.readback_change
        if not change:
            return "yes"
        if self._changed == 0 or self._answered is None:
            self._changed, self._answered = 1, _fold(model_text)
            return change
        wanted = changed_value(change)
        applied = _shows(model_text, wanted) if wanted is not None else _fold(model_text) != self._answered
        if applied:
            return "yes"
        if self._changed > READBACK_REPEATS:
            return "no"
        self._changed += 1
        return change

    def _values_in(self, text: str) -> int:
        """How many of their facts' values a message repeats (a read-back repeats several)."""
        folded = f" {_fold(text)} "
        return sum(1 for f in self.persona.facts if _fold(f.final) and f" {_fold(f.final)} " in folded)

    def _say(self, index: int) -> str:
        fact = self.persona.facts[index]
        n = self.asked.get(index, 0)
        self.asked[index] = n + 1
        if n == 0 and fact.correction:
            self._pending.append(fact.correction)
        if n >= len(fact.says) and fact.value:
            # Asked again after saying all they had to say: a person told their answer could not
            # be used types the bare value, as they would to a form.
            return fact.value
        return fact.says[min(n, len(fact.says) - 1)]

    def answer(self, question: str) -> str | None:
        """formctl asks about a value their words do not hold: "yes" if it is what their facts
        say, else a correction as people say one ("No, it's dana@example.org", which formctl
        reads as the value given: forms/replies.py); "no" when they know nothing about it."""
        asked = re.sub(r'^You said "[^"]*"\.\s*', "", question)
        index = match_fact(self.persona.facts, asked)
        if index is None:
            return "no"
        fact = self.persona.facts[index]
        shown = re.search(r":\s*(.+?)\.\s*Is that right\?", asked)
        if shown and any(_fold(shown.group(1)) and _fold(shown.group(1)) in _fold(w) for w in fact.words):
            return "yes"
        return f"No, it's {fact.final}"


class ModelPerson:
    """A chat model playing the persona (prompted with it alone; it sees the chat's words only)."""

    def __init__(self, persona: Persona, model: ChatModel, *, max_tokens: int = 300) -> None:
        self.persona = persona
        self.model = model
        self.name = getattr(model, "name", "model")
        self.max_tokens = max_tokens
        self.messages: list[JsonObject] = []
        self.usage = Usage()
        self.system = persona.describe()

    def opening(self) -> str:
        self.messages.append({"role": "user", "content": "(The chat opens. Say hello.)"})
        self.messages.append({"role": "assistant", "content": self.persona.opening})
        return self.persona.opening

    def after_wait(self) -> str | None:
        return self._say("(Some time passes: the approval has been decided.)")

    def reply(self, model_text: str) -> str | None:
        said = self._say(model_text or "(no reply)")
        if said is None or _fold(said) in ("bye", "goodbye", "bye bye"):
            return None
        return said

    def answer(self, question: str) -> str | None:
        return self._say(f"(The form asks you directly) {question}")

    def _say(self, heard: str) -> str | None:
        if self.messages and self.messages[-1]["role"] == "user":
            self.messages[-1] = {"role": "user", "content": f"{self.messages[-1]['content']}\n\n{heard}"}
        else:
            self.messages.append({"role": "user", "content": heard})
        request = ModelRequest(system=self.system, tools=[], messages=list(self.messages), max_tokens=self.max_tokens)
        try:
            reply = self.model.respond(request)
        except ModelError:
            return None
        self.usage.add(reply.usage)
        text = reply.text.strip()
        if not text:
            return None
        self.messages.append({"role": "assistant", "content": text})
        return text
