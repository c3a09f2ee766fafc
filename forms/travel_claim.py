"""Travel reimbursement claim: the seed's example grown into a realistic four-step claim.

Steps: who is claiming; the trip; how they travelled (mileage only for a car); the
costs, with a total. Names, the staff id, the email and the amounts must come from the
claimant (``source="person"``): a model's value for them is stored only when the claimant's
own words hold it, and otherwise formctl asks the claimant. A total over the policy cap
(750) waits for Finance: the policy-cap checkpoint is blocking and has no run of its own, so the instance stays ``awaiting``
until someone runs ``formctl resolve ID`` (or ``--fail REASON``).

Answers that are each fine can still disagree: the trip and the costs each declare a
``check`` (the return is not before the departure; the costs fit within the total). A check is
a rule of the values as they are now: it is asked again after every correction, the claim
reads ``held`` with the check's sentence while it fails, and it cannot be sent then
(``review=True``: every answer is read back, and the person says "yes" to send it). The
mileage cost is ``derive``d from the miles: the engine works it out again whenever the miles
change, and nobody types it. Executors are left for effects: filing the claim.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Literal

from pydantic import EmailStr, Field

from formctl import define_form

POLICY_CAP = 750
MILEAGE_RATE = 0.45  # per mile


def _mileage_cost(v):
    """The mileage cost follows the miles driven: the claimant never does the sum."""
    return round(v["mileage"] * MILEAGE_RATE, 2)


def _pounds(amount):
    return f"£{amount:,.0f}" if amount == int(amount) else f"£{amount:,.2f}"


def _dates_in_order(v):
    """A return before the departure is a typo in one of the two dates."""
    return v["return_date"] >= v["departure_date"]


def _dates_message(v):
    """Say which dates disagree."""
    return (f"The return date ({v['return_date'].isoformat()}) is before the departure date "
            f"({v['departure_date'].isoformat()}).")


def _parts(v):
    return (v.get("accommodation") or 0) + (v.get("meals") or 0)


def _costs_within_total(v):
    """The parts of a claim can't come to more than its total (the cap is checked on the total)."""
    return _parts(v) <= v["total"]


def _costs_message(v):
    return (f"Accommodation and meals come to {_pounds(_parts(v))}, more than the total claimed "
            f"({_pounds(v['total'])}).")


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
          when=lambda v, s: s.step_complete("claimant"))
    .field("destination", Annotated[str, Field(min_length=2)], label="Destination")
    .field("departure_date", date, label="Departure date")
    .field("return_date", date, label="Return date")
    .field("purpose", Annotated[str, Field(min_length=3)], label="Purpose of trip")
    .check("dates-in-order", _dates_in_order, _dates_message, fields=("departure_date", "return_date"))
    .step("travel", title="Travel", preview="how they travelled, mileage or ticket",
          when=lambda v, s: s.step_complete("trip"))
    .field("mode", Literal["car", "rail", "air"], label="Mode",
           aliases={"car": ["drove", "drive", "driving", "drove there", "by road", "my car", "hire car", "van"],
                    "rail": ["train", "trains", "by train", "railway", "tube", "underground", "eurostar"],
                    "air": ["flew", "fly", "flying", "flight", "flights", "plane", "by plane", "aeroplane",
                            "airline", "easyjet", "ryanair", "british airways"]})
    .field("mileage", Annotated[int, Field(ge=1)] | None, label="Miles driven",
           when=lambda v, s: v["mode"] == "car")
    .field("mileage_cost", Annotated[float, Field(ge=0)] | None, label="Mileage cost",
           when=lambda v, s: v["mode"] == "car", derive=_mileage_cost)
    .field("ticket_reference", Annotated[str, Field(min_length=4)], label="Ticket reference",
           when=lambda v, s: v["mode"] in ("rail", "air"))
    .step("costs", title="Costs", preview="accommodation, meals, total",
          when=lambda v, s: s.step_complete("travel"))
    .field("accommodation", Annotated[float, Field(ge=0)] | None, label="Accommodation cost", source="person")
    .field("meals", Annotated[float, Field(ge=0)] | None, label="Meals cost", source="person")
    .field("total", Annotated[float, Field(ge=0)], label="Total claimed",
           ask="The total amount claimed, in pounds.", source="person")
    .check("costs-within-total", _costs_within_total, _costs_message, fields=("accommodation", "meals", "total"))
    .checkpoint("policy-cap", when=lambda v, s: (v["total"] or 0) > POLICY_CAP, blocking=True,
                wait_message="Over the 750 cap: waiting for Finance to approve.")
    .on_complete(_filed)
    .build()
)
