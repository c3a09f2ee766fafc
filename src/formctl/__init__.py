"""formctl: run conversational forms in a terminal.

The public API is re-exported here and imported lazily (PEP 562), so ``import formctl``
and ``formctl list`` stay fast: pydantic, the engine and the store load on first use of
a name, and anthropic and prompt-toolkit never load from here at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from formctl._lazy import lazy_exports

# The one version source: pyproject.toml reads it as the package is built, `formctl --version`
# prints it, and CHANGELOG.md has a section for it.
__version__ = "0.1.0"

# Written out, not computed, so linters and type checkers can read the public API;
# tests/architecture/test_public_api.py checks it names exactly the keys of _EXPORTS.
__all__ = [
    "AlreadyExistsError",
    "ChatLoop",
    "ChatModel",
    "CheckFailedError",
    "Commit",
    "CompiledForm",
    "Complete",
    "ConflictError",
    "Continuation",
    "DamageReport",
    "DefaultInstance",
    "DerivedFieldError",
    "EVERY_SUBJECT",
    "Effect",
    "Evaluation",
    "ExecutorContext",
    "Fail",
    "FieldHistory",
    "FillResult",
    "FormAdapter",
    "FormBlockedError",
    "FormBuilder",
    "FormDefinitionError",
    "FormError",
    "FormOpenError",
    "FormRegistry",
    "FormRunner",
    "FormStaleError",
    "FormTools",
    "FormView",
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
    "Instance",
    "InstanceClosedError",
    "InstanceStateError",
    "InstanceView",
    "InvalidArgumentError",
    "Item",
    "JsonFileAdapter",
    "Jump",
    "KeyRejectedError",
    "MemoryAdapter",
    "MigrationError",
    "ModelCancelledError",
    "ModelError",
    "ModelRequest",
    "ModelTimeoutError",
    "NeedsReopenError",
    "NotAllowedError",
    "NotFoundError",
    "NotReadyError",
    "NotWaitingError",
    "NothingToMoveError",
    "OwnRequestError",
    "Patch",
    "PostgresAdapter",
    "Provenance",
    "ProvenanceError",
    "RecoverResult",
    "RegistryError",
    "ScenarioError",
    "Status",
    "StoreDamagedError",
    "StoreError",
    "Terminate",
    "ToolSelectionError",
    "TranscriptError",
    "UnknownFormError",
    "UsageError",
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
    "ModelTimeoutError": "formctl.errors",
    "ModelCancelledError": "formctl.errors",
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
    # The error groups an except clause names (docs/engine.md, "Error codes")
    "UsageError": "formctl.errors",
    "InstanceStateError": "formctl.errors",
    "NotAllowedError": "formctl.errors",
    # What the runner takes and returns (store authors and hosts)
    "Instance": "formctl.forms.instance",
    "Commit": "formctl.forms.instance",
    "Provenance": "formctl.forms.instance",
    "FormView": "formctl.forms.project",
    "FillResult": "formctl.forms.project",
    "RecoverResult": "formctl.forms.project",
    "InstanceView": "formctl.forms.reading",
    "Continuation": "formctl.forms.reading",
    "DefaultInstance": "formctl.forms.reading",
    "FieldHistory": "formctl.forms.history",
    "DamageReport": "formctl.forms.adapter",
    # A host embedding the chat (the agent loads only when one of these is used)
    "ChatLoop": "formctl.agent.loop",
    "ChatModel": "formctl.agent.models.base",
    "ModelRequest": "formctl.agent.models.base",
    "FormTools": "formctl.agent.tools",
    "EVERY_SUBJECT": "formctl.agent.tools",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from formctl.agent.loop import ChatLoop
    from formctl.agent.models.base import ChatModel, ModelRequest
    from formctl.agent.tools import EVERY_SUBJECT, FormTools
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
        InstanceStateError,
        InvalidArgumentError,
        KeyRejectedError,
        MigrationError,
        ModelCancelledError,
        ModelError,
        ModelTimeoutError,
        NeedsReopenError,
        NotAllowedError,
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
        UsageError,
    )
    from formctl.forms.adapter import DamageReport, FormAdapter
    from formctl.forms.builder import FormBuilder, define_form
    from formctl.forms.commit import apply_entry_commit
    from formctl.forms.compile import CompiledForm, compile_form
    from formctl.forms.definition import Complete, Effect, Fail, Jump, Patch, Terminate
    from formctl.forms.evaluate import Evaluation, GateState, Values, evaluate
    from formctl.forms.executors import ExecutorContext
    from formctl.forms.history import FieldHistory
    from formctl.forms.instance import Commit, Instance, Provenance
    from formctl.forms.lifecycle import Status
    from formctl.forms.project import FillResult, FormView, RecoverResult
    from formctl.forms.reading import Continuation, DefaultInstance, InstanceView
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
