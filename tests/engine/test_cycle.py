"""The commit cycle (docs/engine.md, 'Staging and rising edges' and 'Commit then run'):
staging, projection and rising edges, the pre-commit status, what one commit carries,
conflict retries, the closing commit and patch rounds."""

from __future__ import annotations

import dataclasses

import pytest

from example_forms import HookLog, cap_lab, lab, register, relay
from formctl import ConflictError, FormError, FormRunner, Jump, Patch
from formctl.forms.instance import UNSET, Commit, Provenance, now_iso


class FlakyAdapter:
    """Wraps a real adapter; its commits can lose the compare-and-set race on purpose.

    ``conflicts``: how many of the next matching commits raise ConflictError.
    ``only``: which commits count as matching (all by default).
    ``concurrent``: functions run (once each, in order) just before a matching commit,
    to land a real concurrent write through the inner adapter first.
    """

    def __init__(self, inner, conflicts=0, only=None):
        self.inner = inner
        self.conflicts = conflicts
        self.only = only or (lambda commit: True)
        self.concurrent = []
        self.attempts = 0
        self.landed = []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def commit_instance(self, instance_id, commit, *, if_version, provenance):
        if self.only(commit):
            self.attempts += 1
            if self.concurrent:
                self.concurrent.pop(0)(instance_id)
            if self.conflicts > 0:
                self.conflicts -= 1
                raise ConflictError(if_version, if_version + 1)
        stored = self.inner.commit_instance(instance_id, commit, if_version=if_version, provenance=provenance)
        self.landed.append(commit)
        return stored


@pytest.fixture
def flaky(adapter):
    return FlakyAdapter(adapter)


@pytest.fixture
def lab_runner(flaky, registry, log):
    register(registry, lab(log))
    r = FormRunner(flaky, registry=registry, subject="s1")
    r.start("lab")
    return r


def stored_values(runner, instance_id=None):
    return runner.open_instance(instance_id).in_force_values()


# --------------------------------------------------------------------------- staging


def test_each_staged_value_is_one_revision_with_its_own_seq_provenance_and_error(adapter, registry, log):
    register(registry, lab(log))
    r = FormRunner(adapter, registry=registry, subject="s1", actor="support", source="terminal")
    r.start("lab")

    result = r.fill({"trigger": "t", "extra": "x", "nope": 1})

    stored = r.open_instance()
    trigger, extra = stored.entries["trigger"].revisions, stored.entries["extra"].revisions
    assert [e.seq for e in trigger + extra] == [1, 2]
    assert stored.revision_seq == 2
    assert trigger[0].value == "t" and trigger[0].error is None
    assert extra[0].value == "x" and extra[0].error  # stored although invalid, with its error
    assert (trigger[0].provenance.actor, trigger[0].provenance.source) == ("support", "terminal")
    assert "nope" not in stored.entries
    assert [u.field for u in result.unknown] == ["nope"]
    assert [row.field for row in result.rejected] == ["extra"]


def test_a_later_key_naming_the_same_field_wins(lab_runner):
    lab_runner.fill({"trigger": "first", "Trigger": "second"})

    revisions = lab_runner.open_instance().entries["trigger"].revisions
    assert [e.value for e in revisions] == ["second"]


def test_staging_never_raises_for_bad_values(lab_runner):
    result = lab_runner.fill({"amount": "three", "extra": 12})

    assert {row.field for row in result.rejected} == {"amount", "extra"}
    assert {f["id"]: f["status"] for f in lab_runner.inspect("outline").to_dict()["fields"]}["amount"] == "invalid"


# --------------------------------------------------------------------------- projection and edges


def test_anything_already_true_at_start_is_a_rising_edge(runner):
    r = runner()
    r.start("optionality")  # an all-optional step and an empty step are complete from the start

    occurrences = r.open_instance().occurrences
    assert occurrences == {"step:all-optional": 1, "step:empty-step": 1}


def test_seeded_values_fire_their_hooks_at_start(runner, registry, log):
    register(registry, lab(log))

    runner().start("lab", seed={"trigger": "watch"})

    assert log.keys == ["field:trigger:1", "step:one:1", "checkpoint:watch:1", "checkpoint:also:1"]


