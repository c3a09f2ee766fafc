"""Every rule of goal programs (docs/goals.md), through the public API, on every store:
MemoryAdapter, JsonFileAdapter and PostgresAdapter.

One section per rule: scope, dispositions and the active goal, updates, revisions, locks and
validate_change, deferred work, hooks, storage and conflicts, form-bound items."""

from __future__ import annotations

import dataclasses

import pytest

import goal_programs as gp
from formctl import (
    FormRunner,
    Goal,
    GoalConflictError,
    GoalLockedError,
    GoalRunner,
    GoalScope,
    InvalidArgumentError,
    Item,
    JsonFileAdapter,
    MemoryAdapter,
    NotFoundError,
    define_program,
)

SCOPE = GoalScope(subject="firm:1/matter:2", key="intake", agent="assistant")


@pytest.fixture(params=["memory", "jsonfile", "postgres"])
def goal_adapter(request, tmp_path):
    if request.param == "memory":
        return MemoryAdapter()
    if request.param == "jsonfile":
        return JsonFileAdapter(tmp_path / "store")
    return request.getfixturevalue("emptied_pg_adapter")


@pytest.fixture(scope="module")
def _rules_schema(pg_server):
    """One schema for this module's PostgreSQL tests (in each process), dropped at the end:
    what they test is the rules, not the making of the tables, and a fresh schema a test cost
    its tables' creation and drop on the server (about 60 ms, against 15 for the test itself).
    test_pg_*.py and test_postgres.py keep a schema per test: the tables' creation is theirs."""
    import uuid

    import psycopg

    from pg_server import initialise, with_options

    schema = f"t_{uuid.uuid4().hex[:16]}"
    conn = psycopg.connect(pg_server.dsn, autocommit=True)
    conn.execute(f"CREATE SCHEMA {schema}")
    conn.execute(f"SET search_path = {schema}")
    dsn = with_options(pg_server.dsn, f"-csearch_path={schema}")
    initialise(dsn)
    yield dsn, conn
    conn.execute(f"DROP SCHEMA {schema} CASCADE")
    conn.close()


@pytest.fixture
def emptied_pg_adapter(_rules_schema):
    """A PostgresAdapter on the module's schema, every row of which (but the schema version's)
    is deleted when the test ends, so the next test starts on an empty store as on a new one.
    The deletes run as the replication role, which the append-only triggers do not stop."""
    from formctl.store.postgres import PostgresAdapter

    dsn, conn = _rules_schema
    adapter = PostgresAdapter(dsn)
    yield adapter
    adapter.close()
    tables = conn.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename <> 'formctl_schema'"
    ).fetchall()
    if tables:
        conn.execute(
            "SET session_replication_role = replica; "
            + " ".join(f"DELETE FROM {name};" for (name,) in tables)
            + " RESET session_replication_role"
        )


@pytest.fixture
def make(goal_adapter):
    def make(scope=SCOPE, **kwargs):
        kwargs.setdefault("actor", "intake-agent")
        kwargs.setdefault("source", "conversation:3")
        return GoalRunner(goal_adapter, scope=scope, **kwargs)

    return make


def dispositions(status, goal):
    return {i.key: i.disposition for i in status.goal(goal).items}


# --------------------------------------------------------------------------- scope


def test_inspect_is_none_before_start_and_the_program_after(make):
    runner = make()
    assert runner.inspect() is None
    status = runner.start(gp.intake())
    assert status.version == 1 and status.program.key == "client-intake"
    assert runner.inspect().version == 1


def test_the_scope_is_the_exact_tuple_subject_key_agent(make):
    make().start(gp.intake())
    for other in (
        GoalScope(subject="firm:1/matter:2", key="intake"),  # no agent is another scope
        GoalScope(subject="firm:1/matter:2", key="intake", agent="other"),
        GoalScope(subject="firm:1/matter:3", key="intake", agent="assistant"),
        GoalScope(subject="firm:1/matter:2", key="billing", agent="assistant"),
    ):
        assert make(other).inspect() is None
    make().update(goal="identity", completed=["client"])
    assert make(GoalScope(subject="firm:1/matter:2", key="intake")).inspect() is None


def test_a_scope_runs_one_program_starting_again_is_a_conflict(make):
    runner = make()
    runner.start(gp.intake())
    with pytest.raises(GoalConflictError) as caught:
        runner.start(gp.intake())
    assert caught.value.code == "goal_conflict"
    assert runner.inspect().version == 1


