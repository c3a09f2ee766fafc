"""Goal programs in the JSON store folder: ``<store>/goals/``.

Per scope (``<id>`` is :attr:`GoalScope.id`, a digest: nothing from user text becomes a path):

* ``<id>.json``, the head: ``{"format": 1, "version": N, "digest": ..., "state": {...},
  "receipts": {...}}``, replaced atomically (temp file, fsync, rename, fsync of the folder).
  The head is the commit point: a version exists once the head says so. It carries the hook
  receipts not yet done, so a commit's transitions and their ``pending`` receipts land in the
  same rename.
* ``<id>.done.jsonl``: the receipts of hooks that ran to the end (``ok``), appended (and
  synced) before they leave the head, so the head stays the size of the work outstanding
  rather than growing with every transition ever made. A receipt found in both (a crash
  between the append and the head's rename) is done: the log wins.
* ``<id>.history.jsonl``, the history: one line per version, appended (and synced) before the
  head moves. A line holds the complete snapshot except the definitions, which it names by
  digest; the definitions are written out in the line of the version that introduced them
  (docs/goals.md, "Storage": why, and how the history grows). A line for a version past the
  head is a commit that died before its head was written: readers ignore it, and the next
  commit of that version supersedes it. A torn last line (a crash mid-append) is skipped and
  the next append starts on a fresh line.

``<store>/goals/lock`` (``flock``) serialises the writers of every scope across processes;
readers take no lock (the head is read first, then the history up to its version).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from formctl.errors import GoalConflictError, NotFoundError, StoreError
from formctl.goals.definition import Program, program_digest, program_from_json, program_to_json
from formctl.goals.state import (
    RECEIPT_OK,
    RECEIPT_RUNNING,
    GoalScope,
    GoalState,
    Receipt,
    state_from_json,
    state_to_json,
)
from formctl.goals.store import claimed, settled
from formctl.store import _durable
from formctl.store.locking import StoreLock

__all__ = ["FileGoalStore"]

FORMAT = 1


class FileGoalStore:
    def __init__(self, directory: str | os.PathLike[str], *, prepare: Callable[[], None] | None = None) -> None:
        self._prepare = prepare  # run once, before the first write (the forms' store makes its layout)
        self.store_directory = os.path.abspath(os.fspath(directory))
        self.directory = os.path.join(self.store_directory, "goals")
        self.lock = StoreLock(self.directory)
        self._programs: dict[str, Program] = {}

    def __repr__(self) -> str:
        return f"FileGoalStore({self.directory!r})"

    # ------------------------------------------------------------------ paths and files

    def _head_path(self, scope: GoalScope) -> str:
        return os.path.join(self.directory, f"{scope.id}.json")

    def _history_path(self, scope: GoalScope) -> str:
        return os.path.join(self.directory, f"{scope.id}.history.jsonl")

    def _done_path(self, scope: GoalScope) -> str:
        return os.path.join(self.directory, f"{scope.id}.done.jsonl")

    def _done(self, scope: GoalScope) -> dict[str, dict[str, Any]]:
        """The receipts of hooks that ran to the end, by key."""
        out: dict[str, dict[str, Any]] = {}
        try:
            with open(self._done_path(scope), encoding="utf-8") as f:
                for text in f:
                    try:
                        row = json.loads(text)
                    except json.JSONDecodeError:
                        continue  # a torn append: the receipt is still in the head, and runs again
                    out[row["key"]] = row
        except FileNotFoundError:
            pass
        return out

    def _program(self, digest: str, data: dict[str, Any]) -> Program:
        """Definitions are immutable: each is parsed once per digest and shared."""
        program = self._programs.get(digest)
        if program is None:
            program = self._programs[digest] = program_from_json(data)
        return program

    def _read_head(self, path: str) -> dict[str, Any] | None:
        return _durable.read_document(path, "goal program", FORMAT)

    @contextmanager
    def _writing(self) -> Iterator[None]:
        if self._prepare is not None:
            prepare, self._prepare = self._prepare, None
            prepare()
        try:
            os.makedirs(self.store_directory, mode=_durable.DIR_MODE, exist_ok=True)
            _durable.make_dir(self.directory)
        except OSError as exc:
            raise _durable.os_error(exc, f"create the folder {self.directory}") from None
        with self.lock.held(exclusive=True, for_write=True):
            yield

    def _write_head(self, scope: GoalScope, head: dict[str, Any]) -> None:
        data = json.dumps(head, ensure_ascii=True, separators=(",", ":")).encode("ascii")
        path = self._head_path(scope)
        try:
            _durable.replace_atomically(path, data)
        except OSError as exc:
            raise _durable.os_error(exc, f"write {path}") from None

    def _append_history(self, scope: GoalScope, line: dict[str, Any]) -> None:
        self._append(self._history_path(scope), line)

    def _append(self, path: str, line: dict[str, Any]) -> None:
        data = json.dumps(line, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"
        try:
            fd = _durable.open_private(path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
            try:
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    data = b"\n" + data  # a torn line from a crash mid-append: start afresh
                _durable.write_all(fd, data)
                _durable.sync_data(fd)
            finally:
                os.close(fd)
            if size == 0:
                _durable.sync_dir(self.directory)
        except OSError as exc:
            raise _durable.os_error(exc, f"append to {path}") from None

    # ------------------------------------------------------------------ the contract

    def get(self, scope: GoalScope) -> GoalState | None:
        head = self._read_head(self._head_path(scope))
        if head is None:
            return None
        return state_from_json(head["state"], self._program(head["digest"], head["state"]["program"]))

    def commit(self, scope: GoalScope, state: GoalState, *, if_version: int | None) -> GoalState:
        with self._writing():
            head = self._read_head(self._head_path(scope))
            actual = head["version"] if head is not None else None
            if actual != if_version or state.version != (if_version or 0) + 1:
                raise GoalConflictError(if_version, actual)
            digest = program_digest(state.program)
            line: dict[str, Any] = {"version": state.version, "state": state_to_json(state, with_program=False)}
            line["program"] = digest
            if head is None or head.get("digest") != digest:
                line["definition"] = program_to_json(state.program)
            self._append_history(scope, line)
            receipts = dict(head["receipts"]) if head is not None else {}
            for t in state.transitions:
                receipts.setdefault(t.key, Receipt(t.key, t).to_json())
            self._write_head(
                scope,
                {
                    "format": FORMAT,
                    "version": state.version,
                    "digest": digest,
                    "state": state_to_json(state),
                    "receipts": receipts,
                },
            )
        return state_from_json(state_to_json(state))

    def history(self, scope: GoalScope) -> list[GoalState]:
        head = self._read_head(self._head_path(scope))
        if head is None:
            return []
        path = self._history_path(scope)
        definitions: dict[str, Program] = {}
        rows: dict[int, dict[str, Any]] = {}
        try:
            with open(path, encoding="utf-8") as f:
                for text in f:
                    if not text.strip():
                        continue
                    try:
                        line = json.loads(text)
                    except json.JSONDecodeError:
                        continue  # a torn append (see the module docstring); never a committed version
                    if "definition" in line:
                        definitions[line["program"]] = self._program(line["program"], line["definition"])
                    if line["version"] <= head["version"]:
                        rows[line["version"]] = line  # a later line of one version supersedes an uncommitted one
        except FileNotFoundError:
            raise StoreError(
                f"The goal history {path} is missing (the head is at version {head['version']})."
            ) from None
        out = []
        for version in sorted(rows):
            line = rows[version]
            program = definitions.get(line["program"])
            if program is None:
                raise StoreError(f"The goal history {path} names a definition it does not hold (version {version}).")
            out.append(state_from_json(line["state"], program))
        return out

    def scopes(self, subject: str | None = None) -> list[GoalScope]:
        try:
            names = sorted(os.listdir(self.directory))
        except FileNotFoundError:
            return []
        out = []
        for name in names:
            if not name.endswith(".json"):
                continue
            head = self._read_head(os.path.join(self.directory, name))
            if head is None:
                continue
            scope = GoalScope.from_json(head["state"]["scope"])
            if subject is None or scope.subject == subject:
                out.append(scope)
        return out

    def receipts(self, scope: GoalScope) -> list[Receipt]:
        head = self._read_head(self._head_path(scope))
        if head is None:
            return []
        done = self._done(scope)
        rows = [*done.values(), *(r for k, r in head["receipts"].items() if k not in done)]
        rows.sort(key=lambda r: r["transition"]["version"])
        return [Receipt.from_json(r) for r in rows]

    def claim(self, scope: GoalScope, key: str, owner: str, *, lease_seconds: float, now: float) -> Receipt | None:
        with self._writing():
            head = self._read_head(self._head_path(scope))
            data = head["receipts"].get(key) if head is not None else None
            if head is None or data is None:
                if key in self._done(scope):
                    return None  # done: it left the head
                raise NotFoundError(f'No hook receipt "{key}".')
            receipt = Receipt.from_json(data)
            if receipt.status == RECEIPT_RUNNING and key in self._done(scope):
                return None  # a crash between logging it done and the head's rename
            taken = claimed(receipt, owner, lease_seconds=lease_seconds, now=now)
            if taken is not None:
                head["receipts"][key] = taken.to_json()
                self._write_head(scope, head)
            return taken

    def settle(self, scope: GoalScope, key: str, owner: str, *, ok: bool, at: str, error: str | None) -> bool:
        with self._writing():
            head = self._read_head(self._head_path(scope))
            data = head["receipts"].get(key) if head is not None else None
            done = settled(Receipt.from_json(data) if data is not None else None, owner, ok=ok, at=at, error=error)
            if head is None or done is None:
                return False
            if ok:
                self._append(self._done_path(scope), done.to_json())
                del head["receipts"][key]
            else:
                head["receipts"][key] = done.to_json()
            self._write_head(scope, head)
            return True

    # ------------------------------------------------------------------ formctl store copy

    def import_history(
        self, scope: GoalScope, states: list[GoalState], receipts: list[Receipt], *, if_version: int | None
    ) -> None:
        """Append ``states`` (versions ``if_version + 1`` on, each exactly as given) to the scope's
        history, move the head to the last of them, and put ``receipts`` as given: all of it
        lands with the head's one rename, as a commit does (``formctl store copy``). Refused
        (:class:`GoalConflictError`) unless the head is still at ``if_version``."""
        with self._writing():
            head = self._read_head(self._head_path(scope))
            actual = head["version"] if head is not None else None
            if actual != if_version or any(st.version != (if_version or 0) + n + 1 for n, st in enumerate(states)):
                raise GoalConflictError(if_version, actual)
            if not states and head is None:
                return
            if states:
                top: dict[str, Any] = {"version": states[-1].version, "state": state_to_json(states[-1])}
            else:
                assert head is not None
                top = {"version": head["version"], "state": head["state"]}
            digest = head["digest"] if head is not None else None
            for state in states:
                named = program_digest(state.program)
                line: dict[str, Any] = {"version": state.version, "state": state_to_json(state, with_program=False)}
                line["program"] = named
                if named != digest:
                    line["definition"] = program_to_json(state.program)
                self._append_history(scope, line)
                digest = named
            held = dict(head["receipts"]) if head is not None else {}
            for state in states:
                for t in state.transitions:
                    held.setdefault(t.key, Receipt(t.key, t).to_json())
            done = self._done(scope)
            for receipt in receipts:
                if receipt.status == RECEIPT_OK:  # done ones live in the log, as settle() keeps them
                    if receipt.key not in done:
                        self._append(self._done_path(scope), receipt.to_json())
                    held.pop(receipt.key, None)
                else:
                    held[receipt.key] = receipt.to_json()
            assert digest is not None
            self._write_head(
                scope,
                {
                    "format": FORMAT,
                    "version": top["version"],
                    "digest": digest,
                    "state": top["state"],
                    "receipts": held,
                },
            )
