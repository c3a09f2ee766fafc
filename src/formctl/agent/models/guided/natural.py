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
from typing import TYPE_CHECKING

from formctl.agent.models.guided.values.shapes import token_fitting

if TYPE_CHECKING:
    from formctl.agent.models.guided.values.kinds import Kind


_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
# A comma that separates parts of a line, not the thousands separator of "1,200".
_PARTS = re.compile(r",(?!\d{3}(?!\d))\s*")
_EDGE = "\"'()[]<>.,;:!?"


# Words that take back what was just said and give what was meant instead: "Leeds, no wait, York",
# "Dana Reeve, sorry I mean Dana Rees", "5 March 2026 - make that 6 March 2026".
_TAKEN_BACK = re.compile(
    r"(?:^|(?<=[\s,;.…–—-]))(?:no,?\s+wait|wait,?\s+no|sorry,?\s+(?:i\s+mean|i\s+meant|no)|no,?\s+sorry"
    r"|i\s+mean|i\s+meant|make\s+(?:that|it)|or\s+rather|scratch\s+that|correction|oops)\b[\s,:;.…–—-]*",
    re.IGNORECASE,
)
_MEANT_BEFORE = 6  # the most words a value taken back has ("Leeds", "5 March 2026"), not a sentence
_MEANT_AFTER = 12


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


def meant(text: str) -> str:
    """The answer a line gives after taking back what it said first ("Leeds, no wait, York" is
    York), or the line as it is. Only words that say so take a value back ("no wait", "I mean",
    "make that", "or rather", "scratch that", "correction", "oops"), and only a value of a few
    words: a sentence with "I mean" in it is left whole. Such words opening the line are not
    part of the answer ("Sorry, I mean Dana Reeve")."""
    last = None
    for m in _TAKEN_BACK.finditer(text):
        last = m
    if last is None:
        return text
    before, after = text[: last.start()], text[last.end() :].strip()
    if not any(ch.isalnum() for ch in after) or len(after.split()) > _MEANT_AFTER:
        return text
    if any(ch.isalnum() for ch in before) and len(before.split()) > _MEANT_BEFORE:
        return text
    return after  # also when nothing stands before the words: "Sorry, I mean Dana Reeve"


def place(
    text: str, asked: str, kinds: dict[str, Kind], others: frozenset[str] = frozenset(), *, alone: bool = True
) -> Placed | None:
    """The values in ``text`` that fit a field for sure: the token fitting the asked field's
    pattern or type, and tokens whose shape fits exactly one other open field (``kinds``: open
    field id → its kind, the asked field included). None when nothing could be placed that way:
    then the whole text is the answer to the asked field, as before.

    Free text (the asked field has no pattern) is taken only as the person wrote it, never
    assembled from pieces: one part of the line, its lead-in ("I'm", "my name is") left out. A
    line whose other parts say other things (figures, an address, another question's name:
    ``others``, lower-cased labels and ids) gives the asked field its first part when that is
    plain words, and the rest is said back as not used; when the first part is not plain, nothing
    is taken and the person is asked again.

    A chatty line (:func:`_chatty`: several sentences, a greeting or an apology before the answer,
    or other answers beside it: ``alone`` is False when the line also held ``Label: value``
    parts) gives free text only from its first sentence, and only when that reads as a value
    rather than a remark about something (:func:`_plain_value`).
    """
    parts = [p.strip() for p in _PARTS.split(text) if p.strip()]
    placed = Placed()
    remaining: list[tuple[str, bool]] = []  # (what is left of a part, whether it is still one piece)
    for part in parts:
        whole = True
        for token in _tokens(part):
            target = _fit(token, asked, kinds, placed.values)
            if target is not None:
                placed.values[target] = token
                before, _, after = part.partition(token)
                whole = whole and not (_has_words(before) and _has_words(after))
                part = f"{before} {after}"
        part = " ".join(part.split()).strip(_EDGE + " ")
        if any(ch.isalnum() for ch in part):
            remaining.append((part, whole))
    free = _is_free_text(kinds.get(asked))
    if not placed.values:
        if free:
            return _free_text(text, asked, others, alone)
        return None  # nothing found: the usual path reads the whole line
    if list(placed.values) == [asked] and not remaining and len(parts) == 1 and _whole(text) == placed.values[asked]:
        return None  # the whole line is the answer: the usual path reads it
    if asked in placed.values:
        # The question is answered: the rest is said back, not guessed (but not a value taken
        # said again, "AB1234, I think. Yes, AB1234.", nor a bare "Oh" or "It's").
        taken = set(placed.values.values())
        placed.leftover = [p for p, _ in remaining if p not in taken and not _says_nothing(p)]
    elif remaining and free:
        rest = _first_plain(asked, remaining, others)
        placed.values.update(rest.values)
        placed.leftover = rest.leftover
    elif remaining:
        placed.values[asked] = ", ".join(p for p, _ in remaining)  # read in the asked field's type
    return placed