def test_updating_before_start_is_not_found(make):
    with pytest.raises(NotFoundError):
        make().update(goal="identity", completed=["client"])


# --------------------------------------------------------------------------- dispositions


def test_untouched_items_are_pending_and_the_first_goal_with_them_is_active(make):
    status = make().start(gp.intake())
    assert dispositions(status, "identity") == {"client": "pending"}
    assert status.active_goal == "identity" and not status.complete
    assert [g.status for g in status.goals] == ["active", "pending"]


def test_completed_is_done_deferred_and_declined_settle_without_being_done(make):
    runner = make()
    runner.start(gp.intake())
    runner.update(goal="identity", completed=["client"])
    status = runner.update(goal="eligibility", deferred=["conflict"], declined=["income"])
    items = {i.key: i for i in status.goal("eligibility").items}
    assert (items["conflict"].disposition, items["conflict"].done) == ("deferred", False)
    assert (items["income"].disposition, items["income"].done) == ("declined", False)
    assert status.goal("identity").items[0].done is True
    assert status.complete and status.active_goal is None
    assert status.goal("eligibility").status == "complete"


def test_an_update_may_target_a_later_goal_than_the_active_one(make):
    runner = make()
    runner.start(gp.intake())
    status = runner.update(goal="eligibility", completed=["conflict", "income"])
    assert status.active_goal == "identity"
    assert status.goal("eligibility").status == "complete"
    status = runner.update(goal="identity", completed=["client"])
    assert status.complete


def test_reopened_makes_a_settled_live_item_pending_again(make):
    runner = make()
    runner.start(gp.intake())
    runner.update(goal="identity", completed=["client"])
    status = runner.update(goal="identity", reopened=["client"], reason="identity document expired")
    assert dispositions(status, "identity") == {"client": "pending"}
    assert status.active_goal == "identity"
    assert status.item("identity", "client").action == "reopened"


def test_a_repeated_disposition_is_a_no_op_and_makes_no_version(make):
    runner = make()
    runner.start(gp.intake())
    first = runner.update(goal="identity", completed=["client"])
    again = runner.update(goal="identity", completed=["client"], reason="once more")
    assert again.version == first.version
    assert len(runner.history()) == 2


@pytest.mark.parametrize(
    "kwargs",
    [
        {"completed": ["conflict", "nope"]},  # unknown key
        {"completed": ["conflict", "conflict"]},  # repeated in one list
        {"completed": ["conflict"], "deferred": ["conflict"]},  # repeated across lists
        {"completed": ["conflict"], "reopened": ["conflict"]},
    ],
)
def test_an_unknown_or_repeated_key_rejects_the_whole_update(make, kwargs):
    runner = make()
    runner.start(gp.intake())
    with pytest.raises(InvalidArgumentError) as caught:
        runner.update(goal="eligibility", **kwargs)
    assert "Nothing was applied" in caught.value.message
    status = runner.inspect()
    assert status.version == 1 and dispositions(status, "eligibility") == {"conflict": "pending", "income": "pending"}


def test_an_unknown_goal_rejects_the_update(make):
    runner = make()
    runner.start(gp.intake())
    with pytest.raises(InvalidArgumentError):
        runner.update(goal="nope", completed=["client"])


# --------------------------------------------------------------------------- revisions


def test_a_revision_supplies_the_whole_program_and_stable_keys_keep_progress(make):
    runner = make()
    runner.start(gp.intake())
    runner.update(goal="identity", completed=["client"], reason="verified from stored records")
    current = runner.inspect()
    status = runner.revise(gp.follow_up(current), if_version=current.version, reason="existing-matter follow-up")
    assert [g.key for g in status.goals] == ["identity", "eligibility", "updates"]
    assert dispositions(status, "identity") == {"client": "completed"}
    assert status.goal("eligibility").status == "retired"
    assert status.active_goal == "updates"
    assert status.change == "revise" and status.reason == "existing-matter follow-up"


def test_a_removed_item_that_comes_back_has_its_progress(make):
    runner = make()
    runner.start(gp.intake())
    runner.update(goal="eligibility", completed=["conflict"])
    current = runner.inspect()
    without = define_program("client-intake", goals=[gp.IDENTITY, Goal("eligibility", title="Eligibility", items=[])])
    status = runner.revise(without, if_version=current.version)
    assert status.goal("eligibility").items == ()
    status = runner.revise(gp.intake(), if_version=status.version)
    assert dispositions(status, "eligibility")["conflict"] == "completed"


