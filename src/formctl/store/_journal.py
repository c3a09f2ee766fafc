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
  repaired or overwritten.
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


class JournalDamage(Exception):
    """A damaged line with valid lines after it: corruption, not a torn append."""

    def __init__(self, offset: int, line_number: int, reason: str) -> None:
        super().__init__(f"line {line_number} (byte {offset}) is damaged: {reason}")
        self.offset = offset
        self.line_number = line_number
        self.reason = reason


@dataclass(slots=True)
class Scan:
    """What a journal's bytes hold: the valid records, and where the valid part ends."""

    records: list[dict[str, Any]] = field(default_factory=list)
    valid_end: int = 0  # absolute offset just past the last valid line
    torn_bytes: int = 0  # bytes after valid_end (a torn append), ignored


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

    Raises :class:`JournalDamage` for a damaged line that has a valid line after it.
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
        else:
            if damaged is not None:
                raise JournalDamage(*damaged)
            result.records.append(record)
            result.valid_end = start + end + 1
        pos = end + 1
        line_number += 1
    result.torn_bytes = start + len(data) - result.valid_end
    return result
