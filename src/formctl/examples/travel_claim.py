"""Travel reimbursement claim: the seed's example grown into a realistic four-step claim.

Steps: who is claiming; the trip; how they travelled (mileage only for a car); the
costs, with a total. Names, the staff id, the email and the amounts must come from the
claimant (``source="person"``): a model's value for them is stored only when the claimant's
own words hold it, and otherwise formctl asks the claimant. A total over the policy cap
(750) waits for Finance: the policy-cap checkpoint is blocking and has no run of its own, so the instance stays ``awaiting``
until someone runs ``formctl resolve ID`` (or ``--fail REASON``).

Answers that are each fine can still disagree: a step's ``on_complete`` checks them
against each other and returns ``Fail`` with a sentence the person reads. The check runs
again when an answer of its step changes, and the claim cannot be sent while it fails
(``review=True``: every answer is read back, and the person says "yes" to send it).
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Literal

from pydantic import EmailStr, Field

from formctl import Fail, Patch, define_form

POLICY_CAP = 750
MILEAGE_RATE = 0.45  # per mile


def _mileage_cost(ctx):
    """When the miles are known, derive the mileage cost, so the claimant never does the sum."""
    miles = ctx.values.get("mileage")
    if miles:
        return Patch({"mileage_cost": round(miles * MILEAGE_RATE, 2)})
    return None


def _pounds(amount):
    return f"£{amount:,.0f}" if amount == int(amount) else f"£{amount:,.2f}"


def _dates_in_order(ctx):
    """A return before the departure is a typo in one of the two dates: say which dates disagree."""
    departure, back = ctx.values.get("departure_date"), ctx.values.get("return_date")
    if departure and back and back < departure:
        return Fail(f"The return date ({back.isoformat()}) is before the departure date ({departure.isoformat()}).")
    return None


def _costs_within_total(ctx):
    """The parts of a claim can't come to more than its total (the cap is checked on the total)."""
    total = ctx.values.get("total")
    parts = (ctx.values.get("accommodation") or 0) + (ctx.values.get("meals") or 0)
    if total is not None and parts > total:
        return Fail(f"Accommodation and meals come to {_pounds(parts)}, more than the total claimed "
                    f"({_pounds(total)}).")
    return None


def _filed(ctx):
    """On completion a real deployment would file the claim; an executor replayed in CI skips outside calls."""
    return None


travel_claim = (
    define_form(
        "travel-claim",
        version=1,
        review=True,
        name="Travel reimbursement claim",
        description="Claimant, trip, travel and approval details.",
        conduct=(
            "Conversational: one or two questions at a time. Don't read the field list aloud. "
            "If the user volunteers something out of order, capture it."
        ),
    )
    .step("claimant", title="Claimant", preview="name, staff id, email")
    .field("full_name", Annotated[str, Field(min_length=2)], label="Full name",
           ask="Their full legal name, as on their payslip.", source="person")
    .field("staff_id", Annotated[str, Field(pattern=r"^[A-Z]{2}\d{4}$")], label="Staff ID",
           hint="Two capital letters and four digits, like AB1234.", source="person")
    .field("email", EmailStr, label="Work email", source="person")
    .step("trip", title="Trip", preview="destination, dates, purpose",
          when=lambda v, s: s.step_complete("claimant"), on_complete=_dates_in_order)
    .field("destination", Annotated[str, Field(min_length=2)], label="Destination")
    .field("departure_date", date, label="Departure date")
    .field("return_date", date, label="Return date")
    .field("purpose", Annotated[str, Field(min_length=3)], label="Purpose of trip")
    .step("travel", title="Travel", preview="how they travelled, mileage or ticket",
          when=lambda v, s: s.step_complete("trip"))
    .field("mode", Literal["car", "rail", "air"], label="Mode")
    .field("mileage", Annotated[int, Field(ge=1)] | None, label="Miles driven",
           when=lambda v, s: v["mode"] == "car", on_fill=_mileage_cost)
    .field("mileage_cost", Annotated[float, Field(ge=0)] | None, label="Mileage cost",
           when=lambda v, s: v["mode"] == "car")
    .field("ticket_reference", Annotated[str, Field(min_length=4)], label="Ticket reference",
           when=lambda v, s: v["mode"] in ("rail", "air"))
    .step("costs", title="Costs", preview="accommodation, meals, total",
          when=lambda v, s: s.step_complete("travel"), on_complete=_costs_within_total)
    .field("accommodation", Annotated[float, Field(ge=0)] | None, label="Accommodation cost", source="person")
    .field("meals", Annotated[float, Field(ge=0)] | None, label="Meals cost", source="person")
    .field("total", Annotated[float, Field(ge=0)], label="Total claimed",
           ask="The total amount claimed, in pounds.", source="person")
    .checkpoint("policy-cap", when=lambda v, s: (v["total"] or 0) > POLICY_CAP, blocking=True,
                wait_message="Over the 750 cap: waiting for Finance to approve.")
    .on_complete(_filed)
    .build()
)