def test_retired_definitions_keep_their_history_and_progress_and_are_not_completion(make):
    hooks = gp.HookRecorder()
    runner = make(hooks=hooks)
    runner.start(gp.intake())
    runner.update(goal="eligibility", completed=["conflict"])
    current = runner.inspect()
    retired = define_program("client-intake", goals=[gp.IDENTITY, dataclasses.replace(gp.ELIGIBILITY, retired=True)])
    status = runner.revise(retired, if_version=current.version)
    assert status.goal("eligibility").status == "retired"
    assert dispositions(status, "eligibility") == {"conflict": "completed", "income": "pending"}
    assert ("complete", "eligibility") not in hooks.kinds()
    assert runner.history()[-1].goal("eligibility").status == "retired"


def test_a_retired_item_must_be_restored_before_it_is_reopened(make):
    runner = make()
    runner.start(gp.intake())
    runner.update(goal="eligibility", completed=["conflict"])
    current = runner.inspect()
    program = define_program(
        "client-intake",
        goals=[
            gp.IDENTITY,
            Goal("eligibility", title="Eligibility", items=[Item("conflict", label="Conflict check", retired=True)]),
        ],
    )
    runner.revise(program, if_version=current.version)
    with pytest.raises(InvalidArgumentError, match="restore"):
        runner.update(goal="eligibility", reopened=["conflict"])


def test_a_new_pending_item_reopens_a_completed_goal(make):
    hooks = gp.HookRecorder()
    runner = make(hooks=hooks)
    runner.start(gp.intake())
    runner.update(goal="identity", completed=["client"])
    current = runner.inspect()
    grown = dataclasses.replace(gp.IDENTITY, items=(*gp.IDENTITY.items, Item("address", label="Confirm address")))
    status = runner.revise(define_program("client-intake", goals=[grown, gp.ELIGIBILITY]), if_version=current.version)
    assert status.goal("identity").status == "active"
    assert ("reopen", "identity") in hooks.kinds()


def test_the_program_identity_cannot_change_within_a_scope(make):
    runner = make()
    runner.start(gp.intake())
    with pytest.raises(InvalidArgumentError, match="another scope"):
        runner.revise(define_program("billing", goals=[gp.IDENTITY]), if_version=1)
    assert runner.inspect().program.key == "client-intake"


def test_a_revision_needs_the_version_it_was_made_from(make):
    runner = make()
    runner.start(gp.intake())
    runner.update(goal="identity", completed=["client"])
    with pytest.raises(GoalConflictError):
        runner.revise(gp.intake(), if_version=1)
    with pytest.raises(TypeError):
        runner.revise(gp.intake())  # the version is not optional


# --------------------------------------------------------------------------- locks and validate_change


@pytest.mark.parametrize(
    "change",
    [
        lambda g: dataclasses.replace(g, items=(dataclasses.replace(g.items[0], label="Check ID"),)),  # edit
        lambda g: dataclasses.replace(g, items=()),  # remove
        lambda g: dataclasses.replace(g, items=(dataclasses.replace(g.items[0], retired=True),)),  # retire
        lambda g: dataclasses.replace(g, items=(dataclasses.replace(g.items[0], locked=False),)),  # unlock
    ],
    ids=["edit", "remove", "retire", "unlock"],
)
def test_a_locked_item_cannot_be_edited_removed_retired_or_unlocked(make, change):
    runner = make()
    runner.start(gp.intake())
    with pytest.raises(GoalLockedError) as caught:
        runner.revise(define_program("client-intake", goals=[change(gp.IDENTITY), gp.ELIGIBILITY]), if_version=1)
    assert caught.value.code == "goal_locked"
    assert runner.inspect().version == 1


def test_a_locked_goal_cannot_be_removed_or_edited(make):
    locked = dataclasses.replace(gp.ELIGIBILITY, locked=True)
    runner = make()
    runner.start(define_program("client-intake", goals=[gp.IDENTITY, locked]))
    with pytest.raises(GoalLockedError):
        runner.revise(define_program("client-intake", goals=[gp.IDENTITY]), if_version=1)
    with pytest.raises(GoalLockedError):
        runner.revise(
            define_program("client-intake", goals=[gp.IDENTITY, dataclasses.replace(locked, title="Other")]),
            if_version=1,
        )


def test_locks_do_not_constrain_dispositions(make):
    runner = make()
    runner.start(gp.intake())
    runner.update(goal="identity", completed=["client"])
    status = runner.update(goal="identity", reopened=["client"])
    assert dispositions(status, "identity") == {"client": "pending"}