def _free_text(text: str, asked: str, others: frozenset[str], alone: bool) -> Placed | None:
    """Free text for the asked field from a line in which no value fitted a field by its shape."""
    sentences = _sentences(text)
    said = [s for s in sentences if not _only_remark(s)]  # "Oh hello!", "Sorry!": nothing to take
    first = _without_remark(said[0]) if said else ""
    if alone and said == sentences and len(said) == 1 and first == said[0]:
        # One plain sentence, the whole line: as the person wrote it (lead-in left out), or its
        # first part when its other parts say other things.
        parts = [p.strip() for p in _PARTS.split(text) if p.strip()]
        if len(parts) > 1 and any(_other_answer(p, others) for p in parts):
            return _first_plain(asked, [(p, True) for p in parts], others)
        value = _without_lead_in(_whole(text))
        if value != _whole(text) and value:
            return Placed({asked: value})
        return None  # the usual path reads the whole line
    # A chatty line: "Oh hello! It's Dana Reeve, though everyone calls me Dee." gives Dana
    # Reeve; "Sorry, I swapped the digits." (beside "Age: 34") gives nothing: a remark, not a value.
    if not said:
        if alone and len(sentences) == 1 and not all(w in _NOT_ANSWERS for w in _words_of(sentences[0])):
            return None  # "yes", "OK" on their own: the person's answer, as written
        return Placed()  # "Oh hello!", "Sorry!": nothing to take; the question is asked again
    head, aside = _cut_aside(_without_lead_in(first), others)
    if _plain_value(head, others):
        return Placed({asked: head}, [p for p in [aside, *said[1:]] if p])
    return Placed({}, said)


# Words that are never an answer: a greeting, an apology, thanks, a filler.
_NOT_ANSWERS = frozenset(
    "oh ah aha hello hi hey hiya there well um umm uh er erm hmm sorry oops apologies thanks thank you "
    "good morning afternoon evening".split()
)
# Words that open a remark rather than an answer ("Yes, ...", "OK so ..."); alone, "yes" or "OK"
# may be the answer itself.
_REMARK_WORDS = _NOT_ANSWERS | frozenset("so ok okay right yes yeah yep sure alright".split())
# A clause that comes after the answer, not part of it: ", though everyone calls me Dee".
_ASIDE_OPENERS = frozenset(
    "though although but as because since so which who and or if unless except well actually".split()
)
# The words before the first comma, "!" or "." of a sentence: one word, then more words each after
# spaces (never "letters, optional spaces" repeated, which backtracks exponentially on a long line of
# letters and spaces with no punctuation).
_REMARK_RUN = re.compile(r"^\s*([A-Za-z]+(?:\s+[A-Za-z]+)*)\s*[,!.]+\s*")
_FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself|we|our|ours)\b")  # "i" covers "i'm", "i've", "i'd"
# Where one sentence ends and the next begins; not after an initial or a title ("J. Smith", "Dr. Lee").
_SENTENCE_END = re.compile(
    r"(?=[.!?])(?<![A-Z])(?<!\b[DMS]r)(?<!\bMrs)(?<!\bMs)(?<!\bSt)(?<!\bJr)(?<!\bSr)[.!?]+\s+(?=\S)"
)


def _words_of(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower().replace("'", "").replace("\u2019", ""))


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def _only_remark(sentence: str) -> bool:
    """A sentence of nothing but greeting, apology or filler words ("Oh hello!", "Sorry!")."""
    words = _words_of(sentence)
    return bool(words) and all(w in _REMARK_WORDS for w in words)


def _says_nothing(part: str) -> bool:
    """A part of a line with no content of its own: "Oh", "It's", "well"."""
    return all(w in _REMARK_WORDS or w in ("its", "it", "is", "thats", "that") for w in _words_of(part))


def _without_remark(sentence: str) -> str:
    """``sentence`` without the remark words that open it, up to their comma ("Oh, Dana Reeve",
    "Sorry, I swapped the digits": the words after the comma)."""
    while (m := _REMARK_RUN.match(sentence)) is not None and all(w in _REMARK_WORDS for w in _words_of(m.group(1))):
        sentence = sentence[m.end() :]
    return sentence.strip()


def _cut_aside(sentence: str, others: frozenset[str]) -> tuple[str, str]:
    """The answer of one sentence and what follows it: cut at the first comma after which comes an
    aside (", though ...") or something else (figures, an address, another question's name)."""
    parts = [p.strip() for p in _PARTS.split(sentence) if p.strip()]
    for i in range(1, len(parts)):
        opener = _words_of(parts[i])[:1]
        if (opener and opener[0] in _ASIDE_OPENERS) or _other_answer(parts[i], others):
            return ", ".join(parts[:i]).strip(_EDGE + " "), ", ".join(parts[i:]).strip(_EDGE + " ")
    return sentence.strip(_EDGE + " "), ""


