"""Executors: the hooks a write's rising edges imply, run after the commit (docs/engine.md, "Commit then run").

Each run is recorded under its idempotency key ``instance:hook:occurrence`` (``running``,
then ``ok`` or ``failed``), outside compare-and-set, so a record a dead process left
``running`` can be found and run again (``runner.recover``). Effects a hook returns
(Patch, Jump, Complete, Terminate) are collected per round and applied by the runner's
closing commit; an effect naming what the form does not have fails the hook instead.
"""

from __future__ import annotations

import inspect
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

from formctl.errors import FormError
from formctl.forms.adapter import FormAdapter
from formctl.forms.compile import CompiledForm
from formctl.forms.definition import Complete, Effect, Fail, Jump, Patch, Terminate
from formctl.forms.evaluate import Evaluation, GateState, Values
from formctl.forms.failures import COULD_NOT_CHECK as COULD_NOT_CHECK  # re-exported: defined beside the failures
from formctl.forms.failures import Failure
from formctl.forms.instance import (
    DISPATCH_FAILED,
    DISPATCH_OK,
    DISPATCH_RUNNING,
    DispatchState,
    Instance,
    Provenance,
    running_runs,
)
from formctl.forms.validate import json_data, size_issue

# Worked out on first use, as is the logger: ``socket`` and ``logging`` cost ~5 ms each to
# import, and most commands (``inspect``, ``history``, a chat turn with no executor) need neither.
_OWNER = ""


def owner() -> str:
    """``host:pid`` of this process, recomputed after a fork so a child never claims its parent's records."""
    global _OWNER
    pid = os.getpid()
    if not _OWNER.endswith(f":{pid}"):
        import socket

        _OWNER = f"{socket.gethostname()}:{pid}"
    return _OWNER


def _log(message: str, *args: Any, exc_info: BaseException | None = None) -> None:
    """``logging.getLogger("formctl.executors").info(...)``: a host sees executor faults at INFO."""
    import logging

    logging.getLogger("formctl.executors").info(message, *args, exc_info=exc_info, stacklevel=2)


@dataclass(slots=True)
class ExecutorContext:
    """What an executor receives: ``def notify(ctx: ExecutorContext) -> Effect | list[Effect] | None``."""

    values: Values
    state: GateState
    instance: Instance
    hook_id: str
    idempotency_key: str
    form_id: str
    replaying: bool = False


@dataclass(slots=True)
class Hook:
    """One executor to run: which hook, its function (None for a checkpoint that only waits), its occurrence."""

    hook_id: str
    fn: Callable[[Any], Any] | None
    occurrence: int
    checkpoint: Any = None  # CompiledCheckpoint for checkpoint hooks


@dataclass(slots=True)
class RoundEffects:
    """What the hooks of one round asked for, applied together by the round's closing commit."""

    patch: dict[str, Any] = dc_field(default_factory=dict)
    patched_by: dict[str, str] = dc_field(default_factory=dict)  # field key -> the hook whose Patch set it
    jump: str | None = None
    complete: bool = False
    terminate: str | None = None
    waiting_on: str | None = None
    checkpoints_run: set[str] = dc_field(default_factory=set)  # dispatched this round


@dataclass(slots=True)
class HookRound:
    """What the hooks of one round share: the form, the values and the state their ``ctx`` reads
    (as of the round's evaluation), and where their effects and failures gather."""

    compiled: CompiledForm
    values: Values
    state: GateState
    failures: list[Failure]
    effects: RoundEffects = dc_field(default_factory=RoundEffects)

    @classmethod
    def of(
        cls, compiled: CompiledForm, evaluation: Evaluation, fired: dict[str, int], failures: list[Failure]
    ) -> HookRound:
        """A round read from ``evaluation``, the checkpoints' occurrences ``fired`` as its state says."""
        return cls(compiled, evaluation.gate_values(), evaluation.frozen_state(fired), failures)