def test_a_held_answer_that_applies_again_is_a_new_rising_edge(runner):
    r = runner()
    r.start("pi-intake", seed={"incidentType": "vehicle", "vehicleCount": 2})
    r.revise("incidentType", "medical")  # vehicleCount is held: a falling edge, nothing counted

    assert r.open_instance().occurrences["field:vehicleCount"] == 1

    r.revise("incidentType", "vehicle")

    assert r.open_instance().occurrences["field:vehicleCount"] == 2


def test_counters_count_edges_of_hooks_with_no_executor(runner):
    r = runner()
    r.start("basic")

    r.fill({"name": "Dana", "age": 40})

    assert r.open_instance().occurrences == {"field:name": 1, "field:age": 1, "step:one": 1}


# --------------------------------------------------------------------------- pre-commit status


def test_a_queued_blocking_checkpoint_makes_the_instance_awaiting_while_hooks_run(runner, registry, adapter):
    log = HookLog()
    seen = []
    log.behaviours["checkpoint:cap"] = lambda ctx: seen.append(
        (ctx.instance.status, ctx.instance.blocked_on, adapter.get_instance(ctx.instance.id).completed_at)
    )
    register(registry, cap_lab(log))
    r = runner()
    r.start("cap-lab")

    r.fill({"total": 500, "sign": "Dana"})  # complete too, but blocking takes precedence

    assert seen == [("awaiting", "cap", None)]
    assert r.status().status == "complete"


def test_a_write_that_completes_the_form_commits_status_complete_before_hooks_run(lab_runner, log):
    seen = []
    log.behaviours["field:extra"] = lambda ctx: seen.append((ctx.instance.status, ctx.instance.completed_at))

    lab_runner.fill({"trigger": "t", "extra": "ok"})

    stored = lab_runner.open_instance()
    at = stored.entries["extra"].revisions[0].at
    assert seen == [("complete", at)]
    assert stored.completed_at == at


def test_an_instance_awaiting_with_nothing_blocking_is_made_active_by_the_next_write(lab_runner, flaky):
    stored = lab_runner.open_instance()
    flaky.inner.commit_instance(
        stored.id, Commit(status="awaiting"), if_version=stored.version, provenance=Provenance("t", "host", now_iso())
    )

    lab_runner.fill({"derived": "d"})

    assert lab_runner.open_instance().status == "active"


def test_a_correction_that_leaves_the_form_incomplete_makes_it_active_again(lab_runner):
    lab_runner.fill({"trigger": "t", "extra": "ok"})
    assert lab_runner.status().status == "complete"

    lab_runner.retract("extra")

    assert lab_runner.status().status == "active"
    assert lab_runner.open_instance().completed_at is not None  # never cleared


# --------------------------------------------------------------------------- what one commit carries


def test_entries_counters_and_status_land_in_one_commit(lab_runner, flaky):
    before = lab_runner.open_instance()
    flaky.landed.clear()

    lab_runner.fill({"trigger": "t", "extra": "ok"})

    first = flaky.landed[0]
    assert set(first.entries) == {"trigger", "extra"}
    assert first.revision_seq == 2
    assert first.occurrences == {"field:trigger": 1, "field:extra": 1, "step:one": 1, "step:two": 1, "form": 1}
    assert first.status == "complete"
    assert first.completed_at is not UNSET
    assert lab_runner.open_instance().version == before.version + 1  # nothing else to close


def test_undo_commits_only_a_cursor_and_allocates_no_seq(lab_runner, flaky):
    lab_runner.fill({"derived": "a"})
    lab_runner.fill({"derived": "b"})
    flaky.landed.clear()

    lab_runner.undo("derived")

    commit = flaky.landed[0]
    assert commit.entries["derived"].append == ()
    assert commit.entries["derived"].cursor == 0
    assert commit.revision_seq is UNSET
    stored = lab_runner.open_instance()
    assert stored.revision_seq == 2
    assert stored.in_force_values()["derived"] == "a"


def test_every_landed_commit_bumps_the_version_by_one(lab_runner, flaky):
    before = lab_runner.open_instance().version
    flaky.landed.clear()

    lab_runner.fill({"trigger": "t"})
    lab_runner.fill({"derived": "d"})

    assert lab_runner.open_instance().version == before + len(flaky.landed)


