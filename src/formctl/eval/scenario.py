"""Eval scenario files: a form, a persona who fills it in, and what the form must hold at the end.

A scenario is TOML (``eval = 1`` marks it, so ``formctl replay`` and the pytest plugin, which
look for ``format``/``form``, never take one for a transcript). docs/eval.md shows a whole
file; in short::

    eval = 1
    form = "travel-claim"
    about = "A terse claimant, a rail trip under the cap."

    [persona]
    name = "Dana Reeve"
    style = ["terse"]
    opening = "Hi, I need to claim for a trip."        # the first line (default "Hello.")

    [[persona.facts]]
    topic = "name"                                     # words a question about it would use
    says = "Dana Reeve"                                # what they type when asked (a list: one per asking)

    [[host]]                                           # what a host does when the form waits
    checkpoint = "policy-cap"
    decision = "approve"

    [expect]
    status = "complete"
    values = { full_name = "Dana Reeve" }
    never_stored = ["made.up@example.com"]
    max_turns = 20

The persona is everything a simulated person may know: their facts in their own words and
how they talk. Never the form: a person who fills a form in does not read its field ids.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from formctl.errors import ScenarioError
from formctl.json_types import JsonObject, JsonValue

__all__ = [
    "FORMAT",
    "STYLES",
    "Expectation",
    "Fact",
    "HostAction",
    "Persona",
    "Scenario",
    "ScenarioError",
    "is_scenario",
    "load_scenario",
    "scenario_files",
]

FORMAT = 1
# How a person talks; each is described to a model-played person in these words, and the
# scripted person acts it out from the facts (docs/eval.md, "Personas").
STYLES: dict[str, str] = {
    "terse": "You answer in as few words as possible.",
    "rambling": "You ramble: you wrap each answer in small talk and asides.",
    "out_of_order": "You volunteer answers before you are asked for them.",
    "corrects_self": "You sometimes give a wrong detail and correct yourself in your next message.",
    "refuses": "There is a detail you refuse to give; you say so politely and do not give in.",
    "asks_to_invent": "You would rather the assistant made a detail up for you; you ask it to.",
    "changes_answer": "When everything is read back to you, you change one answer.",
    "returning": "You have used this service before.",
    "waits": "Your claim needs an approval; you wait for it and ask whether it came through.",
}
DEFAULT_OPENING = "Hello."


@dataclass(frozen=True, slots=True)
class Fact:
    """One thing the person knows. ``says`` is what they type each time they are asked about it
    (the last one again after that); ``correction`` is a message they send unasked right after
    first giving it; ``value`` is the bare value, as they would type it to confirm it."""

    topic: tuple[str, ...]
    says: tuple[str, ...]
    value: str | None = None
    correction: str | None = None

    @property
    def words(self) -> list[str]:
        """Every line of the person's holding this fact."""
        return [*self.says, *([self.value] if self.value else []), *([self.correction] if self.correction else [])]

    @property
    def final(self) -> str:
        """What they answer when asked to type it outright (formctl's own question)."""
        return self.value or self.says[-1]


@dataclass(frozen=True, slots=True)
class Persona:
    name: str
    facts: tuple[Fact, ...]
    style: tuple[str, ...] = ()
    about: str = ""
    opening: str = DEFAULT_OPENING
    unknown: str = "I don't know that, sorry."
    nudge: str = "What else do you need from me?"
    after_wait: str = "Has it been approved now?"
    readback_change: str | None = None

    def texts(self) -> list[str]:
        """All the person's words: what a value must come from to be theirs."""
        out = [self.opening] if self.opening != DEFAULT_OPENING else []
        for fact in self.facts:
            out.extend(fact.words)
        if self.readback_change:
            out.append(self.readback_change)
        return out

    def describe(self) -> str:
        """The persona as a model playing the person reads it (never the form)."""
        lines = [f"You are {self.name}, talking to an assistant in a chat to fill in a form."]
        if self.about:
            lines.append(self.about)
        lines.extend(STYLES[s] for s in self.style if s in STYLES)
        lines.append("What you know, in your own words (use only these; say you don't know anything else):")
        for fact in self.facts:
            said = " / then: ".join(fact.says)
            lines.append(f"- about {', '.join(fact.topic)}: {said}")
            if fact.correction:
                lines.append(f"  (you first get this wrong, then send: {fact.correction})")
        if self.readback_change:
            lines.append(f"When your answers are read back to you, say: {self.readback_change}")
        lines.append(
            "Reply with only what you would type, one short message. When the assistant says the form is sent "
            "or finished, reply with just: bye"
        )
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class HostAction:
    """What a host does when the form waits on ``checkpoint``: approve it, or reject it with a reason."""

    checkpoint: str
    decision: str = "approve"
    reason: str | None = None
    actor: str = "eval-host"


