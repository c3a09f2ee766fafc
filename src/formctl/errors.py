"""Every error formctl raises on purpose, in one tree.

Each is a :class:`FormError` subclass with a stable ``code`` string, one class per code
(docs/engine.md, "Error codes", lists them; a test keeps that table and this module equal):
the tools return the code to the model, the CLI prints the message as one line, and tests
match on the code rather than the wording. This module is the one import path.
"""

from __future__ import annotations

import os
from typing import Any


class FormError(Exception):
    """Base of every deliberate formctl error. ``code`` is stable; ``message`` is for people."""

    code = "form_error"  # the base's own code is never raised: every deliberate error has its class

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message}


# The groups: what an ``except`` clause usually means. Each is abstract (never raised itself, no
# code of its own), and every concrete class below sits under exactly one of them or is one
# (NotFoundError, ConflictError, StoreError and ModelError are both a code and a group).


class UsageError(FormError):
    """The call itself is wrong: a malformed argument, a definition, registry, transcript or scenario
    that cannot be read. Asking again the same way fails the same way."""


class InstanceStateError(FormError):
    """The instance is not in a state that allows the act: it waits, is stale, closed, not ready,
    already open, or has nothing to move. Read its status; another act (resolve, withdraw,
    migrate, reopen) may make this one possible."""


class NotAllowedError(FormError):
    """The act is not the caller's to do: a host's act asked for by a person, a host deciding their
    own request, a locked goal. The role decides, not the state."""


GROUPS = (UsageError, InstanceStateError, NotAllowedError)


class NotFoundError(FormError):
    """No such instance, form, field, or no open form for the subject."""

    code = "not_found"


class UnknownFormError(NotFoundError):
    """A form id that no registration names."""


class FormBlockedError(InstanceStateError):
    """A write while the instance waits on a blocking checkpoint."""

    code = "form_blocked"

    def __init__(self, checkpoint_id: str, wait_message: str | None = None) -> None:
        message = f'Waiting on checkpoint "{checkpoint_id}".'
        if wait_message:
            message = f"{message} {wait_message}"
        super().__init__(message)
        self.checkpoint_id = checkpoint_id
        self.wait_message = wait_message


class FormStaleError(InstanceStateError):
    """The instance was started against another version of the definition, with no migrate."""

    code = "form_stale"

    def __init__(self, instance_version: int, def_version: int) -> None:
        super().__init__(
            f"Instance was started against def version {instance_version}; the registered def is at {def_version}."
        )
        self.instance_version = instance_version
        self.def_version = def_version


class NotReadyError(InstanceStateError):
    """A submit of a form that cannot be sent now: it has no review, is not ready, or was already sent."""

    code = "form_not_ready"


class CheckFailedError(NotReadyError):
    """A submit while one of the form's checks fails (docs/engine.md, "Checks"): the message is
    the check's own sentence, so the person reads what to correct. Correcting an answer the
    check reads makes the submit possible (a :class:`NotReadyError`, so an instance state)."""

    code = "check_failed"


class DerivedFieldError(UsageError):
    """A write (fill, revise, retract, undo, redo) to a field the engine derives from other
    answers: nobody sets it; it follows its inputs (docs/engine.md, "Derived values")."""

    code = "derived_field"


class InstanceClosedError(InstanceStateError):
    """The instance is closed (abandoned, or terminated by a hook): a write, an abandon, a resume
    or a migrate of it. Also an abandon of a complete instance: complete is final for that too."""

    code = "form_closed"


class NothingToMoveError(InstanceStateError):
    """An undo or redo with nothing to move: no answer yet, or the cursor already at that end."""

    code = "nothing_to_move"


class MigrationError(UsageError):
    """A form's ``migrate`` raised, returned a non-dict, or returned a value with no JSON form."""

    code = "form_migration_failed"


class NotWaitingError(InstanceStateError):
    """``resolve_checkpoint`` on an instance that waits on no checkpoint."""

    code = "not_waiting"


class HostOnlyError(NotAllowedError):
    """An act only the host may do, asked for by someone else (the person's ``/resolve`` in a chat
    not opened with ``--as-host``)."""

    code = "host_only"


class FormOpenError(InstanceStateError):
    """A start of a form while the same form is open and unfinished for the conversation."""

    code = "form_open"


class AlreadyExistsError(UsageError):
    """The CLI would overwrite a form, a module or a transcript."""

    code = "already_exists"


class ConflictError(FormError):
    """A compare-and-set commit found another version than it expected."""

    code = "form_conflict"

    def __init__(self, expected: int, actual: int | None) -> None:
        super().__init__(f"Form instance changed under the write (expected version {expected}, found {actual}).")
        self.expected = expected
        self.actual = actual


class GoalConflictError(ConflictError):
    """A goal program changed under a write that named the version it read (or, for a host's
    update that named none, changed the same items or the definitions meanwhile)."""

    code = "goal_conflict"

    def __init__(self, expected: int | None, actual: int | None, message: str | None = None) -> None:
        FormError.__init__(
            self,
            message
            or f"The goal program changed under the write (expected version {expected}, found {actual}). "
            "Read its status and reconsider.",
        )
        self.expected = expected  # type: ignore[assignment]
        self.actual = actual


