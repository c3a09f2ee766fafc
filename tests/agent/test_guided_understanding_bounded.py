"""Bounded reading of what a line does and the answers it gives (issue 37): the act
(intent.read_act), the clauses placed on fields (gather.gather) and the everyday names of fields
take well under a second on pathological 10,000-character lines, the shapes that make a
backtracking pattern or a quadratic scan blow up. The figures are in benchmarks/guided.py."""

from __future__ import annotations

import time

import pytest

from formctl.agent.models.guided.answers import Kind
from formctl.agent.models.guided.gather import Slot, everyday_names, gather
from formctl.agent.models.guided.intent import read_act

N = 10_000
LINES = {
    "letters and spaces": ("advice about a debt letter from the council " * 300)[:N],
    "one long word": "a" * N,
    "spaces": "a" + " " * (N - 5) + "not",
    "digits": "1" * N,
    "digit comma": "1," * (N // 2),
    "digit dot": "1." * (N // 2),
    "digit slash": "1/" * (N // 2),
    "pounds": "£1 " * (N // 3),
    "ranges": "to 1 " * (N // 5),
    "cues": "went to " * (N // 8),
    "for the": "for the " * (N // 8),
    "capitals": "Ab " * (N // 3),
    "references": "AB1234 " * (N // 7),
    "phone digits": "07700 900982 " * (N // 13),
    "commas": "Oh, " * (N // 4),
    "questions": "why? " * (N // 5),
    "mixed": ("Hi! I'm Grace Okafor, 45, g@x.org, 07700 900982, went down on 5 March 2026, £12.40. " * 120)[:N],
}
SLOTS = [
    Slot("full_name", "Full name", Kind("text")),
    Slot("staff_id", "Staff ID", Kind("text", pattern=r"^[A-Z]{2}\d{4}$")),
    Slot("email", "Work email", Kind("email")),
    Slot("phone", "Phone", Kind("phone")),
    Slot("destination", "Destination", Kind("text")),
    Slot("departure_date", "Departure date", Kind("date")),
    Slot("return_date", "Return date", Kind("date")),
    Slot("purpose", "Purpose of trip", Kind("text")),
    Slot("mode", "Mode", Kind("choice", ("car", "rail", "air"))),
    Slot("mileage", "Miles driven", Kind("integer")),
    Slot("ticket_reference", "Ticket reference", Kind("text")),
    Slot("total", "Total claimed", Kind("number")),
]
NAMES = everyday_names(SLOTS)


@pytest.mark.parametrize("name", sorted(LINES))
@pytest.mark.parametrize("asked", ["full_name", "total", None])
def test_reading_a_pathological_line_takes_under_a_second(name, asked):
    line = LINES[name]
    started = time.perf_counter()
    read_act(line, NAMES)
    gather(line, asked, SLOTS)
    assert time.perf_counter() - started < 1.0, name
