"""Client intake: new and returning clients take different routes.

- ``route`` (a checkpoint) jumps to the new-client details or the returning-client lookup
  once triage is complete.
- ``eligibility`` terminates the intake for anyone under 18.
- ``confirm`` sends the conversation back to the finished contact step (a revisit) when the
  person says their details changed.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import EmailStr, Field

from formctl import Jump, Terminate, define_form


def _route(ctx):
    kind = ctx.values.get("client_type")
    return Jump("new-client" if kind == "new" else "returning-client")


def _too_young(ctx):
    return Terminate("Under 18: not eligible for this service. A guardian must apply instead.")


def _recheck_contact(ctx):
    return Jump("contact")


client_intake = (
    define_form(
        "client-intake",
        version=1,
        review=True,
        name="Client intake",
        description="Triage, eligibility and contact details for a new or returning client.",
        conduct="Warm and brief. Ask one thing at a time.",
    )
    .step("triage", title="Triage", preview="new or returning, age")
    .field("client_type", Literal["new", "returning"], label="Client type",
           ask="Have they used the service before?",
           aliases={"new": ["no", "first time", "first visit", "never", "not been", "never been", "haven't been",
                            "have not been", "not used", "haven't used", "never used", "not before"],
                    "returning": ["yes", "been before", "used it before", "used you before", "came before",
                                  "again", "back again", "returning client", "existing", "I have", "here before",
                                  "been here", "last year", "last time", "helped me", "helped us", "seen me",
                                  "you before", "visited before", "came in before", "used to come", "second time",
                                  "few times", "was here", "came in", "been in", "met before", "last month",
                                  "years ago", "months ago"]})
    .field("age", Annotated[int, Field(ge=0, le=130)], label="Age")
    .step("contact", title="Contact", preview="name, email, phone")
    .field("full_name", Annotated[str, Field(min_length=2)], label="Full name", source="person")
    .field("email", EmailStr, label="Email", source="person")
    .field("phone", Annotated[str, Field(min_length=6)] | None, label="Phone")
    .step("new-client", title="New client details", preview="how they heard of us, needs",
          when=lambda v, s: v["client_type"] == "new")
    .field("referral", Literal["web", "friend", "doctor", "other"], label="Referral source",
           aliases={"web": ["google", "online", "internet", "website", "search", "searched", "facebook",
                            "social media", "instagram", "twitter", "advert online"],
                    "friend": ["a friend", "friends", "word of mouth", "neighbour", "family", "relative",
                               "colleague", "mate", "sister", "brother", "mum", "dad"],
                    "doctor": ["gp", "my gp", "surgery", "nurse", "health visitor", "hospital", "doctors",
                               "practice", "referred by my doctor"],
                    "other": ["leaflet", "poster", "newspaper", "radio", "library", "jobcentre",
                              "citizens advice", "walked past", "saw the sign", "advert"]},
           when=lambda v, s: v["client_type"] == "new")
    .field("needs", Annotated[str, Field(min_length=3)], label="Needs",
           when=lambda v, s: v["client_type"] == "new")
    .step("returning-client", title="Returning client", preview="client number, changes",
          when=lambda v, s: v["client_type"] == "returning")
    .field("client_number", Annotated[str, Field(pattern=r"^C\d{5}$")], label="Client number",
           hint="C followed by five digits.",
           when=lambda v, s: v["client_type"] == "returning")
    .field("details_changed", bool, label="Details changed",
           ask="Have their contact details changed since last time?",
           when=lambda v, s: v["client_type"] == "returning")
    .checkpoint("eligibility", when=lambda v, s: v["age"] is not None and v["age"] < 18, run=_too_young)
    .checkpoint("route", when=lambda v, s: v["client_type"] is not None and s.step_complete("triage")
                and s.step_complete("contact"), run=_route)
    .checkpoint("confirm", when=lambda v, s: v["details_changed"] is True, run=_recheck_contact)
    .build()
)
