"""Framing of the per-instance journal: self-checking, append-only JSON lines.

A journal line is ``<crc32 of the JSON, 8 hex digits> <JSON>\\n``. The checksum and the
newline make every line self-checking, so a line cut short by a crash (power lost in the
middle of an append: a partial line, or a run of zero bytes where the file grew but its
data never reached the disk) is told apart from a written one. Only a line whose append
was fsynced was ever acknowledged, so:

* damage at the *tail* (nothing valid after it) is a torn, unacknowledged append: it is
  ignored by readers and cut off by the next writer before it appends;
* damage *followed by* a valid line cannot come from a crash (appends are sequential and
  each one is synced before the next starts), so it is corruption: reported, never
  repaired or overwritten. The records before it still read; those after it cannot be
  applied (each builds on the one before), but their version stamps say what was lost.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from typing import Any

_HEX = frozenset(b"0123456789abcdef")


def frame(record: dict[str, Any]) -> bytes:
    """One journal line for ``record``."""
    body = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return b"%08x %s\n" % (zlib.crc32(body), body)


@dataclass(frozen=True, slots=True)
class JournalDamage:
    """A damaged line with valid lines after it: corruption, not a torn append."""

    offset: int
    line_number: int
    reason: str

    def __str__(self) -> str:
        return f"line {self.line_number} (byte {self.offset}) is damaged: {self.reason}"


@dataclass(slots=True)
class Scan:
    """What a journal's bytes hold: the valid records up to the first damaged line, where
    that valid part ends, and (when a valid line follows a damaged one) the damage and the
    valid records after it."""

    records: list[dict[str, Any]] = field(default_factory=list)
    valid_end: int = 0  # absolute offset just past the last valid line before any damage
    damage: JournalDamage | None = None
    after: list[dict[str, Any]] = field(default_factory=list)


def _parse_line(line: bytes) -> tuple[dict[str, Any] | None, str]:
    """The record in one complete line (without its newline), or None and why not."""
    if len(line) < 10 or line[8:9] != b" " or not _HEX.issuperset(line[:8]):
        return None, "no checksum"
    body = line[9:]
    if int(line[:8], 16) != zlib.crc32(body):
        return None, "checksum mismatch"
    try:
        record = json.loads(body)
    except (UnicodeDecodeError, ValueError):
        return None, "not valid JSON"
    if not isinstance(record, dict):
        return None, "not a JSON object"
    return record, ""


def scan(data: bytes, *, start: int = 0, first_line_number: int = 1) -> Scan:
    """Parse journal bytes that begin at absolute offset ``start`` (a line boundary).

    A damaged line with a valid line after it is reported in ``damage``; a damaged tail
    (nothing valid after it) is a torn append and is left out silently.
    """
    result = Scan(valid_end=start)
    pos = 0
    line_number = first_line_number
    damaged: tuple[int, int, str] | None = None
    while pos < len(data):
        end = data.find(b"\n", pos)
        if end < 0:
            break  # an unterminated tail: torn
        record, reason = _parse_line(data[pos:end])
        if record is None:
            if damaged is None:
                damaged = (start + pos, line_number, reason)
        elif damaged is not None:
            if result.damage is None:
                result.damage = JournalDamage(*damaged)
            result.after.append(record)
        else:
            result.records.append(record)
            result.valid_end = start + end + 1
        pos = end + 1
        line_number += 1
    return result
