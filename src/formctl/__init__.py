"""formctl: run conversational forms in a terminal.

The public API is re-exported here and imported lazily (PEP 562), so ``import formctl``
and ``formctl list`` stay fast: pydantic, the engine and the store load on first use of
a name, and anthropic and prompt-toolkit never load from here at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from formctl._lazy import lazy_exports

__version__ = "0.1.0"

# Written out, not computed, so linters and type checkers can read the public API;
# tests/architecture/test_public_api.py checks it names exactly the keys of _EXPORTS.
__all__ = [
    "AlreadyExistsError",
    "CheckFailedError",
    "CompiledForm",
    "Complete",
    "ConflictError",
    "DerivedFieldError",
    "Effect",
    "Evaluation",
    "ExecutorContext",
    "Fail",
    "FormAdapter",
    "FormBlockedError",
    "FormBuilder",
    "FormDefinitionError",
    "FormError",
    "FormOpenError",
    "FormRegistry",
    "FormRunner",
    "FormStaleError",
    "GateState",
    "Goal",
    "GoalChange",
    "GoalConflictError",
    "GoalEvent",
    "GoalLockedError",
    "GoalRunner",
    "GoalScope",
    "GoalStatus",
    "HostOnlyError",
    "InstanceClosedError",
    "InvalidArgumentError",
    "Item",
    "JsonFileAdapter",
    "Jump",
    "KeyRejectedError",
    "MemoryAdapter",
    "MigrationError",
    "ModelError",
    "NeedsReopenError",
    "NotFoundError",
    "NotReadyError",
    "NotWaitingError",
    "NothingToMoveError",
    "OwnRequestError",
    "Patch",
    "PostgresAdapter",
    "ProvenanceError",
    "RegistryError",
    "ScenarioError",
    "Status",
    "StoreDamagedError",
    "StoreError",
    "Terminate",
    "ToolSelectionError",
    "TranscriptError",
    "UnknownFormError",
    "Values",
    "apply_entry_commit",
    "compile_form",
    "define_form",
    "define_program",
    "evaluate",
]

_EXPORTS = {
    "define_form": "formctl.forms.builder",
    "FormBuilder": "formctl.forms.builder",
    "Patch": "formctl.forms.definition",
    "Fail": "formctl.forms.definition",
    "Jump": "formctl.forms.definition",
    "Complete": "formctl.forms.definition",
    "Effect": "formctl.forms.definition",
    "compile_form": "formctl.forms.compile",
    "CompiledForm": "formctl.forms.compile",
    "evaluate": "formctl.forms.evaluate",
    "Evaluation": "formctl.forms.evaluate",
    "GateState": "formctl.forms.evaluate",
    "Values": "formctl.forms.evaluate",
    "ExecutorContext": "formctl.forms.executors",
    "Status": "formctl.forms.lifecycle",
    "Terminate": "formctl.forms.definition",
    "FormRegistry": "formctl.forms.registry",
    "FormRunner": "formctl.forms.runner",
    "MemoryAdapter": "formctl.store.memory",
    "JsonFileAdapter": "formctl.store.jsonfile",
    "PostgresAdapter": "formctl.store.postgres",  # psycopg loads only when a PostgresAdapter is made
    "FormAdapter": "formctl.forms.adapter",
    "apply_entry_commit": "formctl.forms.commit",
    "FormError": "formctl.errors",
    "FormBlockedError": "formctl.errors",
    "FormStaleError": "formctl.errors",
    "FormDefinitionError": "formctl.errors",
    "ConflictError": "formctl.errors",
    "NotFoundError": "formctl.errors",
    "NotReadyError": "formctl.errors",
    "CheckFailedError": "formctl.errors",
    "DerivedFieldError": "formctl.errors",
    "UnknownFormError": "formctl.errors",
    "StoreError": "formctl.errors",
    "StoreDamagedError": "formctl.errors",
    "InvalidArgumentError": "formctl.errors",
    "ProvenanceError": "formctl.errors",
    "RegistryError": "formctl.errors",
    "ModelError": "formctl.errors",
    "ToolSelectionError": "formctl.errors",
    "TranscriptError": "formctl.errors",
    "GoalConflictError": "formctl.errors",
    "GoalLockedError": "formctl.errors",
    # Goal programs (docs/goals.md)
    "define_program": "formctl.goals.definition",
    "Goal": "formctl.goals.definition",
    "Item": "formctl.goals.definition",
    "GoalRunner": "formctl.goals.runner",
    "GoalChange": "formctl.goals.runner",
    "GoalScope": "formctl.goals.state",
    "GoalStatus": "formctl.goals.view",
    "GoalEvent": "formctl.goals.hooks",
    "KeyRejectedError": "formctl.errors",
    "InstanceClosedError": "formctl.errors",
    "NothingToMoveError": "formctl.errors",
    "NeedsReopenError": "formctl.errors",
    "OwnRequestError": "formctl.errors",
    "MigrationError": "formctl.errors",
    "NotWaitingError": "formctl.errors",
    "HostOnlyError": "formctl.errors",
    "FormOpenError": "formctl.errors",
    "AlreadyExistsError": "formctl.errors",
    "ScenarioError": "formctl.errors",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from formctl.errors import (
        AlreadyExistsError,
        CheckFailedError,
        ConflictError,
        DerivedFieldError,
        FormBlockedError,
        FormDefinitionError,
        FormError,
        FormOpenError,
        FormStaleError,
        GoalConflictError,
        GoalLockedError,
        HostOnlyError,
        InstanceClosedError,
        InvalidArgumentError,
        KeyRejectedError,
        MigrationError,
        ModelError,
        NeedsReopenError,
        NotFoundError,
        NothingToMoveError,
        NotReadyError,
        NotWaitingError,
        OwnRequestError,
        ProvenanceError,
        RegistryError,
        ScenarioError,
        StoreDamagedError,
        StoreError,
        ToolSelectionError,
        TranscriptError,
        UnknownFormError,
    )
    from formctl.forms.adapter import FormAdapter
    from formctl.forms.builder import FormBuilder, define_form
    from formctl.forms.commit import apply_entry_commit
    from formctl.forms.compile import CompiledForm, compile_form
    from formctl.forms.definition import Complete, Effect, Fail, Jump, Patch, Terminate
    from formctl.forms.evaluate import Evaluation, GateState, Values, evaluate
    from formctl.forms.executors import ExecutorContext
    from formctl.forms.lifecycle import Status
    from formctl.forms.registry import FormRegistry
    from formctl.forms.runner import FormRunner
    from formctl.goals.definition import Goal, Item, define_program
    from formctl.goals.hooks import GoalEvent
    from formctl.goals.runner import GoalChange, GoalRunner
    from formctl.goals.state import GoalScope
    from formctl.goals.view import GoalStatus
    from formctl.store.jsonfile import JsonFileAdapter
    from formctl.store.memory import MemoryAdapter
    from formctl.store.postgres import PostgresAdapter
