"""Definition drift (docs/engine.md, "Drift"): an instance started against one version of a
form, opened after the registry moved to another.

Without ``migrate`` the instance reads as stale (computed on read, never stored) and refuses
everything but abandon and an explicit ``runner.migrate``. With ``migrate`` the carried values
go through the ordinary commit cycle, on ``runner.migrate`` or the next write: fields it leaves
out get a retraction, hooks fire on rising edges, and the status is recomputed. Reads never migrate.
"""

from __future__ import annotations

import pytest
from test_cycle import FlakyAdapter

from example_forms import drift, register
from formctl import ConflictError, FormError, FormRunner, FormStaleError

STALE_LINE = "[form: drift] stale — the definition changed since this was started; it can't be continued."


@pytest.fixture
def started(runner, registry, log):
    """A runner with a version-1 instance holding a, b and c (complete under version 1)."""
    register(registry, drift(1, log=log))
    r = runner()
    r.start("drift", seed={"a": "alpha", "b": "beta", "c": "gamma"})
    assert r.status().status == "complete"
    log.clear()
    return r


class Migration:
    """A migrate function that records its calls and returns what ``carry`` builds."""

    def __init__(self, carry):
        self.carry = carry
        self.calls = []

    def __call__(self, old_values, from_version):
        self.calls.append((dict(old_values), from_version))
        return self.carry(old_values)


# --------------------------------------------------------------------------- stale


@pytest.fixture
def begun(runner, registry, log):
    """A runner with a version-1 instance under way: a and c given, b (required) still to come."""
    register(registry, drift(1, log=log))
    r = runner()
    r.start("drift", seed={"a": "alpha", "c": "gamma"})
    assert r.status().status == "active"
    log.clear()
    return r


def test_a_complete_instance_is_a_closed_record_never_stale(started, registry):
    iid = started.open_instance().id
    register(registry, drift(2))

    assert started.view(iid).status == "complete" and not started.view(iid).stale
    assert [(s.instance_id, s.status) for s in started.instances(status="complete")] == [(iid, "complete")]
    assert started.instances(status="stale") == []
    stored = started.open_instance(iid)
    assert (stored.status, stored.def_version) == ("complete", 1)
    with pytest.raises(FormError) as err:
        started.migrate(iid)  # a closed record keeps its version unless a host reopens it
    assert err.value.code == "form_closed"


def test_drift_without_migrate_reads_as_stale_and_raises_form_stale_without_writing(begun, registry):
    iid = begun.open_instance().id
    version = begun.open_instance().version
    register(registry, drift(2))

    with pytest.raises(FormStaleError) as err:
        begun.status()

    assert err.value.code == "form_stale"
    assert str(err.value) == "Instance was started against def version 1; the registered def is at 2."
    assert (err.value.instance_version, err.value.def_version) == (1, 2)
    stored = begun.open_instance(iid)
    assert (stored.status, stored.def_version, stored.version) == ("active", 1, version)
    assert stored.in_force_values() == {"a": "alpha", "c": "gamma"}
    view = begun.view(iid)
    assert (view.status, view.stale) == ("stale", True)
    assert [(s.instance_id, s.status) for s in begun.instances()] == [(iid, "stale")]
    assert [s.instance_id for s in begun.instances(status="stale")] == [iid]
    assert begun.instances(status="active") == []


@pytest.mark.parametrize(
    "call",
    [
        lambda r: r.status(),
        lambda r: r.inspect("outline"),
        lambda r: r.fill({"a": "again"}),
        lambda r: r.revise("a", "again"),
        lambda r: r.retract("a"),
        lambda r: r.undo(),
        lambda r: r.redo("a"),
        lambda r: r.history("a"),
        lambda r: r.resolve_checkpoint(),
        lambda r: r.evaluation(),
    ],
    ids=["status", "inspect", "fill", "revise", "retract", "undo", "redo", "history", "resolve", "evaluation"],
)
def test_a_stale_instance_refuses_everything_but_abandon(begun, registry, call):
    register(registry, drift(2))

    with pytest.raises(FormStaleError):
        call(begun)

    assert begun.open_instance().in_force_values() == {"a": "alpha", "c": "gamma"}


def test_a_stale_instance_stays_the_open_form_and_tier0_says_so(begun, registry):
    register(registry, drift(2))

    assert begun.tier0() == STALE_LINE
    with pytest.raises(FormStaleError):
        begun.status()

    assert begun.open_instance().status == "active"
    assert begun.tier0() == STALE_LINE