class Dispatcher:
    """Runs hooks under their idempotency keys and records each run; one per runner."""

    def __init__(
        self,
        adapter: FormAdapter,
        provenance: Callable[[str | None], Provenance],
        clock: Callable[[], str],
    ) -> None:
        self.adapter = adapter
        self._provenance = provenance
        self.clock = clock  # the runner's: when each run started and finished
        self.replaying = False
        self.in_flight: set[str] = set()  # keys whose executor runs in this process right now

    def orphans(self, instance: Instance) -> list[tuple[str, DispatchState]]:
        """Records left ``running`` by a process that is gone (not in flight here, owner not alive)."""
        return [
            (key, record)
            for key, record in running_runs(instance)
            if key not in self.in_flight and not owner_alive(record.owner)
        ]

    def dispatch(
        self,
        compiled: CompiledForm,
        committed: Instance,
        queue: list[Hook],
        after: Evaluation,
        fired_before: dict[str, int],
        failures: list[Failure],
    ) -> RoundEffects:
        if not queue:
            return RoundEffects()
        round_ = HookRound.of(compiled, after, fired_before, failures)
        snapshot = committed
        for hook in queue:
            if round_.effects.terminate is not None:
                break  # once a hook terminates, no later hook of the round runs
            self.run_hook(snapshot, hook, round_)
            if hook is not queue[-1]:
                snapshot = self.adapter.get_instance(committed.id) or snapshot
        return round_.effects

    def run_hook(self, snapshot: Instance, hook: Hook, round_: HookRound) -> None:
        """Run ``hook`` on ``snapshot`` under its idempotency key, unless a run of it succeeded
        already; its effects or its failure go to ``round_``."""
        compiled, effects = round_.compiled, round_.effects
        iid = snapshot.id
        checkpoint = hook.checkpoint
        if checkpoint is not None:
            effects.checkpoints_run.add(checkpoint.id)
        if hook.fn is None:
            if checkpoint is not None and checkpoint.waits_for_host and effects.waiting_on is None:
                effects.waiting_on = checkpoint.id
            return
        key = f"{iid}:{hook.hook_id}:{hook.occurrence}"
        previous = snapshot.dispatches.get(key)
        if previous is not None and previous.succeeded:
            return
        attempts = (previous.attempts if previous else 0) + 1
        prov = self._provenance("dispatch")
        self.record(
            iid, key, DispatchState(hook.hook_id, DISPATCH_RUNNING, attempts, self.clock(), owner=owner()), prov
        )
        self.in_flight.add(key)
        try:
            ctx = ExecutorContext(round_.values, round_.state, snapshot, hook.hook_id, key, compiled.id, self.replaying)
            error, items, detail = call_executor(hook.fn, ctx)
        finally:
            self.in_flight.discard(key)
        if error is None:
            detail = check_effects(compiled, items)
            if detail is not None:
                error = COULD_NOT_CHECK
                _log("%s (%s) broke the executor contract: %s", hook.hook_id, key, detail)
        at = self.clock()
        if error is not None:
            round_.failures.append(Failure(hook.hook_id, error, at))
        else:
            apply_effects(compiled, items, effects, hook.hook_id)
            if checkpoint is not None and checkpoint.waits_for_host and not items and effects.waiting_on is None:
                effects.waiting_on = checkpoint.id
        done = DispatchState(
            hook.hook_id, DISPATCH_FAILED if error else DISPATCH_OK, attempts, at, error, detail=detail
        )
        self.record(iid, key, done, prov)

    def record(self, iid: str, key: str, state: DispatchState, prov: Provenance) -> None:
        try:
            self.adapter.record_dispatch(iid, key, state, prov)
        except FormError:
            # Dispatch bookkeeping is outside compare-and-set and never fails a write; a lost
            # record costs at most a repeated executor run, which the idempotency key absorbs.
            pass


def call_executor(fn: Callable[[Any], Any], ctx: ExecutorContext) -> tuple[str | None, list[Any], str | None]:
    """Run one executor: ``(error, effects, detail)``.

    A ``Fail`` is the form's own verdict: its reason is the error, said to the person as
    written. An exception, or a return that is not an effect, is a fault: the error is
    :data:`COULD_NOT_CHECK` and ``detail`` says what happened, for the host.
    """
    try:
        result = fn(ctx)
        if inspect.isawaitable(result):
            result = _run_awaitable(result)
    except Exception as exc:
        detail = fault_text(exc)
        _log("%s (%s) raised: %s", ctx.hook_id, ctx.idempotency_key, detail, exc_info=exc)
        return COULD_NOT_CHECK, [], detail
    if result is None or result is False:
        return None, [], None
    items = list(result) if isinstance(result, (list, tuple)) else [result]
    for item in items:
        if not isinstance(item, Effect):
            detail = (
                f"Executor returned {type(item).__name__} {item!r:.60}, not an effect "
                "(Patch, Fail, Jump, Complete or Terminate)."
            )
            _log("%s (%s): %s", ctx.hook_id, ctx.idempotency_key, detail)
            return COULD_NOT_CHECK, [], detail
    for item in items:
        if isinstance(item, Fail):
            return (item.reason or "Rejected."), [], None
    return None, items, None