def test_validate_change_runs_before_every_commit_and_rejects_by_raising(make):
    seen = []

    def validate(change):
        seen.append((change.kind, change.before.version if change.before else None, change.after.version))
        if change.kind == "update" and change.after.item("identity", "client").disposition == "declined":
            raise InvalidArgumentError("Identity cannot be declined in this practice.")

    runner = make(validate_change=validate)
    runner.start(gp.intake())
    with pytest.raises(InvalidArgumentError, match="cannot be declined"):
        runner.update(goal="identity", declined=["client"])
    assert runner.inspect().version == 1
    runner.update(goal="identity", completed=["client"])
    assert seen == [("start", None, 1), ("update", 1, 2), ("update", 1, 2)]


# --------------------------------------------------------------------------- deferred work


def test_deferred_work_stays_visible_after_completion_until_completed(make):
    runner = make()
    runner.start(gp.intake())
    runner.update(goal="identity", completed=["client"])
    current = runner.inspect()
    runner.revise(gp.follow_up(current), if_version=current.version)
    status = runner.update(
        goal="updates",
        completed=["changes"],
        deferred=["documents"],
        reason="Update recorded; client will send documents tomorrow",
    )
    assert status.complete
    assert [(f.goal, f.item, f.reason) for f in status.follow_ups] == [
        ("updates", "documents", "Update recorded; client will send documents tomorrow")
    ]
    assert status.line.endswith("deferred: 1")
    status = make().update(goal="updates", completed=["documents"], reason="documents received")
    assert status.follow_ups == () and status.item("updates", "documents").done


def test_deferrals_of_removed_definitions_stay_visible_and_can_be_declined(make):
    runner = make()
    runner.start(gp.intake())
    runner.update(goal="eligibility", deferred=["income"])
    current = runner.inspect()
    status = runner.revise(define_program("client-intake", goals=[gp.IDENTITY]), if_version=current.version)
    assert [(f.goal, f.item, f.defined) for f in status.follow_ups] == [("eligibility", "income", False)]
    runner.update(goal="identity", completed=["client"])
    assert runner.inspect().complete and len(runner.inspect().follow_ups) == 1
    with pytest.raises(InvalidArgumentError):
        runner.update(goal="eligibility", reopened=["income"])  # not defined: nothing to reopen
    status = runner.update(goal="eligibility", declined=["income"], reason="no longer needed")
    assert status.follow_ups == ()


# --------------------------------------------------------------------------- hooks


def test_hooks_receive_goal_transition_reason_and_a_stable_key(make):
    hooks = gp.HookRecorder()
    runner = make(hooks=hooks)
    runner.start(gp.intake(), reason="new client")
    runner.update(goal="identity", completed=["client"], reason="verified")
    assert hooks.kinds() == [("enter", "identity"), ("complete", "identity"), ("enter", "eligibility")]
    kind, goal, status, reason, key = hooks.calls[1]
    assert (status, reason) == ("complete", "verified")
    assert key == f"{SCOPE.id}:2:identity:complete"


def test_a_failed_hook_leaves_the_commit_and_resume_runs_it_again_with_the_same_key(make):
    keys = []
    fail = [True]

    def on_complete(event):
        keys.append(event.idempotency_key)
        if fail[0]:
            raise RuntimeError("mail server down")

    runner = make(hooks={"on_complete": on_complete})
    runner.start(gp.intake())
    status = runner.update(goal="identity", completed=["client"])
    assert status.version == 2 and [o.status for o in runner.last_hooks if o.kind == "complete"] == ["failed"]
    fail[0] = False
    outcomes = runner.resume_hooks()
    assert [o.status for o in outcomes] == ["ok"]
    assert keys == [keys[0], keys[0]]
    assert runner.resume_hooks() == []  # done effects are skipped


def test_another_runner_on_the_scope_does_not_rerun_done_hooks(make):
    hooks = gp.HookRecorder()
    make(hooks=hooks).start(gp.intake())
    again = gp.HookRecorder()
    assert make(hooks=again).resume_hooks() == []
    assert again.calls == [] and len(hooks.calls) == 1


# --------------------------------------------------------------------------- storage and conflicts


