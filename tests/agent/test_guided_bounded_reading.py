"""Bounded reading (issue 37): no reader of a person's words takes long on any line. Every reader
is fed pathological 10,000-character lines (the shapes that make a backtracking pattern blow up:
letters and spaces without punctuation, runs of one sign, digits with separators, near-addresses)
and the test fails when one takes more than a second. The figures are in benchmarks/guided.py."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import date
from typing import Any

import pytest

from formctl.agent.models.guided import natural
from formctl.agent.models.guided.answers import declines
from formctl.agent.models.guided.values import (
    Kind,
    ReadingContext,
    UnreadableAnswer,
    confirmation,
    find_by_shape,
    read_value,
    yes_no,
)
from formctl.agent.models.guided.words import command_key, segments
from formctl.forms import quotes

N = 10_000
LINES = {
    "letters and spaces": ("advice about a debt letter from the council " * 300)[:N],
    "one long word": "a" * N,
    "letter space": "a " * (N // 2),
    "digits": "1" * N,
    "digit space": "1 " * (N // 2),
    "digit comma": "1," * (N // 2),
    "digit dot": "1." * (N // 2),
    "digit slash": "1/" * (N // 2),
    "at signs": "a@" * (N // 2),
    "dots": "a." * (N // 2),
    "dashes": "a-" * (N // 2),
    "pounds": "£1 " * (N // 3),
    "months": "3 March " * (N // 8),
    "weekdays": "Monday the " * (N // 11),
    "number words": "forty one " * (N // 10),
    "yes words": "yes " * (N // 4),
    "not": "not " * (N // 4),
    "references": "AB1234 " * (N // 7),
    "phone digits": "07700 900982 " * (N // 13),
    "labels": "Staff ID: " * (N // 10),
    "commas": "Oh, " * (N // 4),
    "mixed": ("Hi! I'm Grace, 45, g@x.org, 07700 900982, 5 March 2026, £12.40; the next day. " * 200)[:N],
}
CTX = ReadingContext("en-GB", date(2026, 3, 19))
KINDS = {
    "integer": Kind("integer"),
    "number": Kind("number"),
    "boolean": Kind("boolean"),
    "date": Kind("date"),
    "email": Kind("email"),
    "phone": Kind("phone"),
    "reference": Kind("reference"),
    "pattern": Kind("text", pattern=r"^[A-Z]{2}\d{4}$"),
    "choice": Kind("choice", ("car", "rail", "air"), aliases=(("rail", ("train", "by train")),)),
    "text": Kind("text"),
}


def _readers() -> dict[str, Callable[[str], Any]]:
    readers: dict[str, Callable[[str], Any]] = {f"read_value {k}": _reader(kind) for k, kind in KINDS.items()}
    others = frozenset({"staff id", "work email", "email"})
    readers.update(
        {
            "find_by_shape": lambda t: find_by_shape(t, KINDS, CTX, asked="text"),
            "yes_no": yes_no,
            "confirmation": confirmation,
            "declines": declines,
            "natural.place": lambda t: natural.place(t, "text", {"text": KINDS["text"]}, others, alone=False),
            "natural.place pattern": lambda t: natural.place(t, "pattern", KINDS, others),
            "natural.split_labels": lambda t: natural.split_labels(t, {"staff id": "staff_id", "email": "email"}),
            "command_key": command_key,
            "segments": segments,
            "quotes.is_yes": quotes.is_yes,
            "quotes.answer_value": lambda t: quotes.answer_value(t, date),
            "quotes.check_quote": lambda t: quotes.check_quote([quotes.PersonMessage(t, 1)], t[:200], 3, int),
        }
    )
    return readers


def _reader(kind: Kind) -> Callable[[str], Any]:
    def read(text: str) -> Any:
        try:
            return read_value(kind, text, CTX)
        except UnreadableAnswer:
            return None

    return read


@pytest.mark.parametrize("reader", sorted(_readers()))
def test_every_reader_reads_a_10000_character_line_in_under_a_second(reader):
    read = _readers()[reader]
    read("3 March 2026, £12.40, a@b.org, 07700 900982, yes")  # its libraries loaded: their import is not reading
    slow = []
    for name, line in LINES.items():
        start = time.perf_counter()
        read(line)
        took = time.perf_counter() - start
        if took > 1.0:
            slow.append(f"{name}: {took:.1f} s")
    assert not slow, f"{reader} is slow on: {', '.join(slow)}"