class GoalLockedError(NotAllowedError):
    """A revision that edits, removes, retires or unlocks a goal or item whose definition is locked."""

    code = "goal_locked"

    def __init__(self, message: str, keys: list[str] | None = None) -> None:
        super().__init__(message)
        self.keys = list(keys or [])


class FormDefinitionError(UsageError):
    """A definition that cannot be compiled, or whose gates cannot be evaluated after a write."""

    code = "form_definition_error"

    def __init__(self, message: str, ids: list[str] | None = None) -> None:
        super().__init__(message)
        self.ids = list(ids or [])


class ProvenanceError(UsageError):
    """An adapter was handed a write without a well-formed provenance record."""

    code = "provenance_required"

    def __init__(self) -> None:
        super().__init__("A provenance record is required on every write.")


class StoreError(FormError):
    """Storage failed: a corrupt file, a full disk, a folder that cannot be written.

    A damaged record (a file or a row the store cannot decode) says so: ``path`` names where it
    is and ``reason`` what is wrong with it, without the place (what ``formctl store check``
    reports). Both are None for every other storage failure (a server away, a full disk), so
    ``reason is None`` tells "no instance is damaged" apart.
    """

    code = "store_error"

    def __init__(self, message: str, *, path: str | None = None, reason: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.reason = reason


class InvalidArgumentError(UsageError):
    """A call whose arguments have the wrong shape (a tool's malformed input, a missing id)."""

    code = "invalid_arguments"


class RegistryError(UsageError):
    """The registry file itself is unreadable or malformed, or a form module cannot be imported."""

    code = "registry_error"


class StoreDamagedError(StoreError):
    """A write to an instance whose files have lost commits the store acknowledged (or hold a
    corrupt record): refused until ``formctl store repair`` accepts the loss.
    ``damage`` is the damage as JSON data (what ``--json`` shows under ``"damaged"``)."""

    code = "store_damaged"

    def __init__(self, message: str, damage: dict[str, Any]) -> None:
        super().__init__(message)
        self.damage = damage

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "damaged": self.damage}


class OwnRequestError(NotAllowedError):
    """A host deciding their own request: resolving a checkpoint of an instance whose subject is
    the resolver, without the explicit override (``--own-request``) that records it."""

    code = "own_request"


class NeedsReopenError(InstanceStateError):
    """A host command that would take a complete instance back to ready or active, without
    ``--reopen`` (the host's explicit word, which is recorded)."""

    code = "needs_reopen"


class ModelError(FormError):
    """The model could not answer (bad key, rate limit past the retries, overload, a dropped
    connection, a malformed reply). ``message`` is one line a person can act on; nothing
    committed is affected, and the next message simply tries again."""

    code = "model_error"
    # How many HTTP requests the failed call sent, its retries included (0: none was sent, or a
    # model that sends none); what ``formctl eval`` counts as model calls.
    attempts = 0


class ModelTimeoutError(ModelError):
    """The model's reply did not end within the call's deadline (``--model-timeout``): the request
    was abandoned and nothing from it was applied."""

    code = "model_timeout"


class ModelCancelledError(ModelError):
    """The caller stopped waiting (Ctrl-C): the request was abandoned and its reply, if one
    comes, is dropped."""

    code = "model_cancelled"


class KeyRejectedError(ModelError):
    """The API refused the key (401) or what it may use (403): every further request would be
    refused the same way, so a chat stops instead of retrying on every line."""

    code = "key_rejected"


class ToolSelectionError(UsageError):
    """An allow/deny selector that matches no tool."""

    code = "unknown_tool"


class TranscriptError(UsageError):
    """A transcript file that cannot be read: the message names the file and, where known, the line."""

    code = "transcript_invalid"

    def __init__(self, message: str, *, path: str | os.PathLike[str] | None = None, line: int | None = None) -> None:
        self.path = str(path) if path is not None else None
        self.line = line
        where = self.path or "transcript"
        if line is not None:
            where += f", line {line}"
        super().__init__(f"{where}: {message}")


class ScenarioError(UsageError):
    """An eval scenario file that cannot be read or does not fit its form: the message names the file."""

    code = "scenario_invalid"

    def __init__(self, message: str, *, path: str | os.PathLike[str] | None = None, line: int | None = None) -> None:
        self.path = str(path) if path is not None else None
        self.line = line
        where = self.path or "scenario"
        if line is not None:
            where += f", line {line}"
        super().__init__(f"{where}: {message}")


__all__ = [
    "InstanceStateError",
    "NotAllowedError",
    "UsageError",
    "AlreadyExistsError",
    "CheckFailedError",
    "ConflictError",
    "DerivedFieldError",
    "FormBlockedError",
    "FormDefinitionError",
    "FormError",
    "FormOpenError",
    "FormStaleError",
    "GoalConflictError",
    "GoalLockedError",
    "HostOnlyError",
    "InstanceClosedError",
    "InvalidArgumentError",
    "KeyRejectedError",
    "MigrationError",
    "ModelCancelledError",
    "ModelError",
    "ModelTimeoutError",
    "NeedsReopenError",
    "NotFoundError",
    "NotReadyError",
    "NotWaitingError",
    "NothingToMoveError",
    "OwnRequestError",
    "ProvenanceError",
    "RegistryError",
    "ScenarioError",
    "StoreDamagedError",
    "StoreError",
    "ToolSelectionError",
    "TranscriptError",
    "UnknownFormError",
]