def test_a_stale_instance_can_be_abandoned_and_keeps_its_answers(begun, registry):
    register(registry, drift(2))

    stored = begun.abandon("form was replaced")

    assert (stored.status, stored.closed_reason) == ("abandoned", "form was replaced")
    assert stored.in_force_values() == {"a": "alpha", "c": "gamma"}
    assert begun.open_instance() is None


def test_stale_is_never_committed(begun, registry):
    version = begun.open_instance().version
    register(registry, drift(2))
    with pytest.raises(FormStaleError):
        begun.status()

    with pytest.raises(FormStaleError):
        begun.fill({"a": "again"})

    assert begun.open_instance().version == version


def test_a_downgrade_is_drift_too(runner, registry):
    register(registry, drift(3))
    r = runner()
    r.start("drift", seed={"a": "alpha"})
    register(registry, drift(2))

    with pytest.raises(FormStaleError) as err:
        r.status()

    assert (err.value.instance_version, err.value.def_version) == (3, 2)


def test_an_explicit_migrate_without_a_migrate_function_keeps_what_the_new_version_accepts(runner, registry):
    register(registry, drift(1))
    r = runner()
    iid = r.start("drift", seed={"a": "alpha", "b": "beta", "c": "gamma"}).instance_id
    register(registry, drift(2, with_e=True))  # no migrate; e is new and required

    result = r.migrate(reopen=True)  # it was complete under version 1: a closed record

    stored = r.open_instance(iid)
    assert stored.def_version == 2
    assert stored.in_force_values() == {"a": "alpha", "b": "beta", "c": "gamma"}
    assert (result.from_version, result.to_version, result.dropped, result.rejected) == (1, 2, {}, [])
    assert r.view(iid).status == "active" and r.status().status == "active"
    assert r.migrate().to_dict()["migrated"] == {"from": 2, "to": 2}  # already there: nothing written
    assert r.open_instance(iid).version == stored.version


# --------------------------------------------------------------------------- migrate: an ordinary commit


def test_migrate_gets_the_in_force_values_and_the_old_version_once(started, registry):
    migration = Migration(lambda old: dict(old))
    register(registry, drift(2, migrate=migration))

    started.status()  # a read: no migration
    assert migration.calls == []
    started.migrate(reopen=True)
    started.migrate(reopen=True)
    started.status()

    assert migration.calls == [({"a": "alpha", "b": "beta", "c": "gamma"}, 1)]
    assert started.open_instance().def_version == 2


def test_fields_migrate_leaves_out_get_a_retraction_that_can_be_undone(started, registry):
    register(registry, drift(2, migrate=Migration(lambda old: {"a": old["a"], "b": old["b"]})))

    result = started.migrate(reopen=True)

    assert result.dropped == {"c": "gamma"}
    history = started.history("c").to_dict()["revisions"]
    assert [r.get("value") for r in history] == ["gamma", None]
    assert history[-1]["retracted"] is True and history[-1]["in_force"] is True
    assert "c" not in started.open_instance().in_force_values()

    started.undo("c")

    assert started.open_instance().in_force_values()["c"] == "gamma"


def test_migration_recomputes_the_status(started, registry):
    register(registry, drift(2, migrate=Migration(lambda old: dict(old)), with_e=True))  # e is new and required

    view = started.migrate(reopen=True).view.to_dict()

    assert (view["status"], view["complete"]) == ("active", False)
    assert [f["id"] for f in view["fields"] if f["ask"]] == ["e"]


def test_migrated_values_fire_hooks_on_their_rising_edges(runner, registry, log):
    register(registry, drift(1, log=log))
    r = runner()
    r.start("drift", seed={"a": "alpha"})
    log.clear()
    migration = Migration(lambda old: {"a": old["a"], "b": "derived", "e": "new"})
    register(registry, drift(2, migrate=migration, log=log, with_e=True))

    r.status()
    assert log.keys == []  # a read neither migrates nor runs hooks
    view = r.migrate().view.to_dict()

    assert log.keys == ["field:b:1", "field:e:1", "form:1"]  # a was already live: no edge
    assert view["status"] == "complete"
    assert r.open_instance().in_force_values() == {"a": "alpha", "b": "derived", "e": "new"}


def test_migrated_revisions_say_they_were_migrated(started, registry):
    register(registry, drift(2, migrate=Migration(lambda old: {**old, "b": "beta-2"})))

    started.fill({"c": "gamma-2"})  # a write migrates first

    revision = started.open_instance().entries["b"].revisions[-1]
    assert revision.value == "beta-2"
    assert revision.provenance.note == "migrated 1 → 2"