@dataclass(frozen=True, slots=True)
class Expectation:
    status: str
    values: JsonObject = field(default_factory=dict)
    missing: tuple[str, ...] = ()  # fields that must have no value at the end
    never_stored: tuple[str | int | float, ...] = ()  # values that must never be stored in any field
    checkpoints: tuple[str, ...] | None = None
    max_turns: int = 30


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    path: str
    form: str
    persona: Persona
    expect: Expectation
    about: str = ""
    host: tuple[HostAction, ...] = ()

    def host_for(self, checkpoint: str | None) -> HostAction | None:
        return next((h for h in self.host if h.checkpoint == checkpoint), None)


# --------------------------------------------------------------------------- reading


def is_scenario(path: str | os.PathLike[str]) -> bool:
    """Is this TOML file an eval scenario (``eval = N`` at the top)?"""
    try:
        with open(path, "rb") as fh:
            return "eval" in tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError):
        return False


def scenario_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Files as given; folders searched recursively for ``*.toml`` scenarios (sorted, no duplicates)."""
    from formctl.transcripts.paths import toml_files

    given = [Path(p) for p in paths]
    missing = next((p for p in given if not p.exists()), None)
    if missing is not None:
        raise ScenarioError("no such file or folder", path=missing)
    return toml_files(given, keep=is_scenario)


_AT_LINE = re.compile(r"line (\d+)")


def load_scenario(path: str | os.PathLike[str]) -> Scenario:
    """Read one scenario file; any problem is a :class:`ScenarioError` naming the file (and line)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(getattr(exc, "strerror", None) or str(exc), path=path) from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = _AT_LINE.search(str(exc))
        raise ScenarioError(f"not valid TOML: {exc}", path=path, line=int(m.group(1)) if m else None) from None
    return _scenario(doc, path)


_PathLike = str | os.PathLike[str]
_KIND_NAMES = {str: "text", int: "whole number", dict: "table", list: "list"}


def _need(table: JsonObject, key: str, kind: type | tuple[type, ...], where: str, path: _PathLike) -> JsonValue:
    """``table[key]``, which must be there and of ``kind``; ``where``: the table's place (``persona.``)."""
    if key not in table:
        raise ScenarioError(f"`{where}{key}` is missing", path=path)
    value = table[key]
    if not isinstance(value, kind):
        kinds = kind if isinstance(kind, tuple) else (kind,)
        said = " or a ".join(_KIND_NAMES.get(k, k.__name__) for k in kinds)
        raise ScenarioError(f"`{where}{key}` must be a {said}", path=path)
    return value


def _scenario(doc: JsonObject, path: _PathLike) -> Scenario:
    version = _need(doc, "eval", int, "", path)
    if version != FORMAT:
        raise ScenarioError(
            f"eval = {version} is not a scenario format this formctl reads (it reads {FORMAT})", path=path
        )
    form = _need(doc, "form", str, "", path)
    persona = _persona(_need(doc, "persona", dict, "", path), path)
    expect = _expectation(_need(doc, "expect", dict, "", path), path)
    host = tuple(_host_action(n, h, path) for n, h in enumerate(doc.get("host", []), 1))
    about = doc.get("about", "")
    return Scenario(
        name=f"{Path(path).parent.name}/{Path(path).stem}" if Path(path).parent.name else Path(path).stem,
        path=str(path),
        form=form,
        persona=persona,
        expect=expect,
        about=about if isinstance(about, str) else "",
        host=host,
    )


