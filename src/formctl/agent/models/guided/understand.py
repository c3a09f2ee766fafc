"""A line in the person's own words (no ``Label: value``): what they are doing, then the answers
it gives.

First the act (:mod:`.intent`): a question back is answered from the field's help and the
question asked again; not knowing or refusing leaves an optional question out and says why a
required one is needed; putting a question off asks the others first. Only an answer stores a
value: the clauses that name another field or hold a value only one field takes go to those
fields (:mod:`.gather`; a field already answered only when the line corrects something:
"sorry, the ticket ref was TR-88321"), and the question asked takes what is left: all of it for
a free-text question about something to describe (every sentence and line of "Housing
disrepair. The landlord ignores letters; ..."), the plain part for a name or a place
(:mod:`.natural`), the value in it for a typed one. What no question takes is said back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from formctl.agent.models.guided.answers import Kind, UnreadableAnswer, convert
from formctl.agent.models.guided.gather import Gathered, Slot, everyday_names, gather
from formctl.agent.models.guided.intent import ASIDE, ASK, DEFER, REFUSE, UNKNOWN, named_field, read_act
from formctl.agent.models.guided.natural import meant, place
from formctl.agent.models.guided.state import GuidedState, Plan, Snapshot
from formctl.forms.evaluate import EMPTY, FILLED, HELD, INVALID
from formctl.forms.replies import yes_no
from formctl.json_types import FieldValue

if TYPE_CHECKING:
    from formctl.forms.compile import CompiledForm

# A line that changes an answer given: an apology, "actually", "wrong", "I meant", "not the 4th".
_CORRECTING = re.compile(
    r"\b(?:sorry|actually|wait|oops|wrong|mistake|meant|correct(?:ion|ed)?|typo|should (?:be|have been)|not the"
    r"|instead|changed?|new|missed|forgot|found it|update|scratch that|my bad)\b",
    re.IGNORECASE,
)
# Words that say something changed, at a yes/no question about changes: "I've moved", "new email".
_CHANGE_SAID = re.compile(
    r"\b(?:moved|new|now|changed|different|updated|got married|married|divorced)\b", re.IGNORECASE
)
# Free text that names or identifies something (a name, a place, a reference): its plain part is
# taken. Anything else is described, and every sentence of the description is kept.
_NAMING = ("name", "email", "phone", "staff", "destination", "ticket", "client")
# An unsure ending after a name or a place: ", I think?", "probably".
_HEDGE = re.compile(
    r"(?:,?\s(?:i think|i believe|i guess|i reckon|probably|maybe|perhaps))?\s?\?+$|,?\s(?:i think|i believe|i guess|i reckon)[.!]*$",
    re.IGNORECASE,
)
# Where a remark after a name or a place begins: a dash between spaces, or a bracket.
_ASIDE_DASH = re.compile(r"\s+[—–-]+\s+|\s*\(")
# What leads in a short purpose: "It was for a", "mainly for the", "for an".
_FOR_LEAD = re.compile(
    r"^(?:(?:it|that)(?: was|'s| is)\s+|(?:i|we) went\s+|(?:mainly|mostly|just)\s+)*for\s+(?:(?:a|an|the)\s+)?(?=\w)",
    re.IGNORECASE,
)
# Words that only open or close a line: nothing to say back.
_REMARKS = frozenset(
    "hi hello hey oh ah well um er erm sorry thanks thank you cheers ok okay right yes yeah yep so anyway "
    "good morning afternoon evening there please wait actually oops hang on just".split()
)


@dataclass(slots=True)
class Bare:
    """The line's parts no label named, and what reading them adds to: the field asked
    (``first``; None at the opening or the read-back), the labelled answers found so far
    (``labelled``: (part index, field id, raw text, key sent)), the fields they name, the plan."""

    first: str | None
    parts: list[tuple[int, str]]
    labelled: list[tuple[int, str, str, str]]
    named: set[str]
    plan: Plan
    gathering: bool = True  # False: a bare answer is not used for any question (the form moved on)
    words: str = ""  # the whole line


def slots_of(state: GuidedState, snap: Snapshot, *, answered: bool) -> list[Slot]:
    """The fields a line may answer: applicable and open (every field before the form starts),
    and the answered ones too when ``answered`` (the line corrects something)."""
    compiled, ev = snap.compiled, snap.maybe_ev
    out = []
    for f in compiled.fields:
        if f.source == "host":
            continue  # a field that applies only once this line's answers are in ("train, ticket ref …")
            # or a later step's ("… and drove") is taken as volunteered early (held if it never applies)
        status = ev.status[f.order] if ev is not None else EMPTY
        is_answered = status in (FILLED, HELD)
        if is_answered and not answered:
            continue
        out.append(Slot(f.id, f.label, state.kind(compiled, f.id), is_answered))
    return out


def names_a_field(state: GuidedState, snap: Snapshot, text: str) -> bool:
    """Do these words name a field in everyday words ("the return date's wrong")?"""
    return named_field(text, everyday_names(slots_of(state, snap, answered=True))) is not None


def read_bare(state: GuidedState, snap: Snapshot, bare: Bare) -> list[tuple[int, str]]:
    """Read the bare parts: the act first, then the answers. Returns the parts still to place
    the usual way (bare answers for the asked question and the step's next ones, in order)."""
    if not bare.gathering:
        return bare.parts
    # The line as written when nothing in it was labelled ("…letters; she needs advice …" keeps its
    # semicolon), else its bare parts, a line each.
    text = bare.words.strip() if bare.words and not bare.labelled else "\n".join(s for _, s in bare.parts)
    rest = _act(state, snap, bare, text)
    if rest is None:
        return []
    found, correcting = _answers_given(state, snap, bare, rest)
    first, compiled, plan, index = bare.first, snap.compiled, bare.plan, bare.parts[0][0]
    if not found.values and (first is None or first in bare.named):
        return bare.parts  # nothing for any question: read as before (a labelled line, the read-back)
    if found.values and correcting:
        return []  # "Actually I've found it, my new mobile is …": the rest is about the correction
    if first is None or first in found.values or first in bare.named:
        plan.unplaced.extend(c for c in found.rest if _says_something(c))
        return []
    if _describes(state, compiled, first):
        value = _description(rest, found)
        if not value:
            return [] if found.values else bare.parts  # "Oh hello!" is asked again; "yes" alone is as written
        bare.labelled.append((index, first, value, ""))
        bare.named.add(first)
        return []
    if not found.values and _other_option(state, compiled, first, text):
        bare.labelled.append((index, first, "other", ""))
        bare.named.add(first)
        plan.notes.append(f'I\'ve put {compiled.field_by_id[first].label} as "other" ("{text}").')
        return []
    if found.values:
        # The asked question takes its part of what is left; for a name or a place, the first
        # part that says something, and the others are said back.
        left = [c for c in found.rest if _says_something(c)]
        if left and state.kind(compiled, first).name == "text" and not state.kind(compiled, first).pattern:
            plan.unplaced.extend(left[1:])
            left = left[:1]
        return _asked_reads(state, snap, first, [(index, ", ".join(left))] if left else [], bare)
    return _asked_reads(state, snap, first, bare.parts, bare)


def _act(state: GuidedState, snap: Snapshot, bare: Bare, text: str) -> str | None:
    """What the line does (intent.py): a question back, a pause, not knowing or refusing are
    settled here (None: nothing more to read); an answer returns the words that may hold values."""
    compiled, plan, first = snap.compiled, bare.plan, bare.first
    act = read_act(text, everyday_names(slots_of(state, snap, answered=True)))
    about = act.about if act.about in compiled.field_by_id else None
    target = about or first
    if act.kind == ASK and target is not None:
        plan.asked_back = (target, act.why)
        return None
    if act.kind == ASIDE and first is not None:
        plan.notes.append("Take your time.")  # "hang on, let me check": the answer is coming
        return None
    if act.kind in (REFUSE, UNKNOWN, DEFER) and target is not None and not _answers(state, compiled, target, text):
        _not_given(state, snap, plan, target, act.kind)
        return None
    return act.rest or text


def _answers_given(state: GuidedState, snap: Snapshot, bare: Bare, rest: str) -> tuple[Gathered, bool]:
    """Every answer the words give, each to the field it names (gather.py), added to the line's
    labelled answers in the form's order; and whether the line corrects something."""
    compiled, first = snap.compiled, bare.first
    changed = (
        first is not None and _asks_if_changed(state, compiled, first) and not _answers(state, compiled, first, rest)
    )
    # No question asked (the read-back, a step held on a check): every value the words give is
    # a change to an answer given ("the meals were 35"), as after "actually".
    correcting = changed or first is None or _CORRECTING.search(rest) is not None
    slots = [s for s in slots_of(state, snap, answered=correcting) if s.id not in bare.named]
    found = gather(rest, first, slots)
    _choices_named(state, compiled, first, slots, found)
    _drop_unchanged(snap, found)
    index = bare.parts[0][0]
    if changed and first is not None and (found.values or _CHANGE_SAID.search(rest)):
        # "Only my phone number, it's now 07700 900888" at "Have their details changed?": yes,
        # and the new number corrects the phone.
        bare.labelled.append((index, first, "yes", ""))
        bare.named.add(first)
    for field_id, raw in sorted(found.values.items(), key=lambda kv: compiled.field_by_id[kv[0]].order):
        bare.labelled.append((index, field_id, raw, ""))
        bare.named.add(field_id)
    if found.values and first is not None and first not in bare.named and state.kind(compiled, first).name == "boolean":
        opens = yes_no(rest)[0]  # "Yes, new phone 07700 900555" at "Details changed?": the yes answers it
        if opens is not None:
            bare.labelled.append((index, first, "yes" if opens else "no", ""))
            bare.named.add(first)
    return found, correcting


def _answers(state: GuidedState, compiled: CompiledForm, field_id: str, text: str) -> bool:
    """Do the words answer a yes/no or a choice question as they are ("no thanks", "No, this is
    my first time")?"""
    return reads_as(state.kind(compiled, field_id), text)


def reads_as(kind: Kind, text: str) -> bool:
    """Do ``text``'s words answer a yes/no or a choice question as they are ("no thanks")?"""
    if kind.name not in ("boolean", "choice"):
        return False
    try:
        convert(kind, text)
    except UnreadableAnswer:
        return False
    return True


def _choices_named(
    state: GuidedState, compiled: CompiledForm, first: str | None, slots: list[Slot], found: Gathered
) -> None:
    """A clause that names an option of exactly one other open choice ("drove", "I flew to
    Edinburgh on …", "I've not been here before", by the option or the author's aliases, word
    for word: a near miss is read only at its own question) answers that choice. A clause that
    answered nothing else is used up; one that did is still read for the choice."""
    if first is not None and state.kind(compiled, first).name in ("boolean", "choice"):
        return  # "No, nothing's changed": the question asked reads its own yes or no
    choices = [s for s in slots if s.kind.name == "choice" and not s.answered and s.id not in found.values]
    for clause in [*found.rest, *dict.fromkeys(found.sources.values())]:
        if len(clause.split()) > 12:
            continue
        reads = [s for s in choices if s.id not in found.values and _names_option(s.kind, clause)]
        if len(reads) == 1 and _answers(state, compiled, reads[0].id, clause):
            found.values[reads[0].id] = clause
            found.sources[reads[0].id] = clause
            if clause in found.rest:
                found.rest.remove(clause)


def _names_option(kind: Kind, clause: str) -> bool:
    """Does ``clause`` hold an option of ``kind``, or one of its aliases, as whole words?"""
    names = [str(o) for o in kind.options] + [a for _, aliases in getattr(kind, "aliases", ()) for a in aliases]
    words = _folded(clause)
    # "yes", "no", "never" answer the choice's own question only, not a line about something else.
    return any(f" {_folded(n).strip()} " in words for n in names if _folded(n).strip() not in _YES_NO)


_YES_NO = frozenset({"", "yes", "no", "yep", "nope", "yeah", "nah", "never", "again", "i have"})


def _folded(text: str) -> str:
    """Lower-case words without apostrophes, spaced at both ends ("I've" is "ive")."""
    return " " + " ".join(re.findall(r"[a-z0-9]+", text.lower().replace("'", "").replace("\u2019", ""))) + " "


def _asks_if_changed(state: GuidedState, compiled: CompiledForm, field_id: str) -> bool:
    """Is this a yes/no question about whether something changed ("Details changed")?"""
    f = compiled.field_by_id[field_id]
    about = f"{f.label} {f.ask or ''}".lower()
    return state.kind(compiled, field_id).name == "boolean" and "chang" in about


def _other_option(state: GuidedState, compiled: CompiledForm, field_id: str, text: str) -> bool:
    """A choice with an "other" option, answered with words that name none of the others ("Citizens
    Advice sent me here" for a referral): the answer is "other", said back with the words."""
    kind = state.kind(compiled, field_id)
    if kind.name != "choice" or "other" not in [str(o).lower() for o in kind.options]:
        return False
    if len(text.split()) < 2 or any(ch.isdigit() for ch in text) or "?" in text:
        return False
    return not _answers(state, compiled, field_id, text)


def _not_given(state: GuidedState, snap: Snapshot, plan: Plan, field_id: str, act: str) -> None:
    """Not knowing, refusing or putting off: an optional question is left out (an answer in force
    is retracted); a required one is put off (asked after the others), or said to be needed."""
    field = snap.compiled.field_by_id[field_id]
    status = snap.ev.status[field.order] if snap.maybe_ev is not None else EMPTY
    if not field.required:
        if status != EMPTY:
            plan.retract.append(field_id)
        state.skipped.add(field_id)
        if state.focus == field_id:
            state.focus = None
        plan.notes.append(f"Left out {field.label}.")
        return
    if act == DEFER and _others_open(state, snap, field_id):
        state.deferred.add(field_id)
        plan.notes.append(f"No problem, we'll come back to {field.label}.")
        return
    plan.needed = field_id
    state.focus = field_id


def _others_open(state: GuidedState, snap: Snapshot, field_id: str) -> bool:
    """Is another question of the open step still to ask (so one can be put off)?"""
    if snap.maybe_view is None:
        return False
    return any(r.ask and r.id != field_id and r.id not in state.skipped for r in snap.view.fields)


def _drop_unchanged(snap: Snapshot, found: Gathered) -> None:
    """A value given again for an answered field, as it stands, is no correction: its clause
    goes back to the question asked."""
    if snap.maybe_ev is None:
        return
    for field_id in list(found.values):
        f = snap.compiled.field_by_id[field_id]
        if snap.ev.status[f.order] not in (FILLED, HELD) or field_id not in snap.ev.values:
            continue
        held = snap.ev.values[field_id]
        raw = found.values[field_id]
        if str(held).strip().lower() == raw.strip().lower() or _same_reading(held, raw):
            found.rest.append(found.sources.pop(field_id, raw))
            del found.values[field_id]


def _same_reading(held: FieldValue, raw: str) -> bool:
    try:
        from datetime import date

        if isinstance(held, date):
            return convert_date(raw) == held.isoformat()
        if isinstance(held, (int, float)):
            return float(re.sub(r"[^\d.]", "", raw) or "nan") == float(held)
    except (UnreadableAnswer, ValueError):
        return False
    return False


def convert_date(raw: str) -> str:

    return str(convert(Kind("date"), raw))


def _describes(state: GuidedState, compiled: CompiledForm, field_id: str) -> bool:
    """A free-text question about something to describe (needs, a purpose), not a name or a place."""
    kind = state.kind(compiled, field_id)
    if kind.name != "text" or kind.pattern:
        return False
    f = compiled.field_by_id[field_id]
    words = set(re.findall(r"[a-z]+", f"{f.label} {f.id}".lower()))
    return not any(w in words for w in _NAMING)


def _description(text: str, found: Gathered) -> str:
    """Every sentence and line of a description, less the clauses that answered other questions,
    the remark words before it ("Oh, well, ...") and a closing "thanks"."""
    for source in found.sources.values():
        text = text.replace(source, " ")
    lines = []
    for line in text.splitlines():
        line = re.sub(r"\s+([,;.])", r"\1", " ".join(line.split())).strip(" ,;")
        if _says_something(line):
            lines.append(line)
    value = "\n".join(lines).strip()
    value = re.sub(r"^(?:(?:oh|well|um|er|erm|so|ok|okay|right|hi|hello),?\s+)+", "", value, flags=re.IGNORECASE)
    if len(value.split()) <= 8 and "\n" not in value:
        value = _FOR_LEAD.sub("", value, count=1)  # "It was for a client meeting": a client meeting
    return value[:1].upper() + value[1:] if value and value[0].islower() and found.values else value


def _says_something(clause: str) -> bool:
    words = re.findall(r"[a-z0-9]+", clause.lower().replace("'", ""))
    return bool(words) and not all(w in _REMARKS for w in words)


def _asked_reads(
    state: GuidedState, snap: Snapshot, first: str, parts: list[tuple[int, str]], bare: Bare
) -> list[tuple[int, str]]:
    """The parts left for the asked question, read as a natural answer (natural.py): what fits a
    field for sure is placed, a name or a place takes the plain part, the rest is said back."""
    if not parts:
        return []
    ev, compiled, plan = snap.maybe_ev, snap.compiled, bare.plan
    if ev is None:
        return parts
    kinds = {
        f.id: state.kind(compiled, f.id)
        for f in compiled.fields
        if f.id not in bare.named and ev.applicable[f.order] and ev.status[f.order] in (EMPTY, INVALID)
    }
    kinds[first] = state.kind(compiled, first)
    index, segment = parts[0]
    taken_back = meant(segment)  # "Leeds, no wait, York": the answer is York
    if taken_back != segment:
        segment = taken_back
        parts = [(index, segment), *parts[1:]]
    if not _describes(state, compiled, first) and kinds[first].name == "text" and not kinds[first].pattern:
        # A name or a place with a remark after a dash or in brackets ("Dana Reeve — but my badge
        # says D. Reeve"): the name, and the remark said back.
        hedged = _HEDGE.sub("", segment).strip()  # "Leeds, I think?": Leeds
        if hedged and hedged != segment:
            segment = hedged
            parts = [(index, segment), *parts[1:]]
        m = _ASIDE_DASH.search(segment)
        if m is not None and segment[: m.start()].strip() and segment[m.end() :].strip(" ()"):
            plan.unplaced.append(segment[m.end() :].strip(" ()"))
            segment = segment[: m.start()].strip()
            parts = [(index, segment), *parts[1:]]
    others = frozenset(
        name.lower().replace("_", " ") for f in compiled.fields if f.id != first for name in (f.id, f.label)
    )
    placed = place(segment, first, kinds, others, alone=len(parts) == 1 and not bare.labelled)
    if placed is None:
        return parts
    for field_id, raw in placed.values.items():
        bare.labelled.append((index, field_id, raw, ""))
        bare.named.add(field_id)
    plan.unplaced.extend(placed.leftover)
    return parts[1:]