def _plain_value(text: str, others: frozenset[str]) -> bool:
    """Does ``text`` read as a value given, not as a remark about something? Words only (no
    figures, address or other question's name), and no "I", "me", "my" (those tell something
    about the person: "I swapped the digits")."""
    if not any(ch.isalnum() for ch in text) or _other_answer(text, others):
        return False
    return not _FIRST_PERSON.search(text.lower())


def _first_plain(asked: str, parts: list[tuple[str, bool]], others: frozenset[str]) -> Placed:
    """The first part to the asked free-text field when it is plain words written in one piece
    (its lead-in left out), the rest said back as not used; or nothing taken."""
    first, whole = parts[0]
    sentences = _sentences(first)
    saying = [s for s in sentences if not _only_remark(s)]  # "Oh hello! I'm Dana Reeve": the name
    opener = _without_remark(saying[0]) if saying else ""
    said = _without_lead_in(opener)
    chatty = saying != sentences or len(saying) > 1 or opener != (saying[0] if saying else "")
    if whole and said and not _other_answer(first, others) and (not chatty or _plain_value(said, others)):
        rest = [s.strip(_EDGE + " ") for s in saying[1:]]
        return Placed({asked: said.strip(_EDGE + " ")}, [*rest, *(p for p, _ in parts[1:])])
    return Placed({}, [p for p, _ in parts])


# What comes before the answer itself in "I'm Dana Reeve", "my name is Sam Lee", "it's Leeds".
_LEAD_IN = re.compile(
    r"^(?:i'?m|i am|my name is|my name's|name's|the name's|it'?s|it is|this is|call me|that's|that is)\s+(?=\S)",
    re.IGNORECASE,
)


# A greeting before the lead-in, with or without a comma: "hi it's Dana Reeve", "hello I'm Sam Lee".
_GREETING = re.compile(
    r"^(?:(?:oh|ah|hello|hi|hey|hiya|well|um+|uh|er+m?|hmm|good (?:morning|afternoon|evening))(?:[\s,!.]+|$))+",
    re.IGNORECASE,
)


def _without_lead_in(text: str) -> str:
    text = text.replace("\u2019", "'")
    greeted = _GREETING.sub("", text, count=1)
    text = greeted if any(ch.isalnum() for ch in greeted) else text
    return _LEAD_IN.sub("", text, count=1).strip(_EDGE + " ")


def _other_answer(part: str, others: frozenset[str]) -> bool:
    """Does ``part`` say something other than plain words: figures, an address, another
    question's name ("staff id ab1234", "my email is ...")?"""
    if any(ch.isdigit() for ch in part) or "@" in part:
        return True
    words = " " + " ".join(re.findall(r"[a-z0-9]+", part.lower())) + " "
    return any(f" {name} " in words for name in others)


def _has_words(text: str) -> bool:
    return any(ch.isalnum() for ch in text)


def _is_free_text(kind: Kind | None) -> bool:
    return kind is not None and kind.name == "text" and not getattr(kind, "pattern", None)


def _whole(text: str) -> str:
    return text.strip().strip(_EDGE + " ")


def _tokens(part: str) -> list[str]:
    """The words of ``part`` in order, edges trimmed (an email address as the address alone)."""
    out: dict[str, None] = {}  # in order, each once (a dict: a list's "in" made long lines quadratic)
    for word in part.split():
        email = _EMAIL.search(word) if "@" in word else None
        word = email.group(0) if email else word.strip(_EDGE)
        if word:
            out.setdefault(word)
    return list(out)


def _fit(token: str, asked: str, kinds: dict[str, Kind], taken: dict[str, str]) -> str | None:
    """The one field ``token``'s shape fits (the asked field first), or None."""
    asked_kind = kinds.get(asked)
    if asked not in taken and asked_kind is not None and _fits(token, asked_kind):
        return asked
    others = [
        f for f, kind in kinds.items() if f != asked and f not in taken and _distinct(kind) and _fits(token, kind)
    ]
    return others[0] if len(others) == 1 else None


def _distinct(kind: Kind) -> bool:
    """A kind whose shape is telling enough to place a value in a field that was not asked."""
    return kind.name == "email" or bool(getattr(kind, "pattern", None))


def _fits(token: str, kind: Kind) -> bool:
    pattern = getattr(kind, "pattern", None)
    if pattern:
        return token_fitting(token, pattern) is not None  # "ab1234" fits ^[A-Z]{2}\d{4}$: read as AB1234
    if kind.name == "email":
        return _EMAIL.fullmatch(token) is not None
    return False
