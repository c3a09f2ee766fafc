"""Reading a natural answer: the values one line holds that can be placed with confidence.

At "Staff ID?", ``AB1234, dana@example.com, going to Leeds`` is three things: a Staff ID (the
token that fits the asked field's pattern), a work email (the only open field an email
address fits) and words that fit no question for sure. What is placed is taken; the rest is
said back as not used, never guessed (free text only ever goes to the question asked, and only
when nothing in the line answered that question already).

Pure functions of the words and the fields' kinds; :mod:`.planning` converts the values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
# A comma that separates parts of a line, not the thousands separator of "1,200".
_PARTS = re.compile(r",(?!\d{3}(?!\d))\s*")
_EDGE = "\"'()[]<>.,;:!?"


@dataclass(slots=True)
class Placed:
    """Values found for fields (raw text, for the field's parser) and the parts left unplaced."""

    values: dict[str, str] = field(default_factory=dict)
    leftover: list[str] = field(default_factory=list)


def split_labels(segment: str, labels: dict[str, str]) -> list[str]:
    """``segment`` cut before every ``Label:`` it holds (``labels``: lower-cased label or id →
    field id), so ``AB1234, Work email: dana@example.com`` becomes two parts."""
    if not labels or (":" not in segment and "=" not in segment):
        return [segment]
    names = "|".join(re.escape(name) for name in sorted(labels, key=len, reverse=True))
    starts = [m.start(1) for m in re.finditer(rf"(?:^|(?<=[\s,;]))({names})\s*[:=]", segment, re.IGNORECASE)]
    if not starts or starts == [0]:
        return [segment]
    cuts = ([0] if starts[0] != 0 else []) + starts + [len(segment)]
    parts = [segment[a:b].strip().rstrip(",").strip() for a, b in zip(cuts, cuts[1:])]
    return [re.sub(r"\s+and$", "", p) for p in parts if p]


def place(text: str, asked: str, kinds: dict[str, Any]) -> Placed | None:
    """The values in ``text`` that fit a field for sure: the token fitting the asked field's
    pattern or type, and tokens whose shape fits exactly one other open field (``kinds``: open
    field id → its kind, the asked field included). None when nothing could be placed that way:
    then the whole text is the answer to the asked field, as before."""
    parts = [p.strip() for p in _PARTS.split(text) if p.strip()]
    placed = Placed()
    remaining: list[str] = []
    for part in parts:
        for token in _tokens(part):
            target = _fit(token, asked, kinds, placed.values)
            if target is not None:
                placed.values[target] = token
                part = part.replace(token, " ", 1)
        part = " ".join(part.split()).strip(_EDGE + " ")
        if any(ch.isalnum() for ch in part):
            remaining.append(part)
    if not placed.values or (
        list(placed.values) == [asked] and not remaining and len(parts) == 1 and _whole(text) == placed.values[asked]
    ):
        return None  # nothing found, or the whole line is the answer: the usual path reads it
    if asked in placed.values:
        placed.leftover = remaining  # the question is answered: the rest is not guessed
    elif remaining:
        placed.values[asked] = ", ".join(remaining)  # free text, to the question asked only
    return placed


def _whole(text: str) -> str:
    return text.strip().strip(_EDGE + " ")


def _tokens(part: str) -> list[str]:
    """The words of ``part`` in order, edges trimmed (an email address as the address alone)."""
    out = []
    for word in part.split():
        email = _EMAIL.search(word)
        word = email.group(0) if email else word.strip(_EDGE)
        if word and word not in out:
            out.append(word)
    return out


def _fit(token: str, asked: str, kinds: dict[str, Any], taken: dict[str, str]) -> str | None:
    """The one field ``token``'s shape fits (the asked field first), or None."""
    asked_kind = kinds.get(asked)
    if asked not in taken and asked_kind is not None and _fits(token, asked_kind):
        return asked
    others = [
        f for f, kind in kinds.items() if f != asked and f not in taken and _distinct(kind) and _fits(token, kind)
    ]
    return others[0] if len(others) == 1 else None


def _distinct(kind: Any) -> bool:
    """A kind whose shape is telling enough to place a value in a field that was not asked."""
    return kind.name == "email" or bool(getattr(kind, "pattern", None))


def _fits(token: str, kind: Any) -> bool:
    pattern = getattr(kind, "pattern", None)
    if pattern:
        try:
            return re.fullmatch(pattern, token) is not None
        except re.error:
            return False
    if kind.name == "email":
        return _EMAIL.fullmatch(token) is not None
    return False