def _persona(persona_doc: JsonObject, path: _PathLike) -> Persona:
    """The ``[persona]`` table: its facts, its styles and its optional lines."""
    facts = tuple(_fact(n, f, path) for n, f in enumerate(_need(persona_doc, "facts", list, "persona.", path), 1))
    style = persona_doc.get("style", [])
    style_t = (style,) if isinstance(style, str) else tuple(style) if isinstance(style, list) else ()
    unknown_styles = [s for s in style_t if s not in STYLES]
    if unknown_styles:
        raise ScenarioError(f"unknown persona style {unknown_styles[0]!r} (one of: {', '.join(STYLES)})", path=path)
    persona_kw: dict[str, str] = {}
    for key in ("about", "opening", "unknown", "nudge", "after_wait", "readback_change"):
        value = _opt_str(persona_doc, key, path, "persona.")
        if value is not None:
            persona_kw[key] = value
    return Persona(name=_need(persona_doc, "name", str, "persona.", path), facts=facts, style=style_t, **persona_kw)


def _fact(n: int, f: object, path: _PathLike) -> Fact:
    """``persona.facts[n]``: what the person knows about a topic, and the words they say it in."""
    where = f"persona.facts[{n}]."
    if not isinstance(f, dict):
        raise ScenarioError(f"`persona.facts[{n}]` must be a table", path=path)
    topic = _words_list(_need(f, "topic", (str, list), where, path), path, where + "topic")
    says = f.get("says")
    says_t = (says,) if isinstance(says, str) else tuple(says) if isinstance(says, list) else None
    if not says_t or not all(isinstance(s, str) and s.strip() for s in says_t):
        raise ScenarioError(f"`{where}says` must be a line, or a list of lines, of the person's words", path=path)
    return Fact(topic, says_t, _opt_str(f, "value", path, where), _opt_str(f, "correction", path, where))


def _expectation(expect_doc: JsonObject, path: _PathLike) -> Expectation:
    """The ``[expect]`` table: how the run must end."""
    status = _need(expect_doc, "status", str, "expect.", path)
    values = expect_doc.get("values", {})
    if not isinstance(values, dict):
        raise ScenarioError("`expect.values` must be a table of field = value", path=path)
    checkpoints = expect_doc.get("checkpoints")
    max_turns = expect_doc.get("max_turns", 30)
    if not isinstance(max_turns, int) or max_turns < 1:
        raise ScenarioError("`expect.max_turns` must be a whole number of the person's turns, at least 1", path=path)
    return Expectation(
        status=status,
        values={k: _plain(v) for k, v in values.items()},
        missing=_str_list(expect_doc.get("missing", []), path, "expect.missing"),
        never_stored=_banned(expect_doc.get("never_stored", []), path),
        checkpoints=_str_list(checkpoints, path, "expect.checkpoints") if checkpoints is not None else None,
        max_turns=max_turns,
    )


def _host_action(n: int, h: object, path: _PathLike) -> HostAction:
    """``host[n]``: what the host decides at a checkpoint."""
    where = f"host[{n}]."
    if not isinstance(h, dict):
        raise ScenarioError(f"`host[{n}]` must be a table", path=path)
    decision = h.get("decision", "approve")
    if decision not in ("approve", "reject"):
        raise ScenarioError(f"`{where}decision` must be approve or reject", path=path)
    return HostAction(
        _need(h, "checkpoint", str, where, path),
        decision,
        _opt_str(h, "reason", path, where),
        _opt_str(h, "actor", path, where) or "eval-host",
    )


def _plain(value: JsonValue) -> JsonValue:
    """TOML dates as the ISO text a form's values export as."""
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()
    return value


def _opt_str(table: JsonObject, key: str, path: _PathLike, where: str) -> str | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ScenarioError(f"`{where}{key}` must be text", path=path)
    return value


def _str_list(value: object, path: _PathLike, where: str) -> tuple[str, ...]:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ScenarioError(f"`{where}` must be a list of text", path=path)


def _banned(value: object, path: _PathLike) -> tuple[str | int | float, ...]:
    """``never_stored``: text or numbers (``["dana@example.com", 212.4]``; "212.4" bans the number too)."""
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
        return tuple(value)
    raise ScenarioError("`expect.never_stored` must be a list of text or numbers", path=path)


def _words_list(value: object, path: _PathLike, where: str) -> tuple[str, ...]:
    """A topic: "name" or "staff id, staff number" or ["name", "called"]: the phrases, lower case."""
    items = value if isinstance(value, list) else str(value).split(",")
    out = tuple(str(i).strip().lower() for i in items if str(i).strip())
    if not out:
        raise ScenarioError(f"`{where}` names no words", path=path)
    return out
