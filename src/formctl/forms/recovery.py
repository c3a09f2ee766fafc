"""Recovery and migration: the two explicit writes that bring an instance up to date.

``recover`` re-runs, under the same idempotency key, every executor a process that died
left ``running`` (docs/engine.md, "Commit then run"). ``migrate`` moves an instance to the
registered version of its form through the ordinary commit cycle (docs/engine.md, "Drift").
Reads never do either; the chat does both when a conversation opens, and every write does
both before it commits. Both drive a :class:`~formctl.forms.write.Write` the runner hands them.
"""

from __future__ import annotations

from formctl.forms.acts import Act, act_dispatch
from formctl.forms.executors import HookRound, hook_for
from formctl.forms.instance import DISPATCH_FAILED, STALE, Commit, DispatchState, Instance
from formctl.forms.lifecycle import clear_stale
from formctl.forms.project import MigrateResult, WriteReport
from formctl.forms.staging import RoundEnd, plan_migration
from formctl.forms.write import Write

__all__ = ["migrate", "recover"]


def recover(write: Write, instance: Instance) -> tuple[Instance, list[str]]:
    """Re-run every orphaned dispatch of ``instance``; returns the instance and the keys re-run
    (what the hooks reported is in ``write.failures``)."""
    orphans = write.dispatcher.orphans(instance)
    if not orphans:
        return instance, []
    compiled = write.compiled
    ev = write.evaluation(instance)
    rerun: list[str] = []
    round_ = HookRound.of(compiled, ev, instance.occurrences, write.failures)
    effects = round_.effects
    for key, record in orphans:
        hook = hook_for(compiled, record.hook_id, key)
        if hook is None:
            gone = DispatchState(
                record.hook_id,
                DISPATCH_FAILED,
                record.attempts,
                write.clock(),
                "The definition no longer has this hook.",
            )
            write.dispatcher.record(instance.id, key, gone, write.prov)
            continue
        rerun.append(key)
        write.dispatcher.run_hook(instance, hook, round_)
        if effects.terminate is not None:
            break
    instance = write.reload(instance.id)
    instance = write.finish_round(instance, RoundEnd(effects, [], set_completed_now=False))
    return instance, rerun


def migrate(
    write: Write, instance: Instance, *, reason: str | None = None, override: str | None = None
) -> tuple[Instance, MigrateResult]:
    """Write the migration :func:`~formctl.forms.staging.plan_migration` decides, as one ordinary
    commit cycle; the result reports what was refused and what nothing carried. Recorded as a
    ``migrate`` act (who, when, which versions, ``reason``; ``override``: a closed record moved
    on the host's explicit word: docs/engine.md, "Host acts")."""
    compiled = write.compiled
    items, rejected, dropped = plan_migration(compiled, instance)
    from_version, new_version = instance.def_version, compiled.version

    def amend(inst: Instance, commit: Commit) -> None:
        commit.def_version = new_version
        if inst.status == STALE:  # committed by an older formctl, whose reads marked it
            clear_stale(commit)
        detail = f"version {inst.def_version} → {new_version}"
        commit.dispatches = act_dispatch(
            inst, Act("migrate", write.prov.actor, write.prov.timestamp, reason, detail, override)
        )

    instance, _ = write.cycle(instance, lambda inst: (items, {}), amend=amend)
    return instance, write.result(
        instance,
        WriteReport(rejected=rejected),
        kind=MigrateResult,
        from_version=from_version,
        to_version=new_version,
        dropped=dropped,
    )