def test_history_is_append_only_complete_snapshots(make):
    runner = make()
    runner.start(gp.intake())
    runner.update(goal="identity", completed=["client"], reason="verified")
    current = runner.inspect()
    runner.revise(gp.follow_up(current), if_version=current.version, reason="follow-up")
    history = runner.history()
    assert [h.version for h in history] == [1, 2, 3]
    assert [h.change for h in history] == ["start", "update", "revise"]
    assert [len(h.program.goals) for h in history] == [2, 2, 3]  # each with its own definitions
    assert history[0].item("identity", "client").disposition == "pending"
    assert history[1].actor == "intake-agent" and history[1].source == "conversation:3"


def test_a_model_style_update_with_a_stale_version_is_a_conflict(make):
    runner = make()
    runner.start(gp.intake())
    make().update(goal="eligibility", completed=["conflict"])
    with pytest.raises(GoalConflictError):
        runner.update(goal="identity", completed=["client"], if_version=1)
    assert runner.update(goal="identity", completed=["client"], if_version=2).version == 3


def test_a_host_update_without_a_version_is_retried_for_disjoint_items(make, goal_adapter):
    runner = make()
    runner.start(gp.intake())
    other = make()

    def racing(change):
        # The first attempt of the host's update meets another writer's disjoint change.
        if change.kind == "update" and change.after.version == 2 and not racing.done:
            racing.done = True
            other.update(goal="eligibility", completed=["conflict"])

    racing.done = False
    status = make(validate_change=racing).update(goal="identity", completed=["client"])
    assert status.version == 3
    assert dispositions(status, "eligibility")["conflict"] == "completed"
    assert dispositions(status, "identity")["client"] == "completed"


def test_a_host_update_racing_on_the_same_item_is_a_conflict(make):
    runner = make()
    runner.start(gp.intake())
    other = make()

    def racing(change):
        if change.kind == "update" and not racing.done:
            racing.done = True
            other.update(goal="identity", declined=["client"])

    racing.done = False
    with pytest.raises(GoalConflictError, match="same items"):
        make(validate_change=racing).update(goal="identity", completed=["client"])
    assert dispositions(runner.inspect(), "identity") == {"client": "declined"}


def test_a_host_update_racing_a_revision_is_a_conflict(make):
    runner = make()
    runner.start(gp.intake())

    def racing(change):
        if change.kind == "update" and not racing.done:
            racing.done = True
            make().revise(
                define_program("client-intake", goals=[gp.IDENTITY, gp.ELIGIBILITY, gp.UPDATES]), if_version=1
            )

    racing.done = False
    with pytest.raises(GoalConflictError):
        make(validate_change=racing).update(goal="eligibility", completed=["income"])


def test_reads_are_detached_snapshots(make):
    runner = make()
    runner.start(gp.intake())
    status = runner.inspect()
    status.progress.clear() if isinstance(status.progress, dict) else None
    runner.update(goal="identity", completed=["client"])
    assert runner.history()[0].version == 1 and runner.inspect().version == 2


def test_each_store_keeps_programs_across_adapters(goal_adapter, tmp_path):
    if isinstance(goal_adapter, MemoryAdapter):
        pytest.skip("the in-memory store lasts one adapter")
    runner = GoalRunner(goal_adapter, scope=SCOPE, actor="a")
    runner.start(gp.intake())
    if isinstance(goal_adapter, JsonFileAdapter):
        fresh = JsonFileAdapter(goal_adapter.directory)
    else:
        from formctl.store.postgres import PostgresAdapter

        fresh = PostgresAdapter(goal_adapter.dsn)
    try:
        status = GoalRunner(fresh, scope=SCOPE, actor="b").inspect()
    finally:
        fresh.close()
    assert status.version == 1 and status.program == gp.intake()


# --------------------------------------------------------------------------- form-bound items


def test_a_form_bound_item_completes_with_its_form_and_says_which_instance(goal_adapter, registry):
    program = define_program(
        "claims",
        goals=[Goal("claim", title="Claim", items=[Item("small", label="A small form", form="trio")])],
    )
    scope = GoalScope(subject="dana", key="claims")
    goals = GoalRunner(goal_adapter, scope=scope, actor="host")
    goals.start(program)
    forms = FormRunner(goal_adapter, registry=registry, subject="dana")
    forms.start("trio")
    open_id = forms.open_instance().id
    assert goals.inspect().item("claim", "small").instance == open_id
    assert goals.inspect().item("claim", "small").disposition == "pending"
    forms.fill({"a": "x", "b": "y", "c": "z"})
    assert forms.open_instance().status == "complete"
    status = goals.sync()
    item = status.item("claim", "small")
    assert (item.disposition, item.instance) == ("completed", open_id)
    assert status.complete
