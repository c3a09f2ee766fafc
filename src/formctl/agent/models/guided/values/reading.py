"""One value read from a person's line: the value, where it was, how to say it, what else was said."""

from __future__ import annotations

import re
from dataclasses import dataclass

from formctl.json_types import JsonValue


@dataclass(frozen=True, slots=True)
class Reading:
    """A value read from a line of the person's words.

    ``value``: the JSON value for the field; None when the words say there is none ("nothing",
    "nope, no hotel": an optional field is left out). ``span``: where in the line it was read
    (start, end). ``said_as``: how to say it back ("Monday 6 April 2026", "£212.40").
    ``rest``: what else the line said, to be said back (never silently dropped). ``note``: how the
    value was reached when that is worth saying ('I read "the next day" as Friday 20 March 2026.').
    """

    value: JsonValue
    span: tuple[int, int]
    said_as: str
    rest: tuple[str, ...] = ()
    note: str | None = None

    @property
    def none(self) -> bool:
        return self.value is None


# Words that lead up to a value ("my mobile is", "booking ref is", "it's") and are not kept.
_LINKS = frozenset(
    "is was are were am it's its i'm im it be now of on at by to for from as about around roughly approximately "
    "exactly precisely just only say said : = - my our the a an number no. no ref reference i we took take went "
    "go got used use via with".split()
)
# What may follow a value without saying anything more ("if that helps", "thanks").
_FILLER = re.compile(
    r"^(?:if that helps|hope that helps|i think|i believe|thanks|thank you|cheers|please|or so|"
    r"roughly|approx(?:imately)?|in total|altogether|all in|that's all|that is all|ta|now|"
    r"yes|yeah|yep|yup|ok|okay|sure|right|well|so|um|erm?|oh|hi|hello|"
    r"miles?|mi|km|kilometres?|pounds?|quid|pence|p|dollars?|euros?|years?(?: old)?|yrs?(?: old)?|"
    r"(?:all )?in (?:pounds|total|all)|there|there and back|here|back|and back|that|it)$",
    re.IGNORECASE,
)
_EDGE = "\"'()[]<>.,;:!?-–— "
_WORDS = re.compile(r"[A-Za-z0-9'’]+|[:=]")


def _lead_in(text: str) -> bool:
    """Is ``text`` only the words that lead up to a value ("My mobile is", "booking ref is")?"""
    words = [w.lower().replace("’", "'") for w in _WORDS.findall(text)]
    if not words:
        return True
    return len(words) <= 6 and words[-1] in _LINKS


def _connector_free(text: str) -> str:
    text = text.strip(_EDGE)
    text = re.sub(r"^(?:and|but|so|then|also|plus)\b\s*", "", text, flags=re.IGNORECASE)
    text = re.sub(r"\s*\b(?:and|but|so|then)$", "", text, flags=re.IGNORECASE)
    return text.strip(_EDGE)


def around(text: str, spans: list[tuple[int, int]]) -> tuple[str, ...]:
    """What ``text`` says besides the values at ``spans``: the parts between them, less the
    words leading up to a value and fillers ("if that helps"). Each part keeps its own words."""
    cuts = sorted(spans)
    pieces, at = [], 0
    for start, end in cuts:
        pieces.append((text[at:start], True))
        at = max(at, end)
    pieces.append((text[at:], False))
    out: list[str] = []
    for piece, leads in pieces:
        clauses = [_connector_free(c) for c in re.split(r"[,;]|\.\s|\s[-–—]\s", " ".join(piece.split()))]
        if leads and clauses and _lead_in(clauses[-1]):
            clauses.pop()  # "..., my new mobile is" leads up to the value
        out.extend(c for c in clauses if any(ch.isalnum() for ch in c) and not _FILLER.match(c))
    return tuple(out)


def telling(parts: tuple[str, ...]) -> tuple[str, ...]:
    """The parts left beside a choice or a yes/no that say something of their own: a figure, an
    address, a name ("to Glasgow"), or a sentence ("I have moved house"). A few plain words ("sent
    me", "down", "all the same") only go with the answer given."""
    out = []
    for part in parts:
        words = part.split()
        named = any(w[:1].isupper() and w not in ("I", "I'm", "I've", "I'd", "I'll") for w in words[1:])
        explains = all(w.lower().strip(".,;:!?'\"") in _EXPLAINING for w in words)
        if any(ch.isdigit() or ch == "@" for ch in part) or named or (len(words) > 3 and not explains):
            out.append(part)
    return tuple(out)


# Words that only say how the answer came about ("told me about you", "sent me to you here",
# "found you through"): a part made of nothing else goes with the answer, however long.
_EXPLAINING = frozenset(
    "i i'm i've i'd me my you your us we he she they them it this that who which so and "
    "told tell tells telling sent send sends recommended recommends mentioned suggested referred pointed said "
    "says found find heard hear saw seen read came come coming across gave put passed on "
    "about of from through via at in by to for here there the a an service place you're all helped her him his "
    "mine could can would might help advice googled searched looked up".split()
)