# --------------------------------------------------------------------------- conflict retries


def test_a_write_retries_conflicts_and_lands_once(lab_runner, flaky, log):
    version = lab_runner.open_instance().version
    flaky.attempts, flaky.conflicts = 0, 4

    lab_runner.fill({"trigger": "t"})

    assert flaky.attempts == 5
    assert lab_runner.conflict_retries == 4
    stored = lab_runner.open_instance()
    assert [e.value for e in stored.entries["trigger"].revisions] == ["t"]
    assert stored.version == version + 1
    assert log.keys == ["field:trigger:1", "step:one:1"]


def test_conflicts_past_the_patience_raise_and_nothing_is_written(lab_runner, flaky, log):
    from formctl.forms import contention

    start = contention.clock()
    before = lab_runner.open_instance()
    flaky.attempts, flaky.conflicts = 0, 10**6

    with pytest.raises(ConflictError) as err:
        lab_runner.fill({"trigger": "t"})

    assert err.value.code == "form_conflict"
    assert flaky.attempts > 5 and contention.clock() - start == pytest.approx(contention.PATIENCE)
    after = lab_runner.open_instance()
    assert (after.version, after.entries) == (before.version, before.entries)
    assert log.keys == []


def test_a_concurrent_write_is_re_read_and_both_answers_are_kept(lab_runner, flaky, registry, log):
    other = FormRunner(flaky.inner, registry=registry, subject="s1")
    flaky.concurrent.append(lambda iid: other.fill({"derived": "theirs"}, instance_id=iid))

    lab_runner.fill({"trigger": "ours"})

    stored = lab_runner.open_instance()
    assert stored.in_force_values() == {"derived": "theirs", "trigger": "ours"}
    seqs = [e.seq for log_ in stored.entries.values() for e in log_.revisions]
    assert sorted(seqs) == [1, 2]
    assert stored.revision_seq == 2
    assert lab_runner.conflict_retries == 1
    assert sorted(log.keys) == ["field:derived:1", "field:trigger:1", "step:one:1"]


def test_rising_edges_are_recomputed_against_the_re_read_instance(lab_runner, flaky, registry, log):
    other = FormRunner(flaky.inner, registry=registry, subject="s1")
    flaky.concurrent.append(lambda iid: other.fill({"trigger": "watch"}, instance_id=iid))

    lab_runner.fill({"trigger": "watch", "extra": "ok"})

    # The other writer's edges fired once; ours are only what our write newly made true.
    assert log.keys == [
        "field:trigger:1",
        "step:one:1",
        "checkpoint:watch:1",
        "checkpoint:also:1",
        "field:extra:1",
        "step:two:1",
        "form:1",
    ]
    assert lab_runner.open_instance().occurrences["field:trigger"] == 1


def test_a_write_that_loses_the_race_to_an_abandon_is_refused(lab_runner, flaky, registry, log):
    other = FormRunner(flaky.inner, registry=registry, subject="s1")
    flaky.concurrent.append(lambda iid: other.abandon("withdrawn", instance_id=iid))
    iid = lab_runner.open_instance().id

    with pytest.raises(FormError) as err:
        lab_runner.fill({"trigger": "t"})

    assert err.value.code == "form_closed"
    stored = lab_runner.open_instance(iid)
    assert (stored.status, stored.entries) == ("abandoned", {})
    assert log.keys == []


def test_the_closing_commit_retries_conflicts(lab_runner, flaky, log):
    log.behaviours["field:trigger"] = Jump("one")
    flaky.only = lambda commit: commit.open_step_override is not UNSET
    flaky.conflicts = 4

    lab_runner.fill({"trigger": "t"})

    assert lab_runner.open_instance().open_step_override == "one"
    assert lab_runner.conflict_retries == 4


def test_a_closing_commit_that_keeps_conflicting_raises_but_the_answer_stays(lab_runner, flaky, log):
    log.behaviours["field:trigger"] = Jump("one")
    flaky.only = lambda commit: commit.open_step_override is not UNSET
    flaky.conflicts = 10**6

    with pytest.raises(ConflictError):
        lab_runner.fill({"trigger": "t"})

    stored = lab_runner.open_instance()
    assert stored.in_force_values() == {"trigger": "t"}
    assert stored.open_step_override is None


