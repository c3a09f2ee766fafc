"""A person's reply to a yes/no question, and to "Is that right?": a clear yes, a clear no, or not.

Pure functions of the words, no I/O. Two readings:

- :func:`yes_no` reads a yes or a no *at the start* of a line and returns what follows it:
  ``"No, this is my first time"`` is ``(False, "this is my first time")``; ``"yep, £150"`` is
  ``(True, "£150")``; a line that opens with neither is ``(None, line)``. The rest is for the
  caller to read (a value, or words to say back), never to drop.
- :func:`confirmation` reads the answer to a value read back ("Staff ID: AB1234. Is that
  right?"). Only a yes with nothing else to say is a yes: ``"yes"``, ``"yes, that's right"``.
  ``"no, it's CD5678"``, ``"the correct one is CD5678"``, ``"yes, but it is actually AB9999"`` and
  ``"right, 300"`` are corrections, their value the words after the lead-in (``CD5678``,
  ``AB9999``, ``300``); ``"no"`` (or ``"no, I don't have one"``) is a no; ``"maybe"`` or
  ``"yes but"`` are unclear (ask again); anything else is a value typed in place of the one
  shown (``"CD5678"``).

Every pattern here is a set of fixed phrases: no repetition is nested, so reading is linear
in the length of the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Confirmation", "confirmation", "yes_no"]

_YES = (
    "yes please|yes|yeah|yep|yup|yea|ya|aye|y|sure|correct|that's correct|that is correct|right|"
    "that's right|that is right|that's it|exactly|ok|okay|absolutely|definitely|certainly|indeed|"
    "affirmative|of course|true|yes it is|it is|i have|i do|i did|i am|we have|we do|we did"
)
_NO = (
    "no|nope|nah|n|not really|negative|false|wrong|incorrect|that's wrong|that is wrong|"
    "that's not right|that is not right|that's not it|not quite|no way|never|not at all|"
    "i haven't|i have not|i don't|i do not|i didn't|i did not|i'm not|i am not|"
    "we haven't|we have not|we don't|we didn't|it isn't|it is not|it's not|none|nothing|nil|neither"
)


def _alternation(phrases: str) -> str:
    # longest first, so "yes please" is read before "yes"; each phrase ends on a word boundary
    words = sorted(phrases.split("|"), key=len, reverse=True)
    return "|".join(re.escape(w).replace(r"\ ", " ") for w in words)


_LEAD = re.compile(rf"^\W*(?:({_alternation(_YES)})|({_alternation(_NO)}))(?![\w'])[\s,.;:!?-]*", re.IGNORECASE)
# What may follow a yes or a no without saying anything more.
_FILLER = frozenset(
    "please thanks thank you cheers sorry that's right that is right that's correct that is correct "
    "it is it's all good looks good go ahead fine perfect great i think so i believe so spot on "
    "that's it that is it yes yeah yep no nope correct right sure ok okay indeed so".split()
)
_FILLER_WORD = re.compile(r"[^\s,.;:!?()-]+")
# Words that open a correction: "but", "actually", "it's", "the correct one is", "it should be".
_CORRECTION = re.compile(
    r"^(?:but|actually|though|however|rather|instead|in fact|it'?s|it is|it was|that'?s|that is|"
    r"it should be|should be|it should read|make it|change it to|change that to|it needs to be|"
    r"the (?:correct|right|real|actual|proper) (?:one|value|answer|number|id|date|amount|address|name|ref|reference|figure)"
    r" (?:is|was|should be)|the (?:correct|right|real|actual|proper) \w+ (?:is|was|should be))(?![\w'])[\s,.:;-]*",
    re.IGNORECASE,
)
_UNSURE = re.compile(
    r"^\W*(?:maybe|perhaps|possibly|not sure|i'?m not sure|unsure|don'?t know|i don'?t know|dunno|no idea|"
    r"yes and no|kind of|sort of|i think so\?|hmm+|um+|er+)\W*$",
    re.IGNORECASE,
)
_FIRST_PERSON = re.compile(r"^(?:i|i'm|i've|i'd|i'll|we|we're|we've|my|our)(?![\w'])", re.IGNORECASE)


def _plain(text: str) -> str:
    return text.replace("\u2019", "'").replace("\u2018", "'").strip()


def yes_no(text: str) -> tuple[bool | None, str]:
    """The yes or no a line opens with (None when neither), and the rest of the line."""
    words = _plain(text)
    m = _LEAD.match(words)
    if m is None:
        return None, words
    return m.group(1) is not None, words[m.end() :].strip()


def _only_filler(text: str) -> bool:
    return all(w in _FILLER for w in _FILLER_WORD.findall(text.lower()))


def _without_lead_ins(text: str) -> str:
    """``text`` without the words that open a correction ("but it is actually AB9999" → "AB9999")."""
    while (m := _CORRECTION.match(text)) is not None and m.end() > 0:
        text = text[m.end() :]
    return text.strip().strip("\"'.,;:!? ").strip()


def _aside(rest: str) -> bool:
    """Words after a yes or no that tell something rather than give a value: no figure or
    address, and a sentence of its own ("I don't have one", "this is my first time")."""
    if any(ch.isdigit() or ch == "@" for ch in rest):
        return False
    return _FIRST_PERSON.match(rest) is not None or len(rest.split()) > 3


@dataclass(frozen=True, slots=True)
class Confirmation:
    """The answer to "Is that right?": ``kind`` is yes | no | correction | unclear | value.

    ``value``: for a correction, the words given instead (``CD5678``); for a value, the whole
    line (typed in place of the value shown); empty otherwise.
    """

    kind: str
    value: str = ""

    @property
    def yes(self) -> bool:
        return self.kind == "yes"


def confirmation(text: str) -> Confirmation:
    """How a person answered a value read back to them (see the module's docstring)."""
    words = _plain(text)
    if not words or _UNSURE.match(words):
        return Confirmation("unclear")
    answer, rest = yes_no(words)
    if answer is not None:
        if _only_filler(rest):
            return Confirmation("yes" if answer else "no")
        value = _without_lead_ins(rest)
        if value == rest.strip("\"'.,;:!? ") and _aside(rest):
            # "no, I don't have one", "No, this is my first time": a no (or a yes) with an aside
            return Confirmation("yes" if answer else "no")
        return Confirmation("correction", value) if value and not _only_filler(value) else Confirmation("unclear")
    value = _without_lead_ins(words)
    if value != words.strip().strip("\"'.,;:!? ").strip():
        return Confirmation("correction", value) if value else Confirmation("unclear")
    return Confirmation("value", words)