def fault_text(exc: BaseException) -> str:
    """An exception for the host, in one line: its type, its message and where it was raised
    (``ZeroDivisionError: division by zero (travel_claim.py:31, in _check)``)."""
    import traceback

    text = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}".rstrip(": ")
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        last = frames[-1]
        text += f" ({os.path.basename(last.filename)}:{last.lineno}, in {last.name})"
    return text


def check_effects(compiled: CompiledForm, items: list[Any]) -> str | None:
    """Effects naming what the form does not have fail the hook, applying none of them.

    A jump to no step or a patch to no field is a bug in the executor, worth a visible
    failure rather than a silent drop (docs/engine.md, 'Commit then run').
    """
    for item in items:
        if isinstance(item, Jump) and compiled.resolve_step(item.step) is None:
            return f'Jump to unknown step "{item.step}".'
        if isinstance(item, Patch):
            if not isinstance(item.values, dict):
                return "Patch needs a dict of field ids to values."
            for key, value in item.values.items():
                field_id = compiled.resolve_field(key)
                if field_id is None:
                    return f'Patch names unknown field "{key}".'
                field = compiled.field_by_id[field_id]
                if field.derive is not None:
                    return f'Patch names "{key}", which the form derives from other answers: nobody sets it.'
                too_big = size_issue(value, field.text_limit(compiled.max_text))
                if too_big is not None:
                    return f'Patch value for "{key}" is refused: {too_big.message}'
                try:
                    json_data(value)
                except ValueError as exc:
                    return f'Patch value for "{key}" is not JSON data ({exc}).'
    return None


def apply_effects(compiled: CompiledForm, items: list[Any], effects: RoundEffects, hook_id: str | None = None) -> None:
    for item in items:
        if isinstance(item, Patch):
            effects.patch.update(item.values)
            if hook_id is not None:
                effects.patched_by.update(dict.fromkeys(item.values, hook_id))
        elif isinstance(item, Jump):
            effects.jump = compiled.resolve_step(item.step)
        elif isinstance(item, Complete):
            effects.complete = True
        elif isinstance(item, Terminate):
            effects.terminate = item.reason or "Terminated."


def _run_awaitable(awaitable: Any) -> Any:
    import asyncio  # only async executors need it; host commands start faster without it

    async def wrapper() -> Any:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wrapper())
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(wrapper())
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box.get("value")


def owner_alive(owner: str | None) -> bool:
    if not owner or ":" not in owner:
        return False
    import socket

    host, _, pid_text = owner.rpartition(":")
    if host != socket.gethostname():
        return True  # another machine's process: we cannot tell, so we do not steal its work
    try:
        pid = int(pid_text)
    except ValueError:
        return False
    if pid == os.getpid():
        return False  # ours, and not in flight (checked by the caller): left by an earlier crash
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def failed_runs(instance: Instance) -> list[dict[str, Any]]:
    """Every executor run that failed, oldest first, for the host's ``formctl history``: the hook,
    when, which attempt, what people were told and, for a fault, what went wrong (``detail``).
    A host's rejection of a checkpoint is a decision, listed with the resolutions instead."""
    from formctl.forms.resolutions import is_resolution

    rows = []
    for key, record in instance.dispatches.items():
        if not record.failed or is_resolution(key):
            continue
        row: dict[str, Any] = {
            "hook": record.hook_id,
            "at": record.at,
            "attempts": record.attempts,
            "message": record.error,
        }
        if record.detail:
            row["detail"] = record.detail
        rows.append(row)
    rows.sort(key=lambda r: r["at"])
    return rows


def hook_for(compiled: CompiledForm, hook_id: str, key: str) -> Hook | None:
    try:
        occurrence = int(key.rsplit(":", 1)[1])
    except (IndexError, ValueError):
        occurrence = 0
    kind, _, name = hook_id.partition(":")
    if kind == "field" and name in compiled.field_by_id:
        fn = compiled.field_by_id[name].on_fill
        return Hook(hook_id, fn, occurrence) if fn is not None else None
    if kind == "step" and name in compiled.step_by_id:
        fn = compiled.step_by_id[name].on_complete
        return Hook(hook_id, fn, occurrence) if fn is not None else None
    if kind == "checkpoint" and name in compiled.checkpoint_by_id:
        cp = compiled.checkpoint_by_id[name]
        return Hook(hook_id, cp.run, occurrence, cp) if cp.run is not None else None
    if hook_id == "form" and compiled.on_complete is not None:
        return Hook(hook_id, compiled.on_complete, occurrence)
    return None
