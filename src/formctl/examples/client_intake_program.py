"""The client-intake goal program: what a first visit works toward (docs/goals.md).

A returning client gets a revision of it rather than a second intake:
``client_intake_follow_up.toml`` beside this file keeps the verified identity, retires what
no longer applies and adds the matter updates (the README's walk-through).
"""

from formctl import Goal, Item, define_program

client_intake_program = define_program(
    "client-intake",
    goals=[
        Goal(
            "identity",
            title="Confirm identity",
            objective="Know who is speaking",
            items=[Item("client", label="Verify the client", locked=True)],
        ),
        Goal(
            "intake",
            title="Intake",
            objective="Triage, eligibility and contact details",
            items=[Item("form", label="Client intake form", form="client-intake")],
        ),
        Goal(
            "conflicts",
            title="Conflict check",
            objective="Make sure the firm can act",
            items=[Item("conflict", label="Run the conflict check")],
        ),
    ],
)
