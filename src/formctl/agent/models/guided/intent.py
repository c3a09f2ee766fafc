"""What the person is doing with a line, read before any value is: answering, asking back,
refusing or not knowing, deferring, or only making a remark.

Only an answer stores a value. "Why do you need my name?" is a question about the name, not a
name; "I don't have a phone at the moment" leaves an optional phone out; "can we come back to
that?" puts a question off. A line that holds a figure or an address is never read as a
refusal or a question alone: "not sure, maybe 45" gives 45, "Where do I find it? Oh, AB1234"
gives AB1234 (the question sentences are set aside, the rest is the answer).

Pure functions of the words (and the fields' names, to say which field a question is about);
every pattern here is linear in the length of the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from formctl.agent.models.guided.answers import declines

ANSWER, ASK, REFUSE, UNKNOWN, DEFER, ASIDE = "answer", "ask", "refuse", "unknown", "defer", "aside"


@dataclass(frozen=True, slots=True)
class Act:
    """What a line does. ``about``: the field it names (a question about the purpose), or None
    for the question asked; ``rest``: the words that may still hold answers (the line without
    its question sentences); ``why``: a question asking why the value is needed."""

    kind: str
    about: str | None = None
    rest: str = ""
    why: bool = False


# A sentence that asks something back even without a question mark.
_ASKING = re.compile(
    r"^(?:sorry,?\s+|um+,?\s+|er+,?\s+|hmm+,?\s+|wait,?\s+)?"
    r"(?:what (?:do|did) you mean|what does (?:that|this|it) mean|what(?:'s| is) (?:that|this|a|an|the)\b"
    r"|what counts\b|what kind of\b|what sort of\b|which one\b|i don'?t (?:understand|get (?:it|that|what))"
    r"|not sure what you mean|why (?:do|would|does) (?:you|it|the form) need|why\b|where (?:do|can|would|will) i find"
    r"|where(?:'s| is) (?:that|my|the)\b|how (?:do|can|would) i (?:find|know|get|work)|do i have to\b"
    r"|what should i put|what do i put|what am i supposed|what are you asking|pardon\b|come again\b|huh\b)",
    re.IGNORECASE,
)
_WHY = re.compile(r"\bwhy\b|\bwhat (?:do|would) you need\b|\bwhat'?s it for\b|\bdo i have to\b", re.IGNORECASE)
# Not knowing, or not having, the value asked for.
_UNKNOWN = re.compile(
    r"\b(?:i )?(?:don'?t|do not|dont) (?:know|remember|recall|have (?:it|one|that|a|an|any)\b)(?! (?:what|how|where|why|if|whether|who|when)\b)"
    r"|\b(?:not sure|no idea|dunno|can'?t remember|cannot remember|can'?t recall|i forget|forgotten"
    r"|haven'?t got (?:it|one|a|an|any)\b|have no\b|no clue|not certain|i'?m unsure|unsure)",
    re.IGNORECASE,
)
# Putting the question off, or asking to leave it.
_DEFER = re.compile(
    r"\b(?:come back to (?:it|that|this)|get back to you|(?:ask|do) (?:it|that|this|me) later|later on\b|for now\b"
    r"|(?:can|could|shall|may) (?:we|i|you) (?:skip|leave|pass|move on)|skip (?:it|that|this)|leave (?:it|that|this) (?:out|blank|for now)"
    r"|i'?ll (?:check|find out|dig it out)|need to (?:check|find|look it up))",
    re.IGNORECASE,
)
# A moment's pause: the answer is coming ("hang on, let me check").
_PAUSE = re.compile(
    r"^(?:(?:oh|um+|er+|ok|okay|right|sorry),?\s)?(?:hang on|hold on|one (?:moment|sec|second|minute)|just a (?:moment|sec|second|minute)"
    r"|bear with me|give me a (?:moment|sec|second|minute)|let me (?:check|find|look|see|have a look|think))\b",
    re.IGNORECASE,
)
# Having none of it: "no phone, sorry", "none at all", "not got one".
_NO_SUCH = re.compile(
    r"^(?:no|nope|nah|none|not got (?:one|any))\b(?!\s*(?:,\s*)?(?:thanks|thank you)\b)", re.IGNORECASE
)
# Past this many words a line tells something, whatever "I don't know" it holds.
_LONGEST_NOT_GIVEN = 14
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_QUESTION_START = re.compile(
    r"^(?:sorry,?\s+)?(?:what|why|where|how|which|who|when|is|are|do|does|did|can|could|should|would|will|shall|may|must)\b",
    re.IGNORECASE,
)
_QUESTION_WORD = re.compile(r"\b(?:what|why|where|how|which|mean|meaning)\b", re.IGNORECASE)
_MOVING_ON = re.compile(r"\b(?:skip|leave|pass|move on|come back|later)\b", re.IGNORECASE)


def read_act(words: str, names: dict[str, str]) -> Act:
    """What ``words`` do (``names``: lower-cased labels, ids and everyday names → field id).

    An answer is the default; a line with a figure or an address in it is an answer (or holds
    one), whatever else it says."""
    text = words.replace("\u2019", "'").strip()
    if not text:
        return Act(ASIDE)
    sentences = [s.strip() for s in _SENTENCE.split(text) if s.strip()]
    asking = [s for s in sentences if _asks(s)]
    if asking:
        rest = " ".join(s for s in sentences if s not in asking)
        about = named_field(" ".join(asking), names)
        if not rest or not _has_content(rest):
            return Act(ASK, about, why=any(_WHY.search(s) for s in asking))
        return Act(ANSWER, about, rest=rest)
    if _valued(text):
        return Act(ANSWER, rest=text)
    if _PAUSE.match(text):
        return Act(ASIDE, rest=text)
    about = named_field(text, names)
    if len(text.split()) > _LONGEST_NOT_GIVEN:
        return Act(ANSWER, rest=text)  # "My employer hasn't paid me and I don't know what to do." tells something
    if _DEFER.search(text):
        return Act(DEFER, about, rest=text)
    if declines(text):
        return Act(REFUSE, about, rest=text)
    if _UNKNOWN.search(text) or _NO_SUCH.match(text):
        return Act(UNKNOWN, about, rest=text)
    return Act(ANSWER, rest=text)


def _asks(sentence: str) -> bool:
    """Is this sentence a question put to the interviewer (not a value with a "?" after it)?"""
    if _valued(sentence):
        return False
    if _ASKING.match(sentence):
        return True
    if not sentence.rstrip().endswith("?"):
        return False
    # "can we skip it?" puts the question off: that is not a question to answer.
    if _MOVING_ON.search(sentence) and not re.search(r"\bwhy\b", sentence, re.IGNORECASE):
        return False
    # "Leeds, I think?" is an answer said unsure; a question starts as one or asks what or why.
    return _QUESTION_START.match(sentence) is not None or _QUESTION_WORD.search(sentence) is not None


def _valued(text: str) -> bool:
    """Does the text hold a figure or an address (so it gives a value, whatever else it says)?"""
    return any(ch.isdigit() for ch in text) or "@" in text


def _has_content(text: str) -> bool:
    return any(ch.isalnum() for ch in text)


def named_field(text: str, names: dict[str, str]) -> str | None:
    """The one field ``text`` names (the longest name found as whole words), or None."""
    folded = " " + " ".join(re.findall(r"[a-z0-9]+", text.lower().replace("'s ", " "))) + " "
    best: tuple[int, str] | None = None
    for name, field_id in names.items():
        key = " " + " ".join(re.findall(r"[a-z0-9]+", name.lower())) + " "
        if key.strip() and key in folded and (best is None or len(key) > best[0]):
            best = (len(key), field_id)
    return best[1] if best else None
