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
from typing import Any, Callable, Iterable

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
        self.masks: dict[str, Any] = {}  # real text → stand-in (strings of 4+ characters are replaced inside text)
        self._exact_masks: dict[Any, Any] = {}  # short or non-string real values → stand-in, replaced whole only

    # -- tool ids -------------------------------------------------------------------

    def tool_id(self, raw: str) -> str:
        known = self._tool_ids.get(raw)
        if known is None:
            known = f"call_{len(self._tool_ids) + 1}"
            self._tool_ids[raw] = known
        return known

    # -- masking --------------------------------------------------------------------

    def add_mask(self, real: Any, stand_in: Any) -> None:
        if real is None or isinstance(real, bool) or real == stand_in:
            return
        key = (type(real).__name__, real) if not isinstance(real, (dict, list)) else None
        if key is None:
            return
        self._exact_masks[key] = stand_in
        text = str(real)
        if len(text) >= 4:
            self.masks[text] = str(stand_in)

    def mask_text(self, text: str) -> str:
        for real in sorted(self.masks, key=len, reverse=True):
            if real in text:
                text = text.replace(real, self.masks[real])
        return text

    # -- values ---------------------------------------------------------------------

    def text(self, value: str) -> str:
        if self.subject and value == self.subject:
            return SUBJECT
        # The cheap substring tests first: most strings hold neither, and this runs on
        # every string of every tool result of a replay.
        if "form_" in value:
            value = _INSTANCE_ID.sub(INSTANCE, value)
        if ":" in value:
            value = _TIMESTAMP.sub(TIME, value)
        if self.masks:
            value = self.mask_text(value)
        return value

    def value(self, value: Any) -> Any:
        """A JSON value with every volatile or sensitive leaf normalised (a copy)."""
        if isinstance(value, (dict, list)) and not self._exact_masks:
            return self._json_value(value)
        return self._walk(value)

    def _json_value(self, value: Any) -> Any:
        """Normalise through the JSON text: one C-speed encode and decode instead of a Python walk."""
        try:
            text = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError):
            return self._walk(value)
        if self.subject:
            text = text.replace(json.dumps(self.subject, ensure_ascii=False), f'"{SUBJECT}"')
        if "form_" in text:
            text = _INSTANCE_ID.sub(INSTANCE, text)
        if ":" in text:
            text = _TIMESTAMP.sub(TIME, text)
        if self.masks:
            text = self.mask_text(text)
        return json.loads(text)

    def _walk(self, value: Any) -> Any:
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


def stand_in(real: Any, accepts: Callable[[Any], bool]) -> Any:
    """A same-shaped value the field still accepts, never the real one; ``<masked>`` if none is found."""
    if isinstance(real, bool):
        return MASKED
    candidates: Iterable[Any]
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


def learn_masks(normaliser: Normaliser, compiled: Any, instance: Any) -> set[str]:
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
            if value is None or isinstance(value, (dict, list)):
                continue
            seen.add(fld.id)
            validator = fld.validator
            normaliser.add_mask(value, stand_in(value, lambda v, validator=validator: bool(validator.validate(v).ok)))
    return seen


def masker_for(compiled: Any, instance: Any) -> Normaliser:
    """A normaliser that only masks: ``masker_for(compiled, instance).mask_text(line)`` for any log line."""
    masker = Normaliser()
    learn_masks(masker, compiled, instance)
    return masker
