"""Recovery and migration: the two explicit writes that bring an instance up to date.

``recover`` re-runs, under the same idempotency key, every executor a process that died
left ``running`` (docs/engine.md, "Commit then run"). ``migrate`` moves an instance to the
registered version of its form through the ordinary commit cycle (docs/engine.md, "Drift").
Reads never do either; the chat does both when a conversation opens, and every write does
both before it commits. The runner owns the cycle; these functions drive it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from formctl.errors import MigrationError
from formctl.forms.compile import CompiledForm
from formctl.forms.executors import RoundEffects, hook_for
from formctl.forms.failures import Failure, open_failures
from formctl.forms.instance import ACTIVE, DISPATCH_FAILED, STALE, DispatchState, Instance
from formctl.forms.messages import rejection
from formctl.forms.project import MigrateResult, Rejected, step_view
from formctl.forms.staging import Staged, is_blank
from formctl.forms.validate import json_data

if TYPE_CHECKING:  # pragma: no cover
    from formctl.forms.runner import FormRunner


def recover(
    runner: FormRunner, compiled: CompiledForm, instance: Instance
) -> tuple[Instance, list[str], list[Failure]]:
    """Re-run every orphaned dispatch of ``instance``; returns the instance, the keys re-run and the failures."""
    orphans = runner._dispatcher.orphans(instance)
    if not orphans:
        return instance, [], []
    with runner._lock:
        ev = runner._evaluation(compiled, instance)
        failures: list[Failure] = []
        rerun: list[str] = []
        effects = RoundEffects()
        for key, record in orphans:
            hook = hook_for(compiled, record.hook_id, key)
            if hook is None:
                gone = DispatchState(
                    record.hook_id,
                    DISPATCH_FAILED,
                    record.attempts,
                    runner.clock(),
                    "The definition no longer has this hook.",
                )
                runner._dispatcher.record(instance.id, key, gone, runner._provenance("recovery"))
                continue
            rerun.append(key)
            runner._dispatcher.run_hook(
                compiled, instance, hook, ev.gate_values(), ev.frozen_state(instance.occurrences), effects, failures
            )
            if effects.terminate is not None:
                break
        prov = runner._provenance("recovery")
        instance = runner._reload(instance.id)
        instance = runner._finish_round(
            compiled, instance, effects, prov, failures, appended_fields=[], set_completed_now=False, round_no=0
        )
        return instance, rerun, failures


def plan_migration(compiled: CompiledForm, instance: Instance) -> tuple[list[Staged], MigrateResult]:
    """What moving ``instance`` to ``compiled`` writes, and the result that reports it (its view still unset).

    The form's ``migrate`` carries the answers (without one, every answer to a field the new
    version still has); carried values the new version accepts are staged, the rest withdrawn
    and reported in ``rejected``; old answers nothing carried are withdrawn and listed in ``dropped``.
    """
    old_version = instance.def_version
    old_values = instance.in_force_values()
    result = MigrateResult(view=None, from_version=old_version, to_version=compiled.version)  # type: ignore[arg-type]
    if compiled.migrate is not None:
        try:
            carried = compiled.migrate(dict(old_values), old_version)
        except Exception as exc:
            raise MigrationError(
                f'Migrating "{compiled.id}" from version {old_version} to {compiled.version} failed: {exc}',
            ) from exc
        if not isinstance(carried, dict):
            raise MigrationError(
                f'migrate() for "{compiled.id}" must return a dict of values, not {type(carried).__name__}.',
            )
    else:
        carried = {key: value for key, value in old_values.items() if key in compiled.field_by_id}
    staged: dict[str, Staged] = {}
    kept: set[str] = set()
    refused: set[str] = set()
    for key, value in carried.items():
        field_id = compiled.resolve_field(key)
        if field_id is None:
            continue
        try:
            value = json_data(value)
        except ValueError as exc:
            raise MigrationError(
                f'migrate() for "{compiled.id}" returned a value for "{key}" that is not JSON data ({exc}).',
            ) from None
        if is_blank(value):
            continue
        field = compiled.field_by_id[field_id]
        outcome = field.validator.validate(value)
        if not outcome.ok:
            refused.add(field_id)
            for issue in outcome.issues:
                result.rejected.append(Rejected(field_id, *rejection(field, issue, value)))
            continue
        kept.add(field_id)
        if field_id in old_values and old_values[field_id] == value:
            continue
        staged[field_id] = Staged(field_id, value, outcome, field.validator)
    for field_id, value in old_values.items():
        if field_id not in kept:
            staged[field_id] = Staged(field_id, None, retract=True)
            if field_id not in refused:
                result.dropped[field_id] = value
    return list(staged.values()), result


def migrate(runner: FormRunner, compiled: CompiledForm, instance: Instance) -> tuple[Instance, MigrateResult]:
    """Write the migration :func:`plan_migration` decides, as one ordinary commit cycle."""
    items, result = plan_migration(compiled, instance)
    new_version = compiled.version

    def extra(inst: Instance) -> dict[str, Any]:
        out: dict[str, Any] = {"def_version": new_version}
        if inst.status == STALE:  # committed by an older formctl, whose reads marked it
            out["status"] = ACTIVE
        return out

    with runner._lock:
        prov = runner._provenance(f"migrated {result.from_version} → {new_version}", "migrated")
        failures: list[Failure] = []
        instance, _ = runner._cycle(compiled, instance, lambda inst: (items, {}), prov, failures, extra=extra)
        ev = runner._evaluation(compiled, instance)
        result.view = step_view(compiled, ev, instance)
        result.failures = failures or open_failures(instance, compiled, ev)
    return instance, result
