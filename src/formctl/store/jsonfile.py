"""JsonFileAdapter: the durable local store, safe across crashes and concurrent processes.

The parts (docs/store.md, 'Layout'): ``locking.py`` (the store lock), ``_index.py`` (one
index file, the record of acknowledged versions), ``files.py`` (an instance's snapshot and
journal), ``codec.py`` (their formats), ``damage.py`` and ``maintenance.py`` (check,
reindex, repair). This module wires them into the :class:`~formctl.store.base.FormAdapter`
protocol. Why a snapshot plus a journal, and why it survives a crash at any instant:
docs/store.md, 'Snapshot and journal' and 'Crash safety'.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from formctl.errors import ConflictError, StoreError
from formctl.forms.commit import apply_commit, apply_dispatch
from formctl.forms.instance import Commit, DispatchState, Instance, Provenance, now_iso
from formctl.forms.lifecycle import is_closed, is_closed_status, is_open_status
from formctl.forms.reading import Listing, Scope
from formctl.forms.search import SearchHit, SearchQuery, hits_of, values_in_force
from formctl.store import _durable, maintenance
from formctl.store._index import Index, IndexDamaged, Row
from formctl.store._index import rows_recent_first as _recent_rows
from formctl.store._journal import frame
from formctl.store.base import InstanceStore, check_provenance, missing, sort_recent_first
from formctl.store.codec import FORMAT, commit_from_json, commit_to_json, snapshot_bytes
from formctl.store.conversations import ConversationStore
from formctl.store.damage import Damage, assess
from formctl.store.files import COMPACT_AFTER, InstanceFiles, Loaded, encoded
from formctl.store.ids import is_instance_id, new_instance_id
from formctl.store.locking import StoreLock
from formctl.store.maintenance import Repair, StoreProblem, StoreReport, row_of

__all__ = [
    "COMPACT_AFTER",
    "Damage",
    "FORMAT",
    "JsonFileAdapter",
    "Repair",
    "StoreProblem",
    "StoreReport",
    "commit_from_json",
    "commit_to_json",
]

if TYPE_CHECKING:
    from collections.abc import Sequence

    from formctl.forms.reading import InstanceSummary
    from formctl.store.goals_files import FileGoalStore

T = TypeVar("T")


class JsonFileAdapter(InstanceStore):
    """One JSON snapshot (plus a journal of later commits) per instance, in ``directory``.

    Implements the :class:`~formctl.store.base.FormAdapter` protocol, plus ``check()`` and
    ``reindex()`` for ``formctl store check|reindex``. ``conflicts`` counts the commits this
    adapter refused because the stored version had moved (compare-and-set failures).

    ``lock``, ``index`` and ``files`` are the store's parts, for the store's own modules.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        identifier: str | None = None,
        compact_after: int = COMPACT_AFTER,
    ) -> None:
        self.directory = os.path.abspath(os.fspath(directory))
        self.identifier = identifier or f"json-file-forms:{self.directory}"
        self.conflicts = 0
        self.lock = StoreLock(self.directory)
        self.index = Index(os.path.join(self.directory, "index.jsonl"))
        self.files = InstanceFiles(os.path.join(self.directory, "instances"), compact_after=compact_after)
        self._goals: FileGoalStore | None = None

    def __repr__(self) -> str:
        return f"JsonFileAdapter({self.directory!r})"

    def close(self) -> None:
        """Release the file descriptors this adapter keeps open (it reopens them if used again)."""
        self.lock.close()
        self.index.close()
        if self._goals is not None:
            self._goals.lock.close()

    def goal_store(self) -> FileGoalStore:
        """Goal programs in this store folder, under ``goals/`` (docs/goals.md, "Storage")."""
        if self._goals is None:
            from formctl.store.goals_files import FileGoalStore

            self._goals = FileGoalStore(self.directory, prepare=self._ready_for_goals)
        return self._goals

    def items_served(self, instances: Sequence[InstanceSummary]) -> list[list[dict[str, Any]]]:
        """Which program item each instance serves (:class:`~formctl.forms.adapter.KeepsPrograms`)."""
        from formctl.goals.serving import items_served_each

        return items_served_each(self.goal_store(), instances)

    def settle_bound_items(self, instance: Instance, *, actor: str, source: str) -> None:
        """Settle the program items bound to a form ``instance`` just completed (:class:`~formctl.forms.adapter.KeepsPrograms`)."""
        from formctl.goals.serving import settle_bound

        settle_bound(self, instance.subject, instance.def_id, actor=actor, source=source)

    def _ready_for_goals(self) -> None:
        """Before the first goal write into a folder no form has used: make it a whole store (its
        layout and an empty index), so ``formctl store check`` reads it as one."""
        if not os.path.exists(self.index.path):
            self.ensure_layout()
            self.reindex()

    # ------------------------------------------------------------------ protocol: writes

    def _insert(self, instance: Instance) -> Instance:
        subject = instance.subject
        data = encoded(lambda: snapshot_bytes(instance, 0))
        with self._writing():
            while os.path.lexists(self.files.paths(instance.id)[0]):  # two ids in one ms, equal random tails
                instance.id = new_instance_id()
                data = snapshot_bytes(instance, 0)
            self.before_write()
            self.mark(instance.id, subject)
            try:
                self.files.create(instance, data)
            except StoreError:
                self.index.put(instance.id, subject, None)
                raise
            self.index.put(instance.id, subject, row_of(instance))
        return instance.copy()

    def commit_instance(self, instance_id: str, commit: Commit, *, if_version: int, provenance: Provenance) -> Instance:
        check_provenance(provenance)

        def change(stored: Instance) -> tuple[Instance, dict[str, Any]]:
            try:
                new = apply_commit(stored, commit, if_version=if_version, now=now_iso())
            except ConflictError:
                self.conflicts += 1
                raise
            return new, {"c": commit_to_json(commit)}

        return self._journal_write(instance_id, change).copy()

    def record_dispatch(self, instance_id: str, key: str, state: DispatchState, provenance: Provenance) -> None:
        check_provenance(provenance)
        self._journal_write(
            instance_id,
            lambda stored: (apply_dispatch(stored, key, state, now=now_iso()), {"d": [key, state.to_dict()]}),
        )

    @contextmanager
    def exclusive(self, instance_id: str) -> Iterator[None]:
        """Hold the store's writer lock across a whole read, stage and commit of ``instance_id``.

        The runner takes it (when an adapter offers it) around each commit round, so that no
        other writer, in this process or another on this machine, can commit between its
        read and its write: a local writer then never meets a conflict, and under contention
        writers queue on the lock instead of retrying. Reads and writes made inside it by the
        same thread go straight through. Hold it only for in-memory work: every reader of the
        store waits while it is held."""
        with self._writing():
            yield

    def _journal_write(
        self, instance_id: str, change: Callable[[Instance], tuple[Instance, dict[str, Any]]]
    ) -> Instance:
        """Under the writers' lock: read the instance, apply ``change``, append its journal record.

        ``change`` returns the new instance and the record's body (``c`` for a commit, ``d`` for a
        dispatch); the record's sequence number, version and time are added here.
        """
        if not is_instance_id(instance_id):
            raise missing(instance_id)
        with self._writing():
            loaded = self.files.read(instance_id)
            if loaded is None:
                raise missing(instance_id)
            self.before_write()
            damage = self.damage_of(instance_id, loaded)
            if damage is not None:
                raise damage.error()
            new, body = change(loaded.instance)
            record = {"s": loaded.seq + 1, "v": new.version, "at": new.updated_at, **body}
            data = encoded(lambda: frame(record))
            subject = new.subject
            self.mark(instance_id, subject)
            try:
                self.files.append(instance_id, loaded, data, record, new)
            except StoreError:
                self.index.put(instance_id, subject, row_of(loaded.instance))
                raise
            self.index.put(instance_id, subject, row_of(new))
        return new

    # ------------------------------------------------------------------ copying in

    def import_instances(self, instances: list[Instance]) -> list[tuple[str, str]]:
        """Store each instance exactly as given (id, version, timestamps, every revision), for
        ``formctl store copy --to DIR``; per instance (outcome, why), as
        :func:`formctl.store.copy.outcome` decides. An instance that is copied or brought up to
        date gets a whole new snapshot, written the way a compaction writes one (atomically,
        then its journal removed), under the writers' lock; one damaged here is left alone."""
        from formctl.store.copy import outcome

        results: list[tuple[str, str]] = []
        with self._writing():
            self.before_write()
            for given in instances:
                results.append(self._import_one(given, outcome))
        return results

    def _import_one(self, given: Instance, outcome: Callable[..., tuple[str, str]]) -> tuple[str, str]:
        if not is_instance_id(given.id):
            return "refused", "its id is not one this store can name a file by"
        try:
            loaded = self.files.read(given.id)
            damage = self.damage_of(given.id, loaded) if loaded is not None else None
        except StoreError as exc:
            return "refused", f"damaged in the target: {exc.message}"
        if damage is not None:
            return "refused", f"damaged in the target: {damage.error().message}"
        done, why = outcome(loaded.instance if loaded is not None else None, given)
        if done not in ("copied", "updated"):
            return done, why
        seq = loaded.seq if loaded is not None else 0
        try:
            data = encoded(lambda: snapshot_bytes(given, seq))
        except StoreError as exc:
            return "refused", exc.message
        self.mark(given.id, given.subject)
        try:
            self.files.create(given, data)
            if loaded is not None:
                _durable.remove_quietly(self.files.paths(given.id)[1])  # its records are in the snapshot
                self.files.forget(given.id)
        except StoreError:
            self.index.put(given.id, given.subject, row_of(loaded.instance) if loaded is not None else None)
            raise
        self.index.put(given.id, given.subject, row_of(given))
        return done, ""

    def conversation_documents(self) -> tuple[dict[str, dict[str, Any]], list[str]]:
        """Every chat's conversation in ``conversations/``, whole, by instance id, and a line for
        each file that cannot be read (``formctl store copy``)."""
        return ConversationStore(self.directory).documents()

    def import_conversations(self, items: list[tuple[str, str, dict[str, Any]]]) -> list[tuple[str, str]]:
        """Store each (instance id, subject, document) as given, each file atomically, beside
        its instance of the same subject only (the isolation a chat's save keeps); per item
        (outcome, why) as :func:`formctl.store.copy.conversation_outcome` decides."""
        from formctl.store.copy import conversation_outcome

        conversations = ConversationStore(self.directory)
        results: list[tuple[str, str]] = []
        for instance_id, subject, given in items:
            try:
                instance = self.get_instance(instance_id)
            except StoreError as exc:
                results.append(("refused", f"its instance is damaged in the target: {exc.message}"))
                continue
            if instance is None:
                results.append(("refused", "its instance is not in the target"))
                continue
            if instance.subject != subject:
                results.append(("refused", "its instance in the target is another subject's"))
                continue
            try:
                held = conversations.whole(instance_id)
            except (StoreError, UnicodeDecodeError) as exc:
                why = exc.message if isinstance(exc, StoreError) else "not UTF-8"
                results.append(("refused", f"damaged in the target: {why}"))
                continue
            done, why = conversation_outcome(held, given)
            if done in ("copied", "updated"):
                conversations.put_document(instance_id, given)
            results.append((done, why))
        return results

    # ------------------------------------------------------------------ protocol: reads

    def get_instance(self, instance_id: str) -> Instance | None:
        if not is_instance_id(instance_id):
            return None
        with self.lock.held(exclusive=False):
            loaded = self.files.read(instance_id)
            return loaded.instance.copy() if loaded is not None else None

    def damage(self, instance_id: str) -> Damage | None:
        """What the instance's files have lost that the store acknowledged (or a corrupt record
        inside its journal), or None. While there is damage, writes to it are refused."""
        if not is_instance_id(instance_id):
            return None
        with self.lock.held(exclusive=False):
            loaded = self.files.read(instance_id)
            return self.damage_of(instance_id, loaded) if loaded is not None else None

    def repairs(self, instance_id: str) -> tuple[dict[str, Any], ...]:
        """The losses accepted by ``repair`` on this instance, oldest first (``at``, ``by``,
        ``lost``: the versions lost, first and last; ``reason``; ``kept``: the copy's folder)."""
        if not is_instance_id(instance_id):
            return ()
        with self.lock.held(exclusive=False):
            loaded = self.files.read(instance_id)
            return loaded.repairs if loaded is not None else ()

    def repair(self, instance_id: str, *, by: str) -> Repair | None:
        """Accept the loss of a damaged instance (None if it is not damaged): keep a copy of its
        files beside them, record in the instance what was lost, when and by whom, and let
        writes resume at the version after the last one lost."""
        return maintenance.repair(self, instance_id, by=by)

    def damage_of(self, iid: str, loaded: Loaded) -> Damage | None:
        acknowledged = None
        try:
            if self.index.refresh():
                row, _ = self.index.row(iid)
            else:
                row = self.index.evidence.get(iid)
            acknowledged = row[5] if row is not None else None
        except IndexDamaged:
            pass  # no record of what was acknowledged: only a corrupt journal shows
        return assess(iid, loaded, acknowledged, *self.files.paths(iid))

    def _find(self, listing: Listing, *, strict: bool, damaged: list[StoreError] | None) -> list[Instance]:
        """The instances ``listing`` takes, most recent first. An instance whose file is corrupt
        is left out of a listing (``get_instance`` and ``check()`` report it), and its error
        appended to ``damaged`` when given (``formctl instances`` warns with it).

        ``strict``: a corrupt file that the index last saw open (active or awaiting) raises
        :class:`StoreError` instead. ``formctl run`` asks this way: left out, the person's
        half-filled form would look absent and a new one would quietly start in its place.
        """
        limit = listing.limit

        def run() -> list[Instance]:
            if listing.subject is not None:
                rows, pending = self.index.rows_for_subject(listing.subject)
            else:
                rows, pending = list(self.index.rows().values()), self.index.pending()
            matching = [
                r
                for r in rows
                if (listing.def_id is None or r[2] == listing.def_id)
                and (listing.status is None or r[3] == listing.status)
            ]
            # A row a dead writer left pending may be out of date: its instance is read whatever it says.
            known = {r[0] for r in matching}
            out: list[Instance] = []
            listed = 0
            for iid in sorted(pending - known):
                self._list_one(iid, None, out, listing, strict, damaged)
            for row in _recent_rows(matching):
                if self._list_one(row[0], row[3], out, listing, strict, damaged):
                    listed += 1
                    if limit and listed >= limit:
                        break
            out = sort_recent_first(out)
            return out[:limit] if limit else out

        return self._query(run)

    def _list_one(
        self,
        iid: str,
        indexed_status: str | None,
        out: list[Instance],
        listing: Listing,
        strict: bool,
        damaged: list[StoreError] | None,
    ) -> bool:
        """Read one candidate of a listing into ``out`` if its files match the filters."""
        try:
            loaded = self.files.read(iid)
        except StoreError as exc:
            if strict and (indexed_status is None or is_open_status(indexed_status)):
                raise  # open, or not in the index at all: formctl run must not start a second form beside it
            if damaged is not None:
                damaged.append(exc)
            return False
        if loaded is None or not listing.admits(loaded.instance):
            return False
        out.append(loaded.instance.copy())
        return True

    def iter_instances(self, scope: Scope) -> Iterator[Instance]:
        """The instances in ``scope``, oldest first, one at a time (``formctl stats`` and ``export``
        never hold the store in memory): the ids from the index, each instance read when reached.
        One whose files cannot be read is left out, its error appended to ``scope.damaged``."""

        def run() -> list[str]:
            rows, pending = self.index.rows(), self.index.pending()
            chosen = sorted(
                (r[6], r[0]) for r in rows.values() if r[0] not in pending and scope.admits_row(r[2], r[3], r[6])
            )
            return [iid for _, iid in chosen] + sorted(pending)

        for iid in self._query(run):
            try:
                instance = self.get_instance(iid)
            except StoreError as exc:
                scope.damaged.append(exc)
                continue
            if instance is not None and scope.admits(instance):
                yield instance

    def search(self, query: SearchQuery) -> list[SearchHit]:
        """``formctl find`` from the index alone: its rows carry each instance's folded values in
        force, kept by every write (docs/store.md, "Finding instances"). A row a writer that died
        left pending may be behind its files: that instance is read."""

        # Each word as JSON writes it into the index's lines, the longest (likely the rarest) first.
        needles = sorted((json.dumps(w, ensure_ascii=False)[1:-1].encode() for w in query.words), key=len, reverse=True)

        def run() -> list[SearchHit]:
            holding = self.index.lines_holding(needles)
            if holding is None:  # a word most lines hold, or the index parsed already
                pending = self.index.pending()
                indexed = ((r[0], r[2], r[3], r[1], r[4], r[7]) for r in self.index.recent() if r[0] not in pending)
                hits = hits_of(query, indexed, ordered=True)
            else:
                rows, pending = holding
                hits = hits_of(query, [(r[0], r[2], r[3], r[1], r[4], r[7]) for r in rows if r[0] not in pending])
            if pending:  # read from their files, then placed among the others
                fresh = []
                for iid in pending:
                    try:
                        loaded = self.files.read(iid)
                    except StoreError:
                        continue
                    if loaded is not None:
                        r = row_of(loaded.instance)
                        fresh.append((r[0], r[2], r[3], r[1], r[4], r[7]))
                every = hits + hits_of(query, fresh)
                hits = sorted(every, key=lambda h: (h.updated_at, h.instance_id), reverse=True)[: query.limit]
            return [dataclasses.replace(h, values=self._values(h)) for h in hits]

        return self._query(run)

    def _values(self, hit: SearchHit) -> dict[str, Any]:
        """The matched fields' values in force, read under the lock the search holds."""
        if not hit.fields:
            return {}
        try:
            loaded = self.files.read(hit.instance_id)
        except StoreError:
            return {}
        return values_in_force(loaded.instance if loaded is not None else None, hit.fields)

    def find_latest_unclosed(self, subject: str) -> Instance | None:
        """The subject's most recently updated instance that is not closed (complete ones count).

        Raises :class:`StoreError` if that instance's snapshot cannot be read, rather than
        quietly answering with an older instance (or none, which would start a new form).
        A damaged journal is not such a case: the instance is returned as its files hold it
        (see :meth:`damage`).
        """

        def run() -> Instance | None:
            rows, pending = self.index.rows_for_subject(subject)
            if pending:  # a writer died half way: its row may be out of date, so read them all
                return self._open_by_reading(subject, rows, pending)
            for row in _recent_rows(rows):
                if is_closed_status(row[3]):  # the index row's status word
                    continue
                loaded = self.files.read(row[0])
                if loaded is None:
                    continue
                i = loaded.instance
                if i.subject != subject or is_closed(i) or i.updated_at != row[4]:
                    return self._open_by_reading(subject, rows, pending)  # the index disagrees: trust the files
                return i.copy()
            return None

        return self._query(run)

    def _open_by_reading(self, subject: str, rows: list[Row], pending: set[str]) -> Instance | None:
        found = []
        for iid in {r[0] for r in rows} | pending:
            loaded = self.files.read(iid)
            if loaded is not None and not is_closed(loaded.instance) and loaded.instance.subject == subject:
                found.append(loaded.instance)
        return sort_recent_first(found)[0].copy() if found else None

    def ensure_writable(self) -> None:
        """Raise :class:`StoreError` unless an instance could be written here (creating the
        folders if missing). Changes nothing else.

        ``formctl run`` asks before the chat opens: a read-only mount or a store path that
        cannot exist is then one line at the start, not a failure after every message the
        person types."""
        self.ensure_layout()
        folder = self.files.folder
        probe = os.path.join(folder, f".write-check.{os.getpid()}.tmp")  # *.tmp: reindex sweeps a stray one
        try:
            fd = _durable.open_private(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        except OSError as exc:
            raise _durable.os_error(exc, f"write in {folder}") from None
        os.close(fd)
        _durable.remove_quietly(probe)

    # ------------------------------------------------------------------ maintenance

    def check(self) -> StoreReport:
        """Read every instance file from disk (bypassing the cache) and compare the index with them.

        Changes nothing. Corrupt files are listed in ``problems`` with what is wrong.
        """
        return maintenance.check(self)

    def reindex(self) -> StoreReport:
        """Rebuild the index from the instance files; remove temporary files left by crashes.

        Corrupt instance files are listed in ``problems`` and left exactly as they are.
        """
        return maintenance.reindex(self)

    # ------------------------------------------------------------------ the folder, the lock, the index

    def init(self) -> None:
        """Make the folder a whole store, ready to use (``formctl store init``): its layout and an
        index, so ``formctl store check`` right after reads it as fine rather than as a store
        whose index is missing. An existing store is left as it is: an index is written only
        when there is none (an index that is there but out of date is ``reindex``'s work)."""
        self.ensure_writable()
        if os.path.exists(self.index.path):
            return
        with self.lock.held(exclusive=True, for_write=True):
            self._ready_index(exclusive=True)

    def ensure_layout(self) -> None:
        folder = self.files.folder
        if os.path.isdir(folder):
            return
        try:
            parent = os.path.dirname(self.directory)
            if parent:
                os.makedirs(parent, exist_ok=True)
            _durable.make_dir(self.directory)
            if _durable.make_dir(folder):
                _durable.sync_dir(self.directory)
        except OSError as exc:
            raise _durable.os_error(exc, f"create the store folder {folder}") from None

    @contextmanager
    def _writing(self) -> Iterator[None]:
        self.ensure_layout()
        with self.lock.held(exclusive=True, for_write=True):
            yield

    def _query(self, run: Callable[[], T]) -> T:
        """Run a lookup with the index up to date."""
        with self.lock.held(exclusive=False):
            try:
                if self._ready_index(exclusive=False):
                    return run()
            except IndexDamaged:
                pass
        # The index must be rebuilt first, which needs the lock to ourselves.
        with self.lock.held(exclusive=True):
            self._ready_index(exclusive=True)
            try:
                return run()
            except IndexDamaged:
                self._rebuild_index()
                return run()

    def _ready_index(self, *, exclusive: bool) -> bool:
        """Bring the index up to date. False when it must be rebuilt and the lock is only shared."""
        if self.index.refresh():
            return True
        if not exclusive and os.path.isdir(self.files.folder):
            return False
        self._rebuild_index()
        return True

    def _rebuild_index(self) -> None:
        """Rows from the instance files, keeping any row of the old index that is ahead of its
        files (acknowledged commits gone missing: the evidence, not a stale row)."""
        _, truth, _, _ = maintenance.scan_instances(self, fresh=False)
        rows = dict(truth)
        for iid, seen in self.index.evidence.items():
            if iid in rows and seen[5] > rows[iid][5]:
                rows[iid] = seen
        try:
            if not os.path.isdir(self.files.folder):
                raise FileNotFoundError(self.files.folder)
            self.index.rewrite(rows.values())
        except OSError:
            self.index.adopt(rows.values())  # a read-only (or absent) store: keep it in memory

    def before_write(self) -> None:
        """With the lock held exclusively: the index up to date, what a writer that died left
        pending settled, and the log compacted if it has grown."""
        try:
            self._ready_index(exclusive=True)
            dangling = self.index.last_marker()
            if dangling is not None:
                self._settle(*dangling)
            if self.index.needs_compaction():
                for iid in sorted(self.index.pending()):
                    self._settle(iid, self.index.pending_subject(iid))
                self.index.rewrite(self.index.rows().values())
        except IndexDamaged:
            self._rebuild_index()
        except OSError:
            pass  # a longer log is still a correct log

    def _settle(self, iid: str, subject: str) -> None:
        """Append the row of an instance whose writer died after announcing the write."""
        try:
            loaded = self.files.read(iid)
            self.index.put(iid, subject, row_of(loaded.instance) if loaded is not None else None)
        except StoreError:  # a damaged file: keep the row it had (reads report the damage)
            row, _ = self.index.row(iid)
            if row is not None:
                self.index.put(iid, subject, row)

    def mark(self, iid: str, subject: str) -> None:
        try:
            self.index.mark_pending(iid, subject)
        except OSError as exc:
            raise _durable.os_error(exc, f"write {self.index.path}") from None