def test_migrating_a_stale_instance_makes_it_active_again(runner, registry):
    register(registry, drift(1))
    r = runner()
    r.start("drift", seed={"a": "alpha"})
    register(registry, drift(2))
    with pytest.raises(FormStaleError):
        r.status()

    register(registry, drift(3, migrate=Migration(lambda old: dict(old))))

    assert r.status().to_dict()["status"] == "active"  # migratable: read against the new form, unmigrated
    assert r.open_instance().def_version == 1
    view = r.migrate().view.to_dict()
    assert view["status"] == "active"
    assert r.open_instance().def_version == 3


def test_a_migrate_that_raises_commits_nothing(started, registry):
    def broken(old, version):
        raise KeyError("b")

    before = started.open_instance()
    register(registry, drift(2, migrate=broken))

    started.status()  # a read does not call migrate
    with pytest.raises(FormError) as err:
        started.migrate(reopen=True)

    assert err.value.code == "form_migration_failed"
    after = started.open_instance()
    assert (after.version, after.def_version, after.status) == (before.version, 1, "complete")


def test_migration_retries_conflicts(adapter, registry):
    register(registry, drift(1))
    flaky = FlakyAdapter(adapter)
    r = FormRunner(flaky, registry=registry, subject="s1")
    r.start("drift", seed={"a": "alpha"})
    register(registry, drift(2, migrate=Migration(lambda old: {"a": old["a"], "b": "beta"})))
    flaky.conflicts = 4

    r.migrate()

    stored = r.open_instance()
    assert (stored.def_version, stored.in_force_values()) == (2, {"a": "alpha", "b": "beta"})
    assert [e.value for e in stored.entries["b"].revisions] == ["beta"]


def test_migration_gives_up_when_conflicts_outlast_its_patience_and_nothing_is_lost(adapter, registry):
    register(registry, drift(1))
    flaky = FlakyAdapter(adapter)
    r = FormRunner(flaky, registry=registry, subject="s1")
    r.start("drift", seed={"a": "alpha"})
    register(registry, drift(2, migrate=Migration(lambda old: {"a": old["a"], "b": "beta"})))
    flaky.conflicts = 10**6

    with pytest.raises(ConflictError):
        r.migrate()

    stored = r.open_instance()
    assert (stored.def_version, stored.in_force_values()) == (1, {"a": "alpha"})


def test_abandon_migrates_first_when_it_can(started, registry):
    register(registry, drift(2, migrate=Migration(lambda old: {"a": old["a"]})))  # no longer complete

    stored = started.abandon("done with it")

    assert (stored.status, stored.def_version) == ("abandoned", 2)


def test_a_migrated_instance_that_is_still_complete_cannot_be_abandoned(started, registry):
    register(registry, drift(2, migrate=Migration(lambda old: dict(old))))

    with pytest.raises(FormError) as raised:
        started.abandon("done with it")

    assert raised.value.code == "form_closed"
    assert (started.open_instance().status, started.open_instance().def_version) == ("complete", 2)


def test_an_abandoned_instance_is_not_marked_stale_and_stays_readable(started, registry):
    started.retract("b")  # a complete one cannot be abandoned
    iid = started.abandon("closed").id
    version = started.open_instance(iid).version
    register(registry, drift(2))

    view = started.status(instance_id=iid).to_dict()

    assert view["status"] == "abandoned"
    assert started.open_instance(iid).version == version


def test_a_migrated_value_the_new_version_refuses_is_withdrawn_and_reported(started, registry):
    register(registry, drift(2, migrate=Migration(lambda old: {**old, "b": 12})))

    result = started.migrate(reopen=True)

    assert [r.field for r in result.rejected] == ["b"]
    assert "b" not in started.open_instance().in_force_values()
    assert [f["id"] for f in result.view.to_dict()["fields"] if f["ask"]] == ["b"]
    started.undo("b")
    assert started.open_instance().in_force_values()["b"] == "beta"  # nothing lost


def test_a_stale_instance_can_be_moved_to_the_new_version_explicitly(started, registry):
    register(registry, drift(2))
    with pytest.raises(FormStaleError):
        started.fill({"a": "again"})

    started.migrate(reopen=True)
    started.fill({"a": "again"})

    assert started.open_instance().in_force_values()["a"] == "again"
