"""Choices in a person's words: the option named, by its own name, by one of the author's
aliases ("train" for rail, "I drove" for car, "my GP sent me" for doctor), or misspelt.

An option counts when its name or an alias is among the line's words (the longest phrase
first, so "not been before" is read before "been before"), and not after "not" ("not by car,
by train" is rail). A misspelt word ("trian", "rial") is matched with ``rapidfuzz`` to the one
option or alias it is close to. Where the author gave two options "yes" and "no" as aliases, a
plain yes or no ("nope", "yeah") names one, and so does the other's name said after "not" ("I
wasn't here before"). Two options named, or none, and the question is asked again.
"""

from __future__ import annotations

import re

from formctl.agent.models.guided.values.context import ReadingContext
from formctl.agent.models.guided.values.kinds import Kind, UnreadableAnswer
from formctl.agent.models.guided.values.reading import Reading, around
from formctl.json_types import JsonValue

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_NEGATION = frozenset({"not", "no", "never", "didn't", "didnt", "wasn't", "wasnt", "haven't", "havent"})
_GAP = 2  # words that may stand between an alias's own words ("been [here] before")
_FUZZY_CUTOFF = 80  # rapidfuzz ratio: "trian" ~ "train" (80), "rial" ~ "rail" (75 is too loose for 4 letters)


def or_list(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " or " + items[-1]


def _names(kind: Kind) -> list[tuple[tuple[str, ...], JsonValue]]:
    """Every name of every option as a tuple of words, longest first: (words, option)."""
    pairs: list[tuple[tuple[str, ...], JsonValue]] = []
    for option in kind.options:
        pairs.append((tuple(_WORD.findall(str(option).lower().replace("_", " "))), option))
    for option, aliases in kind.aliases:
        pairs.extend((tuple(_WORD.findall(alias.lower().replace("’", "'"))), option) for alias in aliases)
    return sorted((p for p in pairs if p[0]), key=lambda p: -len(p[0]))


def _words(text: str) -> list[re.Match[str]]:
    return list(_WORD.finditer(text.lower().replace("’", "'")))


def _named(
    kind: Kind, text: str, negated: list[tuple[JsonValue, tuple[int, int]]] | None = None
) -> list[tuple[JsonValue, tuple[int, int]]]:
    """The options ``text`` names (not after "not"), each with the span of its words; the options
    named after a "not" are added to ``negated`` when given."""
    words = _words(text)
    tokens = [m.group(0) for m in words]
    at: dict[str, list[int]] = {}  # word -> where it stands, so each name is looked for only where it starts
    for i, token in enumerate(tokens):
        at.setdefault(token, []).append(i)
    taken = [False] * len(tokens)
    found: list[tuple[JsonValue, tuple[int, int]]] = []
    for name, option in _names(kind):
        for i in at.get(name[0], ()):
            where = _spread(tokens, taken, name, i)
            if where is None:
                continue
            if any(t in _NEGATION for t in tokens[max(0, i - 2) : i] + tokens[where[-1] + 1 : where[-1] + 2]):
                if negated is not None:
                    negated.append((option, (words[i].start(), words[where[-1]].end())))
                continue  # "not by car", "I have never": not named (its words free for a longer phrase)
            for j in where:
                taken[j] = True
            found.append((option, (words[i].start(), words[where[-1]].end())))
    return found


def _spread(tokens: list[str], taken: list[bool], name: tuple[str, ...], i: int) -> list[int] | None:
    """Where the words of ``name`` stand from ``i`` on, in order, each at most ``_GAP`` words
    after the one before it ("been before" in "I've been here before", "helped me before" in
    "you helped me once before"); None when they do not, or a word of it is already taken."""
    where = [i]
    for word in name[1:]:
        j = where[-1] + 1
        while j < len(tokens) and j <= where[-1] + 1 + _GAP and tokens[j] != word:
            j += 1
        if j >= len(tokens) or tokens[j] != word or j > where[-1] + 1 + _GAP:
            return None
        where.append(j)
    return None if any(taken[j] for j in where) else where


def _fuzzy(kind: Kind, text: str) -> list[tuple[JsonValue, tuple[int, int]]]:
    """Options named by a misspelt word ("trian"): each distinct word of four letters or more
    matched once, with rapidfuzz, to the one option whose names it is close to."""
    from rapidfuzz import fuzz, process

    single = [(name[0], option) for name, option in _names(kind) if len(name) == 1 and len(name[0]) >= 4]
    names = [name for name, _ in single]
    close: dict[str, set[JsonValue]] = {}
    found = []
    for m in _words(text):
        word = m.group(0)
        if len(word) < 4:
            continue
        if word not in close:
            hits = process.extract(word, names, scorer=fuzz.ratio, score_cutoff=_FUZZY_CUTOFF, limit=None)
            close[word] = {single[index][1] for _, _, index in hits}
        if len(close[word]) == 1:
            found.append((next(iter(close[word])), m.span()))
    return found


def _said_yes_or_no(kind: Kind, text: str) -> list[tuple[JsonValue, tuple[int, int]]]:
    """The option a yes or a no names when the author made "yes" and "no" aliases of two options
    (a choice that a yes/no question asks: "Have they used the service before?"): a plain yes or
    no said in any everyday way ("nope", "yeah"), or the words of one of the two options said
    after a "not" ("I wasn't here before" is the "no" option when "here before" names the "yes"
    one). Nothing otherwise."""
    from formctl.forms.replies import yes_no

    sides = {
        word: [o for o, aliases in kind.aliases if any(a.strip().lower() == word for a in aliases)]
        for word in ("yes", "no")
    }
    if len(sides["yes"]) != 1 or len(sides["no"]) != 1 or sides["yes"] == sides["no"]:
        return []
    yes, no = sides["yes"][0], sides["no"][0]
    negated: list[tuple[JsonValue, tuple[int, int]]] = []
    _named(kind, text, negated)
    turned = {no if option == yes else yes for option, _ in negated if option in (yes, no)}
    if turned:  # "it's not my first time" is a yes, though it opens like a no
        return [(turned.pop(), negated[0][1])] if len(turned) == 1 else []
    answer, _ = yes_no(text)
    return [] if answer is None else [(yes if answer else no, (0, len(text)))]


def read_choice(kind: Kind, text: str, ctx: ReadingContext) -> Reading:
    """The one option ``text`` names; raises UnreadableAnswer (listing the options) otherwise."""
    shown = [str(o) for o in kind.options]
    wanted = text.strip().lower()
    exact = [o for o, s in zip(kind.options, shown) if s.lower() == wanted]
    prefixed = [o for o, s in zip(kind.options, shown) if wanted and s.lower().startswith(wanted)]
    if exact or len(prefixed) == 1:
        option = (exact or prefixed)[0]
        return Reading(option, (0, len(text)), str(option))
    found = _named(kind, text) or _fuzzy(kind, text) or _said_yes_or_no(kind, text)
    options = list(dict.fromkeys(o for o, _ in found))
    if len(options) == 1:
        spans = [s for _, s in found]
        return Reading(options[0], spans[0], str(options[0]), around(text, spans))
    if len(options) > 1:
        raise UnreadableAnswer(f"I can't tell which you mean: {or_list([str(o) for o in options])}?")
    raise UnreadableAnswer(f"I need one of: {or_list(shown)}.")
