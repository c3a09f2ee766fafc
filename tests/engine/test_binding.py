"""A decision binds to what it decided on (docs/engine.md, "Checkpoints and waits"): a
checkpoint's firing is bound to the values its condition read, plus its ``watch`` fields; a
change to any of them while the condition holds is a new occurrence (new key, run again, a
new wait for a blocking one)."""

from __future__ import annotations

from typing import Annotated

import pytest
from pydantic import Field

from example_forms import register
from formctl import Fail, define_form
from formctl.errors import FormDefinitionError


def budget(log, *, watch=(), blocking=False):
    def check(ctx):
        log.append((ctx.idempotency_key.split(":", 1)[1], ctx.values["total"]))
        return Fail("Over the 1000 budget.") if ctx.values["total"] > 1000 else None

    return (
        define_form("budget", name="Budget")
        .step("s", title="S")
        .field("total", Annotated[float, Field(ge=0)], label="Total")
        .field("meals", float | None, label="Meals")
        .field("note", str | None, label="Note")
        .checkpoint("check", when=lambda v, s: (v["total"] or 0) > 100, run=check, watch=watch, blocking=blocking)
        .build()
    )


@pytest.fixture
def runs():
    return []


def start(runner, registry, runs, **options):
    register(registry, budget(runs, **options))
    r = runner()
    r.start("budget")
    return r


def failures(result):
    return [f["message"] for f in result.to_dict().get("failures", [])]


def test_a_non_blocking_checkpoint_whose_run_validates_runs_again_when_what_it_read_changes(runner, registry, runs):
    r = start(runner, registry, runs)

    assert failures(r.fill({"total": 200})) == []
    result = r.fill({"total": 2000})  # still over 100: the condition held, the value it read changed

    assert runs == [("checkpoint:check:1", 200), ("checkpoint:check:2", 2000)]
    assert failures(result) == ["Over the 1000 budget."]
    assert failures(r.fill({"total": 300})) == []  # the new run passes, and clears the failure
    assert runs[-1] == ("checkpoint:check:3", 300)


def test_a_change_to_a_field_it_did_not_read_is_not_a_new_occurrence(runner, registry, runs):
    r = start(runner, registry, runs)
    r.fill({"total": 200})

    r.fill({"meals": 40, "note": "lunch"})
    r.fill({"total": 200})  # the same value again: no change

    assert runs == [("checkpoint:check:1", 200)]
    assert r.open_instance().occurrences["checkpoint:check"] == 1


def test_watch_binds_more_fields_than_the_condition_reads(runner, registry, runs):
    r = start(runner, registry, runs, watch=("Meals",))  # names resolve like any field name
    r.fill({"total": 200})

    r.fill({"meals": 40})
    r.fill({"note": "lunch"})

    assert runs == [("checkpoint:check:1", 200), ("checkpoint:check:2", 200)]


def test_undo_back_to_the_decided_value_is_a_change_too(runner, registry, runs):
    r = start(runner, registry, runs)
    r.fill({"total": 200})
    r.fill({"total": 500})

    r.undo("total")

    assert [key for key, _ in runs] == ["checkpoint:check:1", "checkpoint:check:2", "checkpoint:check:3"]


def test_a_blocking_checkpoint_waits_again_after_an_approval_when_the_value_changes(runner, registry, runs):
    register(
        registry,
        define_form("cap", name="Cap")
        .step("s", title="S")
        .field("total", float, label="Total")
        .field("note", str | None, label="Note")
        .checkpoint("cap", when=lambda v, s: (v["total"] or 0) > 750, blocking=True)
        .build(),
    )
    r = runner()
    r.start("cap", seed={"total": 1204.5})
    assert r.open_instance().status == "awaiting"
    r.resolve_checkpoint(actor="finance")
    assert r.open_instance().status == "complete"

    r.fill({"note": "receipts attached"})
    assert r.open_instance().status == "complete"  # not what the decision covered
    r.fill({"total": 5000})

    stored = r.open_instance()
    assert (stored.status, stored.blocked_on, stored.occurrences["checkpoint:cap"]) == ("awaiting", "cap", 2)
    r.resolve_checkpoint(actor="finance", fail="Too much.")
    assert r.view().status == "active" and r.open_instance().blocked_on is None
    from formctl.forms.resolutions import resolutions

    assert [(d.occurrence, d.outcome, d.covers) for d in resolutions(r.open_instance())] == [
        (1, "approved", {"total": 1204.5}),
        (2, "rejected", {"total": 5000}),
    ]
    assert [f.message for f in r.status().failures] == ["Too much."]
    r.fill({"total": 6000})  # a third occurrence: the second's rejection no longer stands while it waits
    assert (r.open_instance().status, r.status().failures) == ("awaiting", [])


def test_watch_must_name_fields_of_the_form():
    with pytest.raises(FormDefinitionError, match="watches nope"):
        budget([], watch=("nope",))
    with pytest.raises(FormDefinitionError):
        budget([], watch="meals")
