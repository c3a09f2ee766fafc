"""Normalisation: two recordings of the same conversation must be the same file.

What varies between two runs of one conversation, and what it becomes:

- generated instance ids (``form_<time>_<random>``) → ``<instance>``;
- ISO timestamps (``2026-11-29T16:16:33.123Z``) → ``<time>`` (plain dates such as a
  departure date are answers, and are kept);
- tool-use ids (random ``toolu_…`` from a provider) → ``call_1``, ``call_2``, … in order of
  first appearance, so a replay that plays the recorded ids back maps them to themselves;
- the subject (whoever ran it) → ``<subject>`` where a value is exactly the subject.

The same :class:`Normaliser` is applied to the recording and to the replay before they
are compared, so the comparison never sees a volatile value.

Sensitive fields (``sensitive=True``) are masked: every value given to one is replaced,
wherever it appears (the person's text, the model's text, tool inputs and results, the
final state), by a *stand-in* of the same shape that the field still accepts (letters
become ``x``/``X``, digits ``1`` or ``9``: ``AB123456C`` → ``XX111111X``, a date stays a
date). A transcript therefore never holds the real value and still replays exactly: the
stand-in is what the replay types and fills. When no stand-in validates, the value
becomes ``<masked>``, and the transcript says which fields it masked (``masked = [...]``).
:func:`masker_for` gives the same masking for any other log (``.mask_text(line)``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from formctl.json_types import FieldValue, JsonValue

if TYPE_CHECKING:
    from formctl.forms.compile import CompiledForm
    from formctl.forms.instance import Instance

INSTANCE = "<instance>"
TIME = "<time>"
SUBJECT = "<subject>"
MASKED = "<masked>"

_INSTANCE_ID = re.compile(r"form_[0-9a-z]{1,16}_[0-9a-z]{6}")
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?")


class Normaliser:
    """Maps volatile values to stable ones; keeps its tool-id numbering across a whole transcript."""

    def __init__(self, subject: str | None = None) -> None:
        self.subject = subject
        self._tool_ids: dict[str, str] = {}
        self.masks: dict[str, str] = {}  # real text → stand-in (strings of 4+ characters are replaced inside text)
        # (type name, real leaf value) → stand-in, replaced whole
        self._exact_masks: dict[tuple[str, FieldValue], FieldValue] = {}
        # Real texts of 3 characters (a CVV): replaced inside text only as a whole token, not
        # glued to letters or digits, so "123" goes but "1234" stays. One or two characters
        # are replaced only when they are the whole text (a "12" token would hit dates).
        self.short_masks: dict[str, str] = {}
        self._short_pattern: re.Pattern[str] | None = None

    # -- tool ids -------------------------------------------------------------------

    def tool_id(self, raw: str) -> str:
        known = self._tool_ids.get(raw)
        if known is None:
            known = f"call_{len(self._tool_ids) + 1}"
            self._tool_ids[raw] = known
        return known

    # -- masking --------------------------------------------------------------------

    def add_mask(self, real: FieldValue, stand_in: FieldValue) -> None:
        if real is None or isinstance(real, bool) or real == stand_in:
            return
        key = (type(real).__name__, real) if not isinstance(real, (dict, list)) else None
        if key is None:
            return
        self._exact_masks[key] = stand_in
        text = str(real)
        if len(text) >= 4:
            self.masks[text] = str(stand_in)
        elif text.strip():
            self.short_masks[text] = str(stand_in)
            self._short_pattern = None

    def masker(self) -> Normaliser:
        """A normaliser that masks as this one does and normalises nothing else."""
        masker = Normaliser()
        masker.masks, masker._exact_masks, masker.short_masks = self.masks, self._exact_masks, self.short_masks
        return masker

    def mask_text(self, text: str) -> str:
        for real in sorted(self.masks, key=len, reverse=True):
            if real in text:
                text = text.replace(real, self.masks[real])
        if self.short_masks:
            whole = self.short_masks.get(text.strip())
            if whole is not None:
                return text.replace(text.strip(), whole)
            pattern = self._short_pattern
            if pattern is None:
                tokens = [t for t in self.short_masks if len(t) == 3]
                alternatives = "|".join(re.escape(t) for t in tokens) or r"(?!)"
                pattern = self._short_pattern = re.compile(rf"(?<![0-9A-Za-z])(?:{alternatives})(?![0-9A-Za-z])")
            text = pattern.sub(lambda m: self.short_masks[m.group(0)], text)
        return text

    # -- values ---------------------------------------------------------------------

    def text(self, value: str) -> str:
        if self.subject and value == self.subject:
            return SUBJECT
        return self._volatile(value)

    def _volatile(self, text: str) -> str:
        """``text`` with its instance ids, timestamps and sensitive values replaced (the subject is the caller's)."""
        # The cheap substring tests first: most strings hold neither, and this runs on
        # every string of every tool result of a replay.
        if "form_" in text:
            text = _INSTANCE_ID.sub(INSTANCE, text)
        if ":" in text:
            text = _TIMESTAMP.sub(TIME, text)
        if self.masks or self.short_masks:
            text = self.mask_text(text)
        return text

    def value(self, value: JsonValue) -> JsonValue:
        """A JSON value with every volatile or sensitive leaf normalised (a copy)."""
        if isinstance(value, (dict, list)) and not self._exact_masks:
            return self._json_value(value)
        return self._walk(value)

    def _json_value(self, value: JsonValue) -> JsonValue:
        """Normalise through the JSON text: one C-speed encode and decode instead of a Python walk."""
        try:
            text = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError):
            return self._walk(value)
        if self.subject:
            text = text.replace(json.dumps(self.subject, ensure_ascii=False), f'"{SUBJECT}"')
        return json.loads(self._volatile(text))

    def _walk(self, value: JsonValue) -> JsonValue:
        if isinstance(value, str):
            hit = self._exact_masks.get(("str", value))
            if hit is not None:
                return hit
            return self.text(value)
        if isinstance(value, dict):
            return {k: self._walk(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self._walk(v) for v in value]
        if isinstance(value, (int, float)) and not isinstance(value, bool) and self._exact_masks:
            return self._exact_masks.get((type(value).__name__, value), value)
        return value


# --------------------------------------------------------------------------- stand-ins


def _swap(text: str, lower: str, upper: str, digit: str) -> str:
    out = []
    for ch in text:
        if ch.isdigit():
            out.append(digit)
        elif ch.isalpha():
            out.append(upper if ch.isupper() else lower)
        else:
            out.append(ch)
    return "".join(out)


def stand_in(real: FieldValue, accepts: Callable[[FieldValue], bool]) -> FieldValue:
    """A same-shaped value the field still accepts, never the real one; ``<masked>`` if none is found."""
    if isinstance(real, bool):
        return MASKED
    candidates: Iterable[FieldValue]
    if isinstance(real, (int, float)):
        text = str(real)
        candidates = []
        for d in "19":
            swapped = _swap(text, "x", "X", d)
            try:
                candidates.append(type(real)(swapped))
            except ValueError:
                pass
    elif isinstance(real, str):
        candidates = [_swap(real, lo, up, d) for lo, up, d in (("x", "X", "1"), ("x", "X", "9"), ("a", "A", "1"))]
    else:
        return MASKED
    candidates = list(candidates)
    if candidates and candidates[0] == real:
        return real  # already a stand-in (a replay of a masked transcript): masking is idempotent
    for candidate in candidates:
        if candidate != real and accepts(candidate):
            return candidate
    return MASKED


def _leaves(value: FieldValue) -> list[FieldValue]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def _swap_tree(value: FieldValue, lower: str, upper: str, digit: str) -> FieldValue:
    if isinstance(value, dict):
        return {k: _swap_tree(v, lower, upper, digit) for k, v in value.items()}
    if isinstance(value, list):
        return [_swap_tree(v, lower, upper, digit) for v in value]
    if isinstance(value, str):
        return _swap(value, lower, upper, digit)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return type(value)(_swap(str(value), lower, upper, digit))
        except ValueError:
            return value
    return value


def _mask_tree(normaliser: Normaliser, real: FieldValue, accepts: Callable[[FieldValue], bool]) -> None:
    """Mask every leaf of a structured value (an object or a list) given to a sensitive field.

    The stand-in swaps every leaf at once, so the whole structure can still be validated
    (and replayed); each leaf is then masked wherever it appears. When no swap validates,
    the leaves become ``<masked>``.
    """
    chosen = None
    for lo, up, d in (("x", "X", "1"), ("x", "X", "9"), ("a", "A", "1")):
        candidate = _swap_tree(real, lo, up, d)
        if candidate == real:
            return  # already a stand-in: masking is idempotent
        if accepts(candidate):
            chosen = candidate
            break
    for leaf, stand in zip(_leaves(real), _leaves(chosen) if chosen is not None else _leaves(real)):
        if isinstance(leaf, (str, int, float)) and not isinstance(leaf, bool):
            normaliser.add_mask(leaf, stand if chosen is not None else MASKED)


def learn_masks(normaliser: Normaliser, compiled: CompiledForm, instance: Instance | None) -> set[str]:
    """Teach ``normaliser`` a stand-in for every value ever given to a sensitive field of ``instance``.

    Every revision counts (a rejected or corrected value was typed too). Returns the ids of
    the sensitive fields that had a value. A stand-in depends only on the value and the
    field, so every log masked this way agrees with the transcripts.
    """
    if instance is None:
        return set()
    seen: set[str] = set()
    for fld in compiled.fields:
        if not getattr(fld, "sensitive", False):
            continue
        log = instance.entries.get(fld.id)
        for rev in getattr(log, "revisions", ()) or ():
            value = getattr(rev, "value", None)
            if value is None:
                continue
            seen.add(fld.id)
            validator = fld.validator
            accepts = lambda v, validator=validator: bool(validator.validate(v).ok)  # noqa: E731
            if isinstance(value, (dict, list)):
                _mask_tree(normaliser, value, accepts)
            else:
                normaliser.add_mask(value, stand_in(value, accepts))
    return seen


def masker_for(compiled: CompiledForm, instance: Instance | None) -> Normaliser:
    """A normaliser that only masks: ``masker_for(compiled, instance).mask_text(line)`` for any log line."""
    masker = Normaliser()
    learn_masks(masker, compiled, instance)
    return masker
