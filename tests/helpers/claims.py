"""A generated store of travel claims whose figures are known in advance (``formctl stats`` tests,
``benchmarks/desk.py``).

Each claim follows a plan drawn from a seeded random generator: complete (some over the cap,
approved after a wait), abandoned or left open at a chosen step, or waiting for Finance; some
staff ids and emails refused before a good one, some totals and destinations corrected, some
purposes changed and then undone. :func:`generate` builds the instances directly (their times
chosen, not the clock's) and hands them to the store whole (``import_instances``, as ``store
copy`` does), and counts the *truth* from the plans, never from the instances.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from formctl.forms.instance import DISPATCH_FAILED, DISPATCH_OK, DispatchState, Entry, FieldLog, Instance, Provenance

STEPS = {
    "claimant": ["full_name", "staff_id", "email"],
    "trip": ["destination", "departure_date", "return_date", "purpose"],
    "travel": ["mode"],  # then mileage + mileage_cost (car) or ticket_reference
    "costs": ["accommodation", "meals", "total"],
}
STAFF_ID_ERROR = "String should match pattern '^[A-Z]{2}\\d{4}$'"
EMAIL_ERROR = "value is not a valid email address: An email address must have an @-sign."
BASE = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


def iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class Truth:
    by_status: Counter[str] = field(default_factory=Counter)
    stopped: Counter[tuple[str, str]] = field(default_factory=Counter)  # (step or END, open|waiting|abandoned)
    complete_seconds: list[float] = field(default_factory=list)
    refused: Counter[str] = field(default_factory=Counter)
    messages: Counter[tuple[str, str]] = field(default_factory=Counter)
    corrected: Counter[str] = field(default_factory=Counter)
    undone: Counter[str] = field(default_factory=Counter)
    waits: dict[str, list[float]] = field(default_factory=dict)  # outcome -> seconds


class _Claim:
    """One claim being written: revisions appended at a ticking clock."""

    def __init__(self, n: int, created: datetime) -> None:
        self.n, self.t = n, created
        self.created = created
        self.entries: dict[str, list[Entry]] = {}
        self.cursor: dict[str, int] = {}
        self.dispatches: dict[str, DispatchState] = {}
        self.seq = 0

    def put(self, field_id: str, value: Any, error: str | None = None, step: float = 30.0) -> None:
        self.t += timedelta(seconds=step)
        self.seq += 1
        prov = Provenance("chat", "agent", iso(self.t), kind="said")
        log = self.entries.setdefault(field_id, [])
        log.append(Entry(self.seq, value, prov, error))
        self.cursor[field_id] = len(log) - 1

    def act(self, iid: str, key: str, record: DispatchState) -> None:
        self.dispatches[f"{iid}:{key}"] = record


def _values(rng: random.Random, n: int) -> dict[str, Any]:
    mode = rng.choice(["car", "rail", "air"])
    name = "María López" if n % 97 == 0 else f"Claimant {n:04d}"
    values: dict[str, Any] = {
        "full_name": name,
        "staff_id": f"AB{n % 10000:04d}",
        "email": f"{name.lower().replace(' ', '.')}@example.org",
        "destination": rng.choice(["Leeds", "York", "Bristol", "Glasgow"]),
        "departure_date": "2026-03-02",
        "return_date": "2026-03-04",
        "purpose": "client visit",
        "mode": mode,
    }
    if mode == "car":
        values |= {"mileage": 100, "mileage_cost": 45.0}
    else:
        values["ticket_reference"] = f"TR-{n:05d}"
    return values


def _order(values: dict[str, Any]) -> list[str]:
    travel = ["mode", "mileage", "mileage_cost"] if values["mode"] == "car" else ["mode", "ticket_reference"]
    return [*STEPS["claimant"], *STEPS["trip"], *travel, "accommodation", "meals", "total"]


def _one(rng: random.Random, n: int, truth: Truth) -> Instance:
    from formctl.store.ids import new_instance_id

    iid = new_instance_id()
    claim = _Claim(n, BASE + timedelta(minutes=10 * n))
    values = _values(rng, n)
    fate = rng.choices(["complete", "abandoned", "active", "awaiting"], [55, 22, 13, 10])[0]
    order = _order(values)
    over_cap = fate == "awaiting" or (fate == "complete" and rng.random() < 0.3)
    values |= {"accommodation": 240.0, "meals": 45.5, "total": 900.0 if over_cap else 285.5}
    if fate in ("abandoned", "active"):
        stop = rng.choice(list(STEPS))
        required = [f for f in STEPS[stop] if f not in ("accommodation", "meals")]
        last = order.index(required[0]) + rng.randrange(len(required))  # at least one required one missing
        answered = order[:last]
        truth.stopped[(stop, "abandoned" if fate == "abandoned" else "open")] += 1
    else:
        answered = order
        if fate == "awaiting":
            truth.stopped[("(all answered)", "waiting")] += 1
    for field_id in answered:
        _answer(rng, claim, iid, field_id, values[field_id], truth)
    status, blocked, completed = _finish(rng, claim, iid, fate, over_cap, truth)
    truth.by_status[status] += 1
    instance = Instance(
        id=iid,
        def_id="travel-claim",
        def_version=1,
        subject=values["full_name"],
        status=status,
        entries={f: FieldLog(tuple(log), claim.cursor[f]) for f, log in claim.entries.items()},
        revision_seq=claim.seq,
        dispatches=claim.dispatches,
        blocked_on=blocked,
        created_at=iso(claim.created),
        updated_at=iso(claim.t),
        completed_at=completed,
    )
    instance.version = claim.seq + len(claim.dispatches) + 1
    return instance


def _answer(rng: random.Random, claim: _Claim, iid: str, field_id: str, value: Any, truth: Truth) -> None:
    if field_id == "staff_id" and rng.random() < 0.2:
        claim.put(field_id, value.lower(), STAFF_ID_ERROR)
        truth.refused[field_id] += 1
        truth.messages[(field_id, STAFF_ID_ERROR)] += 1
    if field_id == "email" and rng.random() < 0.1:
        claim.put(field_id, value.replace("@", " at "), EMAIL_ERROR)
        truth.refused[field_id] += 1
        truth.messages[(field_id, EMAIL_ERROR)] += 1
    if field_id in ("destination", "total") and rng.random() < 0.12:
        claim.put(field_id, "Leds" if field_id == "destination" else 1.0)
        truth.corrected[field_id] += 1  # the right value below replaces an accepted one
    claim.put(field_id, value)
    if field_id == "purpose" and rng.random() < 0.1:
        claim.put(field_id, "conference")  # changed, then undone: the first value is back in force
        truth.corrected[field_id] += 1
        claim.t += timedelta(seconds=5)
        claim.cursor[field_id] -= 1
        detail = "purpose: conference → client visit"
        claim.act(
            iid, "act:undo:1", DispatchState("act:undo", DISPATCH_OK, 1, iso(claim.t), actor="agent", detail=detail)
        )
        truth.undone[field_id] += 1


def _finish(
    rng: random.Random, claim: _Claim, iid: str, fate: str, over_cap: bool, truth: Truth
) -> tuple[str, str | None, str | None]:
    if fate == "awaiting":
        return "awaiting", "policy-cap", None
    if fate != "complete":
        return fate, None, None
    if over_cap:
        wait = float(rng.randrange(600, 3 * 86400))
        claim.t += timedelta(seconds=wait)
        rejected = rng.random() < 0.25
        record = DispatchState(
            "checkpoint:policy-cap",
            DISPATCH_FAILED if rejected else DISPATCH_OK,
            1,
            iso(claim.t),
            error="needs pre-approval" if rejected else None,
            actor="finance",
            reason="needs pre-approval" if rejected else "within budget",
        )
        claim.act(iid, "checkpoint:policy-cap:1:resolved:1", record)
        truth.waits.setdefault("rejected" if rejected else "approved", []).append(wait)
        if rejected:
            truth.stopped[("(all answered)", "open")] += 1
            return "active", None, None
    claim.t += timedelta(seconds=rng.randrange(20, 600))
    truth.complete_seconds.append((claim.t - claim.created).total_seconds())
    return "complete", None, iso(claim.t)


def generate(adapter: Any, count: int, *, seed: int = 42, batch: int = 500) -> Truth:
    """``count`` claims into ``adapter`` (imported whole, ``batch`` at a time); what they hold."""
    rng = random.Random(seed)
    truth = Truth()
    pending: list[Instance] = []
    for n in range(count):
        pending.append(_one(rng, n, truth))
        if len(pending) >= batch:
            _import(adapter, pending)
    _import(adapter, pending)
    return truth


def _import(adapter: Any, pending: list[Instance]) -> None:
    if pending:
        results = adapter.import_instances(pending)
        assert all(outcome == "copied" for outcome, _ in results), results[:3]
        pending.clear()