def test_abandon_retries_conflicts(lab_runner, flaky):
    flaky.conflicts = 4

    stored = lab_runner.abandon("duplicate claim")

    assert (stored.status, stored.closed_reason) == ("abandoned", "duplicate claim")


def test_abandon_gives_up_when_conflicts_outlast_its_patience(lab_runner, flaky):
    iid = lab_runner.open_instance().id
    flaky.conflicts = 10**6

    with pytest.raises(ConflictError):
        lab_runner.abandon("duplicate claim")

    assert lab_runner.open_instance(iid).status == "active"


# --------------------------------------------------------------------------- the closing commit


def test_a_write_whose_hooks_change_nothing_is_a_single_commit(lab_runner, log):
    before = lab_runner.open_instance().version

    lab_runner.fill({"derived": "d"})

    assert log.keys == ["field:derived:1"]
    assert lab_runner.open_instance().version == before + 1


def test_a_jump_sets_the_open_step_until_a_field_of_that_step_is_written(lab_runner, log):
    log.behaviours["field:extra"] = Jump("one")
    lab_runner.fill({"trigger": "t", "extra": "ok"})
    assert lab_runner.open_instance().open_step_override == "one"

    lab_runner.undo("trigger")  # undo and redo never release it
    lab_runner.redo("trigger")
    assert lab_runner.open_instance().open_step_override == "one"

    lab_runner.fill({"auto": "a"})  # a field of another step does not either
    assert lab_runner.open_instance().open_step_override == "one"

    lab_runner.fill({"amount": "not a number"})  # an invalid answer in the step does

    assert lab_runner.open_instance().open_step_override is None


def test_a_retraction_in_the_jumped_to_step_releases_it(lab_runner, log):
    log.behaviours["field:extra"] = Jump("one")
    lab_runner.fill({"trigger": "t", "extra": "ok"})

    lab_runner.retract("trigger")

    assert lab_runner.open_instance().open_step_override is None


# --------------------------------------------------------------------------- patch rounds


def test_patches_are_written_in_further_rounds_with_the_writes_provenance(lab_runner, log):
    log.behaviours["field:trigger"] = Patch({"derived": "from trigger"})

    result = lab_runner.fill({"trigger": "t"})

    stored = lab_runner.open_instance()
    [trigger], [derived] = stored.entries["trigger"].revisions, stored.entries["derived"].revisions
    assert derived.value == "from trigger"
    assert derived.seq == trigger.seq + 1
    # the write's provenance (who, from where, when), marked as a hook's value and naming the hook
    assert dataclasses.replace(derived.provenance, kind="host", hook=None) == trigger.provenance
    assert (derived.provenance.kind, derived.provenance.hook) == ("executor", "field:trigger")
    assert log.keys == ["field:trigger:1", "step:one:1", "field:derived:1"]  # the patch round fires its own edges
    assert result.captured == ["trigger"]  # only what this call sent


def test_an_invalid_patched_value_is_stored_as_invalid(lab_runner, log):
    log.behaviours["field:trigger"] = Patch({"amount": "three"})

    lab_runner.fill({"trigger": "t"})

    [amount] = lab_runner.open_instance().entries["amount"].revisions
    assert amount.value == "three" and amount.error


def test_patch_rounds_stop_after_round_eight(runner, registry):
    log = HookLog()
    register(registry, relay(log))
    r = runner()
    r.start("relay")

    r.fill({"r0": "go"})

    values = r.open_instance().in_force_values()
    assert sorted(values, key=lambda k: int(k[1:])) == [f"r{i}" for i in range(9)]  # rounds 0..8 commit
    assert log.keys == [f"field:r{i}:1" for i in range(9)]  # round 8's patch (to r9) is dropped


def test_failures_from_every_round_are_reported(lab_runner, log):
    log.behaviours["field:trigger"] = Patch({"derived": "d"})
    log.behaviours["field:derived"] = lambda ctx: 1 / 0

    result = lab_runner.fill({"trigger": "t"})

    assert [f.hook_id for f in result.failures] == ["field:derived"]
    assert [f["hook"] for f in result.to_dict()["failures"]] == ["field:derived"]
