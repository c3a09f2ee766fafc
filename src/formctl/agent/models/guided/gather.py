"""Several answers in one line: each clause placed on the field it is about.

"Hi, I'm Grace Okafor. I've not been here before. I'm 45 and my email is grace@example.org"
answers four questions; "Bristol, for the supplier audit" two; "went down on 9 March 2026 and
came back on the 11th" two. A line is cut into clauses (sentences, then commas, "and", "but");
a clause is about a field when it names it in everyday words ("my email is", "came back on",
"ticket ref", "for the ...") or when its value has a shape only one open field takes (an
address, a Staff ID's pattern, a phone number). What a clause gives is the raw text of the
value, read later by the field's own reader; what no field takes is left for the question asked.

Pure functions of the words and the fields (:class:`Slot`); every pattern is linear.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from formctl.agent.models.guided.answers import Kind
from formctl.agent.models.guided.values.numbers import marked
from formctl.agent.models.guided.values.shapes import fit_pattern, token_fitting

# Everyday names for a field, by a word of its label or id. The first names are what a person
# calls it in a question ("what do you mean by purpose?"); ``_SPOKEN`` adds how a value is led in.
_NAMES: dict[str, tuple[str, ...]] = {
    "name": ("name", "my name"),
    "email": ("email", "e-mail", "email address", "mail"),
    "phone": ("phone", "mobile", "phone number", "mobile number", "telephone", "number", "cell"),
    "staff": ("staff id", "staff number", "staff no", "employee id", "employee number", "badge", "payroll number"),
    "destination": ("destination", "where i went", "city"),
    "departure": ("departure", "departure date", "date i left", "outbound"),
    "return": ("return", "return date", "date i came back"),
    "purpose": ("purpose", "reason"),
    "mode": ("mode", "travel", "transport", "how i travelled"),
    "miles": ("miles", "mileage", "distance"),
    "ticket": ("ticket", "ticket ref", "ticket reference", "booking ref", "booking reference", "reference", "ref"),
    "accommodation": ("accommodation", "hotel", "lodging", "room"),
    "meals": ("meals", "meal", "food", "subsistence"),
    "total": ("total", "total claimed", "amount"),
    "age": ("age", "how old"),
    "client": ("client number", "client no", "client id"),
    "referral": ("referral", "referred", "heard of us", "hear about"),
    "needs": ("needs", "help with"),
    "changed": ("details changed", "changes", "changed"),
}
# How a value is led in, by the same words: the value follows the cue ("came back on the 11th").
_SPOKEN: dict[str, tuple[str, ...]] = {
    "name": (
        "my name is",
        "my name's",
        "name is",
        "name's",
        "i'm",
        "i am",
        "this is",
        "call me",
        "it's",
        "claim for",
        "claiming for",
        "on behalf of",
    ),
    "email": ("email is", "email's", "e-mail is", "email address is", "email", "e-mail", "reach me at", "write to"),
    "phone": (
        "mobile is",
        "number is",
        "phone is",
        "mobile",
        "phone",
        "number",
        "call me on",
        "reach me on",
        "ring me on",
        "tel",
    ),
    "staff": ("staff id", "staff number", "staff no", "employee id", "employee number", "badge", "payroll number"),
    "destination": (
        "went to",
        "going to",
        "travelled to",
        "traveled to",
        "trip to",
        "went up to",
        "went down to",
        "drove to",
        "flew to",
        "headed to",
        "visiting",
        "visited",
        "destination",
        "to",
        "in",
    ),
    "departure": (
        "went down",
        "went up",
        "went",
        "flew out",
        "flew",
        "drove down",
        "drove up",
        "drove",
        "took the train",
        "got the train",
        "caught the train",
        "left",
        "leaving",
        "departed",
        "departing",
        "set off",
        "set out",
        "travelled",
        "traveled",
        "outbound",
        "departure",
        "going",
        "from",
    ),
    "return": (
        "came back",
        "come back",
        "coming back",
        "got back",
        "get back",
        "returned",
        "returning",
        "return",
        "back",
        "home",
        "until",
        "till",
        "to",
    ),
    "purpose": ("purpose", "reason", "for"),
    "ticket": (
        "ticket reference",
        "ticket ref",
        "ticket",
        "booking reference",
        "booking ref",
        "booking",
        "reference",
        "ref",
    ),
    "accommodation": ("accommodation", "hotel", "stayed", "stay", "room", "lodging", "b&b", "airbnb", "nights"),
    "meals": ("meals", "meal", "food", "dinner", "lunch", "breakfast", "subsistence", "eating"),
    # Not "all in" or "altogether": "£118 all in" at the hotel question is the whole hotel cost.
    "total": ("total", "in total", "overall", "came to", "total claimed", "grand total"),
    "miles": ("miles", "mileage", "mi"),
    "age": ("i'm", "i am", "aged", "age", "years old", "year old"),
    "client": ("client number", "client no", "client id", "number"),
}
# Past these, a line is not a list of answers: what is left is read by the question asked.
_MOST_CLAUSES = 40
_LONGEST_CLAUSE = 400
_THOUSANDS = r"(?!\d{3}(?!\d))"
_CLAUSE = re.compile(rf"[.!?]+\s|[;\n]|,{_THOUSANDS}|\s(?:and|but|then|plus)\s", re.IGNORECASE)
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_PHONE = re.compile(r"(?<![\w.])\+?\(?\d[\d ()-]{5,18}\d(?![\w.])")
_LEAD = re.compile(
    r"^(?:(?:hi|hello|hey|oh|ah|sorry|actually|wait|well|so|ok|okay|right|yes|yeah|yep|um|er|erm|also|oops),?\s+)+",
    re.IGNORECASE,
)
_LINK = re.compile(
    r"^(?:'s|is|was|were|are|=|:|should be|should have been|it's|its|it is|it was|on|of|at|to|as)?\s*", re.I
)
_CAPITALISED = re.compile(r"[A-Z][\w'-]*(?:\s+(?:[A-Z][\w'-]*|(?:de|da|van|von|le|la|del|du|bin|al)\b))*")
# "5 March 2026, not the 4th": what follows "not" is what the value is not.
_NOT = re.compile(r"[,;]?(?<!\s)\s+(?:not|rather than|instead of)\s(?:the\s)?[^,;.]*", re.IGNORECASE)


_NUMBER = re.compile(r"(?:[£$€]\s?)?\d[\d,]*(?:\.\d+)?")
_MONTH_WORDS = (
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?"
    r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?"
    r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_DATE = re.compile(
    rf"\b(?:(?:mon|tues|wednes|thurs|fri|satur|sun)day,?\s+)?"
    rf"(?:\d{{4}}-\d{{1,2}}-\d{{1,2}}|(?:the\s+)?\d{{1,2}}(?:st|nd|rd|th)?(?:\s+of)?\s+{_MONTH}\b\.?(?:,?\s+\d{{4}})?"
    rf"|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?|\d{{1,2}}[/.]\d{{1,2}}[/.]\d{{2,4}}"
    rf"|(?:the\s+)?\d{{1,2}}(?:st|nd|rd|th)\b|(?:the\s+)?(?:next|following)\s+(?:day|morning|afternoon|evening|night)|the\s+day\s+after"
    rf"|(?:the\s+)?same\s+(?:day|evening|night)|that\s+(?:same\s+)?(?:day|evening|night)"
    rf"|(?:a|one|two|three|four|five|six|seven|\d{{1,2}})\s+(?:days?|nights?|weeks?)\s+(?:later|after)"
    rf"|\d{{1,2}}(?=\s?(?:-|–|to|until|till)\s?(?:the\s)?\d{{1,2}}(?:st|nd|rd|th)?\s{_MONTH})"
    rf"|(?:the\s+)?(?:(?:following|next)\s+)?(?:mon|tues|wednes|thurs|fri|satur|sun)day\b)",  # "came back Wednesday"
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Slot:
    """A field a clause may be about: its id, label, kind, and whether it is open (empty or
    refused) or answered (a value in a clause for it then corrects the answer)."""

    id: str
    label: str
    kind: Kind
    answered: bool = False

    @property
    def concepts(self) -> tuple[str, ...]:
        words = set(re.findall(r"[a-z]+", f"{self.label} {self.id}".lower()))
        if "client" in words and "number" not in words:
            words.discard("client")  # a client type is not a client number
        return tuple(c for c in _NAMES if c in words or (c == "ticket" and "reference" in words))


@dataclass(slots=True)
class Gathered:
    """Raw values found for fields (read later by each field's reader), the clauses no field
    took (for the question asked), and the clauses each value came from."""

    values: dict[str, str] = field(default_factory=dict)
    rest: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)
    # A second value of the same shape for a field already found ("AB1234, no wait, CD5678"):
    # the correction when the words between say so (:func:`_amended`), else said back.
    again: dict[str, str] = field(default_factory=dict)


def everyday_names(slots: Iterable[Slot]) -> dict[str, str]:
    """Lower-cased names a person calls each field by (its label, its id, everyday words) → id;
    a name two fields share is left out (it names neither for sure)."""
    out: dict[str, str] = {}
    shared: set[str] = set()
    for slot in slots:
        names = {slot.label.lower(), slot.id.lower(), slot.id.lower().replace("_", " ")}
        for concept in slot.concepts:
            names.update(_NAMES[concept])
        for name in names:
            if name in out and out[name] != slot.id:
                shared.add(name)
            out.setdefault(name, slot.id)
    return {k: v for k, v in out.items() if k not in shared}


def clauses(text: str) -> list[str]:
    """The clauses of a line, each without its opening remark words ("Hi, ", "sorry, ")."""
    out = []
    for part in _CLAUSE.split(text):
        part = _LEAD.sub("", part.strip()).strip(" .,;:!?\"'")
        if part:
            out.append(part)
    return out


def gather(text: str, asked: str | None, slots: list[Slot]) -> Gathered:
    """The values ``text`` gives for ``slots`` (the asked one's included): a value goes to the
    field whose everyday name is nearest it in its clause, or to the one field its shape fits;
    a clause that gives nothing is left in ``rest`` for the question asked."""
    found = Gathered()
    by_id = {s.id: s for s in slots}
    parts = clauses(text)
    for clause in parts[:_MOST_CLAUSES]:
        if len(clause) > _LONGEST_CLAUSE or not _claim(clause, asked, by_id, found):
            found.rest.append(clause)  # a clause longer than any answer is read by the question asked
    found.rest.extend(parts[_MOST_CLAUSES:])
    _amended(found, text)
    _complete_dates(found, by_id)
    _prefer_exact(found, by_id)
    _lone_figure(found, asked, by_id)
    return found


# Words that take back what was just said, between a value and the one meant ("AB1234, no wait,
# CD5678", "dana@example.org sorry I mean dana.r@example.org").
_AMENDS = re.compile(
    r"\b(?:no|wait|sorry|i mean|i meant|actually|make (?:that|it)|correction|rather|scratch that|oops|typo"
    r"|my (?:mistake|bad))\b",
    re.IGNORECASE,
)
_BETWEEN = 80  # the longest a self-correction's words between the two values are


def _amended(found: Gathered, text: str) -> None:
    """A field given twice in one line: the later value when the words between take the earlier
    one back, else the later one is said back, not dropped (the earlier one stands)."""
    for field_id, later in found.again.items():
        earlier = found.values[field_id]
        start = text.find(earlier)
        at = text.find(later, start + len(earlier)) if start >= 0 else -1
        between = text[start + len(earlier) : at] if at >= 0 else ""
        if at >= 0 and len(between) <= _BETWEEN and _AMENDS.search(between):
            found.values[field_id] = later
            found.sources[field_id] = text[at:]
        else:
            found.rest.append(later)


def _lone_figure(found: Gathered, asked: str | None, slots: dict[str, Slot]) -> None:
    """A line that is only a figure ("45") at a yes/no or a choice question no figure answers
    ("Client type?") answers the one open question a figure does (the age), rather than being
    refused again and again."""
    if found.values or len(found.rest) != 1 or not _no_figure_answers(slots.get(asked or "")):
        return
    figure = found.rest[0]
    fits = [s for s in slots.values() if not s.answered and _takes(s, "number", figure)]
    if _NUMBER.fullmatch(figure) and len(fits) == 1 and fits[0].kind.name == "integer":
        found.rest.clear()
        _take(found, fits[0], figure, figure)


_LONE_FIGURE = re.compile(r"^[a-z ]{0,24}(?:[£$€]\s?)?\d[\d,]*(?:\.\d+)?[a-z ]{0,24}$", re.IGNORECASE)


def _prefer_exact(found: Gathered, slots: dict[str, Slot]) -> None:
    """An amount given twice, roughly and exactly, in clauses of its own ("roughly 300 in total,
    312.75 exactly", "312.75 to be exact, about 300 all in"): the exact figure is the answer, and
    the rough one is part of saying it, not something else said."""
    for field_id, value in list(found.values.items()):
        if slots[field_id].kind.name not in ("integer", "number"):
            continue
        source = found.sources[field_id]
        at = source.find(value)
        mark = marked(source, (at, at + len(value))) if at >= 0 else None
        for part in list(found.rest):
            lone = _NUMBER.search(part) if _LONE_FIGURE.match(part) else None
            if lone is None or {mark, _lone_mark(part)} != {"rough", "exact"}:
                continue
            found.rest.remove(part)
            if mark == "rough":
                _take(found, slots[field_id], lone.group(0), part)
            break
    marks = {part: _lone_mark(part) for part in found.rest}
    if "exact" in marks.values():  # "roughly 300 quid, 312.75 to be precise" for the question asked
        found.rest = [part for part in found.rest if marks[part] != "rough"]


def _lone_mark(part: str) -> str | None:
    """ "exact" or "rough" for a clause that is one figure said so ("312.75 to be precise")."""
    lone = _NUMBER.search(part) if _LONE_FIGURE.match(part) else None
    return marked(part, lone.span()) if lone is not None else None


_FULL_DATE = re.compile(rf"(\d{{1,2}})(?:st|nd|rd|th)?(?:\s+of)?\s+({_MONTH_WORDS})\b\.?,?\s+(\d{{4}})", re.IGNORECASE)
_DAY_ONLY = re.compile(r"^(?:on\s+)?(?:the\s+)?(\d{1,2})(?:st|nd|rd|th)?$", re.IGNORECASE)
_DAY_MONTH = re.compile(rf"^(?:the\s+)?(\d{{1,2}})(?:st|nd|rd|th)?(?:\s+of)?\s+({_MONTH_WORDS})\.?$", re.IGNORECASE)


def _complete_dates(found: Gathered, slots: dict[str, Slot]) -> None:
    """A date given in part ("the 11th", "20 March") beside a whole one in the same line
    ("went down on 9 March 2026 and came back on the 11th") takes its month and year from it."""
    dates = {f: v for f, v in found.values.items() if slots[f].kind.name == "date"}
    whole = next((m for v in dates.values() if (m := _FULL_DATE.search(v))), None)
    if whole is None:
        return
    for field_id, value in dates.items():
        if m := _DAY_ONLY.match(value.strip()):
            found.values[field_id] = f"{m.group(1)} {whole.group(2)} {whole.group(3)}"
        elif m := _DAY_MONTH.match(value.strip()):
            found.values[field_id] = f"{m.group(1)} {m.group(2)} {whole.group(3)}"


@dataclass(frozen=True, slots=True)
class _Cue:
    start: int
    end: int
    slot: str
    words: str


def _cues(clause: str, free: list[Slot]) -> list[_Cue]:
    """Every everyday name of a free field in ``clause`` ("went down" is one cue for the
    departure, not "went" and "down": a field's longest name wins where its names overlap)."""
    low = clause.lower().replace("\u2019", "'")
    found = [
        _Cue(m.start(), m.end(), slot.id, m.group(0))
        for slot in free
        for m in _cue_pattern(slot.concepts).finditer(low)
    ]
    return sorted(found, key=lambda c: (c.start, -(c.end - c.start)))


@functools.lru_cache(maxsize=64)
def _cue_pattern(concepts: tuple[str, ...]) -> re.Pattern[str]:
    """One pattern for a field's everyday names, the longest first (a miss costs one scan)."""
    cues = sorted({cue for c in concepts for cue in _SPOKEN.get(c, _NAMES[c])}, key=len, reverse=True)
    if not cues:
        return re.compile(r"(?!x)x")
    return re.compile(r"(?<![\w'-])(?:" + "|".join(re.escape(c) for c in cues) + r")(?![\w'-])")


def _spans(clause: str) -> list[tuple[str, int, int]]:
    """The typed values in ``clause`` by shape: (shape, start, end); an address, a date, a phone
    number or a reference first, so the numbers inside them are not read on their own."""
    used = bytearray(len(clause))
    spans: list[tuple[str, int, int]] = []

    def add(shape: str, start: int, end: int) -> None:
        if not any(used[start:end]):
            used[start:end] = b"\x01" * (end - start)
            spans.append((shape, start, end))

    for shape, pattern in (("email", _EMAIL), ("date", _DATE), ("phone", _PHONE)):
        for m in pattern.finditer(clause):
            if shape != "phone" or sum(ch.isdigit() for ch in m.group(0)) >= 9:
                add(shape, m.start(), m.end())
    for m in _TOKEN.finditer(clause):
        word = m.group(0)
        if not _ORDINAL.fullmatch(word) and any(ch.isdigit() for ch in word) and any(ch.isalpha() for ch in word):
            add("token", m.start(), m.end())
    for m in _NUMBER.finditer(clause):
        add("number", m.start(), m.end())
    return sorted(spans, key=lambda s: s[1])


_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*")
_ADJACENT = frozenset({"to", "in", "from", "back", "home", "until", "till", "for", "on", "at", "mi"})
_ORDINAL = re.compile(r"\d{1,2}(?:st|nd|rd|th)", re.IGNORECASE)
# A figure the person will be, not is: "I'll be 18 in June" does not give an age.
_FUTURE = re.compile(r"(?:'ll|\bwill|\bgoing to|\bgonna)\s+be\s+$|\bturn(?:ing|s)?\s+$", re.IGNORECASE)


def _takes(slot: Slot, shape: str, value: str) -> bool:
    """Can a value of this shape be ``slot``'s answer?"""
    kind, pattern = slot.kind.name, getattr(slot.kind, "pattern", None)
    if pattern:
        return token_fitting(value.strip(), str(pattern)) is not None
    if shape == "email":
        return kind == "email"
    if shape == "date":
        return kind == "date"
    if shape == "phone":
        return "phone" in slot.concepts
    if shape == "number":
        return kind in ("integer", "number")
    if shape == "token":
        return "ticket" in slot.concepts
    return False


def _claim(clause: str, asked: str | None, slots: dict[str, Slot], found: Gathered) -> bool:
    """Place what ``clause`` gives; whether it gave anything."""
    clause = _NOT.sub("", clause)
    if re.match(r"(?:not|rather than|instead of)\b", clause, re.IGNORECASE):
        return True  # "…5 March 2026, not the 4th": what the value is not, nothing to take
    cues = _cues(clause, [s for s in slots.values() if s.id not in found.values])
    shaped = _claim_shaped(clause, asked, slots, cues, found)
    return _claim_cued(clause, asked, slots, cues, found) or shaped


def _claim_shaped(clause: str, asked: str | None, slots: dict[str, Slot], cues: list[_Cue], found: Gathered) -> bool:
    """The typed values of ``clause`` (dates, amounts, addresses, references), each to the field
    whose cue is nearest it, or to the one field its shape fits."""
    gave = False
    unplaced: list[str] = []
    for shape, start, end in _spans(clause):
        value = clause[start:end].strip()
        if shape == "number" and _FUTURE.search(clause[max(0, start - 24) : start]):
            continue  # "I'll be 18 in June": no age of 18 (the asked question's reader says why)
        if shape == "number" and _given_up(clause, (start, end)):
            continue  # "roughly 300 in total or 312.75 to be exact": the exact one is the answer
        fits = [s for s in slots.values() if s.id not in found.values and _takes(s, shape, value)]
        chosen = _chosen(fits, cues, (start, end), shape, asked) if fits else None
        if chosen is None and shape != "number":
            again = [f for f, v in found.values.items() if v != value and _takes(slots[f], shape, value)]
            if len(again) == 1:
                found.again[again[0]] = value  # a second value for a field found already (see _amended)
                gave = True
                continue
        if chosen is not None:
            _take(found, slots[chosen], value, clause)
            gave = True
        elif fits and shape != "number":
            unplaced.append(value)  # a date or a reference no field could be told for: said back
    if gave:
        found.rest.extend(unplaced)
    return gave


def _chosen(fits: list[Slot], cues: list[_Cue], span: tuple[int, int], shape: str, asked: str | None) -> str | None:
    """The field among ``fits`` a value of ``shape`` at ``span`` goes to: the one whose cue is
    nearest, else the one its shape tells (a reference-like word only to a field with a pattern,
    or the asked one: "ticket ref TR-1" names its field)."""
    if shape == "token":
        fits_shape = [s for s in fits if getattr(s.kind, "pattern", None) or s.id == asked]
    else:
        fits_shape = fits
    return _nearest(fits, cues, span[0], span[1], shape) or _only_shape(fits_shape, shape, asked)


def _claim_cued(clause: str, asked: str | None, slots: dict[str, Slot], cues: list[_Cue], found: Gathered) -> bool:
    """The free-text values and choices ``clause`` leads in by name ("I'm Grace Okafor", "for the
    supplier audit"), for fields other than the one asked (which reads what is left)."""
    gave = False
    for cue in cues:
        slot = slots[cue.slot]
        naming = "name" in slot.concepts or "destination" in slot.concepts
        pattern = getattr(slot.kind, "pattern", None)
        if slot.id in found.values or (slot.id == asked and not naming):
            continue  # the question asked reads what is left of the line, unless a name or place is led in
        nxt = min([c.start for c in cues if c.start >= cue.end and c.slot != cue.slot] + [len(clause)])
        if pattern and slot.id != asked:  # "staff id AB 1234": a code in parts, led in by its name
            code = fit_pattern(_LINK.sub("", clause[cue.end : nxt].strip(), count=1), str(pattern))
            if code is not None:
                _take(found, slot, code, clause)
                gave = True
            continue
        if _is_typed(slot) and slot.kind.name != "choice":
            continue
        if slot.kind.name == "choice":
            if len(clause.split()) <= 8:
                _take(found, slot, clause, clause)
                gave = True
            continue
        value = _text_after(clause[cue.end : nxt], slot, cue.words)
        if value is not None:
            _take(found, slot, value, clause)
            gave = True
    return gave


def _no_figure_answers(slot: Slot | None) -> bool:
    """Is ``slot`` a yes/no or a choice none of whose options is a figure?"""
    if slot is None or slot.kind.name not in ("boolean", "choice"):
        return False
    return not any(any(ch.isdigit() for ch in str(o)) for o in getattr(slot.kind, "options", ()))


def _given_up(clause: str, span: tuple[int, int]) -> bool:
    """A figure said roughly in a clause that also gives one exactly."""
    if marked(clause, span) != "rough":
        return False
    return any(m.span() != span and marked(clause, m.span()) == "exact" for m in _NUMBER.finditer(clause))


def _nearest(fits: list[Slot], cues: list[_Cue], start: int, end: int, shape: str) -> str | None:
    """The field among ``fits`` whose cue is nearest the value: before it, or (for an amount,
    "120 miles", "45 years old") just after it."""
    ids = {s.id for s in fits}
    best: tuple[int, str] | None = None
    for cue in cues:
        if cue.slot not in ids:
            continue
        if cue.end <= start:
            distance = start - cue.end
            if cue.words in _ADJACENT and distance > 5:
                continue  # "to", "from", "back" lead in only what comes right after them
        elif shape == "number" and cue.start >= end and cue.start - end <= 12:
            distance = cue.start - end
        else:
            continue
        if best is None or distance < best[0]:
            best = (distance, cue.slot)
    return best[1] if best else None


def _only_shape(fits: list[Slot], shape: str, asked: str | None) -> str | None:
    """With no cue: the asked field if it fits, else the one field a telling shape fits."""
    if asked is not None and any(s.id == asked for s in fits):
        return asked if shape in ("email", "phone", "token") else None  # the asked field reads the rest itself
    if shape in ("email", "phone", "token") or any(getattr(s.kind, "pattern", None) for s in fits):
        return fits[0].id if len(fits) == 1 else None
    return None


def _take(found: Gathered, slot: Slot, value: str, clause: str) -> None:
    found.values[slot.id] = value
    found.sources[slot.id] = clause


def _is_typed(slot: Slot) -> bool:
    return slot.kind.name != "text" or bool(getattr(slot.kind, "pattern", None)) or "phone" in slot.concepts


def _text_after(after: str, slot: Slot, cue: str) -> str | None:
    """Free text led in by a cue: a name's capitalised words, a place's, or the rest of the
    clause for a purpose ("for the supplier audit")."""
    after = _LINK.sub("", after.strip(), count=1).strip(" .,;:!?\"'")
    concepts = slot.concepts
    if "name" in concepts or "destination" in concepts:
        m = _CAPITALISED.match(after)
        if m is None:
            return None
        value = m.group(0)
        if value.split()[0].lower() in _NOT_NAMES:
            return None
        return value if "name" not in concepts or len(value.split()) >= 2 else None
    if cue == "for":
        if _CAPITALISED.match(after) and not re.match(r"(?:the|a|an)\s", after, re.IGNORECASE):
            return None  # "claim for Sarah Jones": a name, not a purpose
        after = re.sub(r"^(?:the|a|an)\s+", "", after, flags=re.IGNORECASE)
    words = after.lower().split()
    if cue in ("for", "purpose", "reason") and words and not any(ch.isdigit() for ch in after):
        return None if len(words) == 1 and words[0] in _NOT_PURPOSES else after
    return None


# One word after "for" that is no purpose: "for me", "for now", "for sure".
_NOT_PURPOSES = frozenset("me you us them him her it that this now sure example instance ages long good real".split())
_NOT_NAMES = frozenset(
    "i it the a an my monday tuesday wednesday thursday friday saturday sunday january february march april may "
    "june july august september october november december".split()
)
