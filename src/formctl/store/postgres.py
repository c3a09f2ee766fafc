"""PostgresAdapter: the store contract on a PostgreSQL database, for a team sharing one store.

Every promise of :class:`~formctl.store.jsonfile.JsonFileAdapter` holds here too, across
machines instead of across the processes of one machine: compare-and-set on the instance
version, all-or-nothing commits, answer logs that only grow, dispatch records outside
compare-and-set, the open-form lookup by subject, and ``check()``. The tables and why they
look as they do are in :mod:`formctl.store._pgschema`.

Isolation and locking
---------------------
The connection runs in autocommit mode and every write is one explicit transaction at READ
COMMITTED. A write begins with ``SELECT … FROM formctl_instances WHERE id = %s FOR UPDATE``:
the row lock serialises the writers of one instance (writers of other instances never wait
on each other), and the version check happens under that lock, so a stale ``if_version``
raises :class:`ConflictError` and the runner re-reads and retries exactly as with the JSON
store. The new revisions are INSERTed (never UPDATEd: a trigger refuses that), and the
instance row is UPDATEd with the next version; COMMIT makes all of it visible at once, or
none of it (a writer killed mid-transaction leaves nothing, because the server rolls back a
transaction whose connection dies). ``commit_instance`` returns only after COMMIT returned,
and with the server's defaults (``fsync``, ``synchronous_commit`` on) an acknowledged
commit is on disk.

A commit whose adapter holds the current copy of the instance (it read or wrote it last) is
one statement instead: the row updated only if its ``writes`` counter is unchanged, the new
revisions inserted only if it was (docs/store-postgres.md, "A commit in one round trip"); when
the counter moved, nothing is written and the locked path above runs.

Reads take no lock and need no transaction: a reader reads the instance row, then the
revisions whose ``version`` is at most the row's. Revisions are only ever added, each
stamped with the version of the commit that added it, so those are exactly the revisions of
that version, whatever commits land between the two statements. A reader keeps the last
instance it assembled per id, keyed by the row's ``writes`` counter: a read of an instance
that did not change is one indexed row fetch, and one that did fetches only the new
revisions.

A broken connection (the server restarted since the last use) is replaced and the operation
tried once more when nothing can have been written; when the connection drops during COMMIT
the write may or may not have landed, and the error says so.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from formctl.errors import ConflictError, StoreError
from formctl.forms.commit import apply_commit, apply_dispatch
from formctl.forms.instance import ABANDONED, Commit, DispatchState, Instance, Provenance, now_iso
from formctl.forms.lifecycle import is_open
from formctl.forms.reading import Listing, Scope
from formctl.forms.search import SearchHit, SearchQuery, hits_of, terms_of
from formctl.forms.stats import FormFacts
from formctl.store import _pgconversations, _pgschema
from formctl.store._pgcodec import (
    COLUMNS,
    INSERT_INSTANCE,
    INSERT_REVISIONS,
    ONE_TRIP_COMMIT,
    REV_COLUMNS,
    UPDATE_INSTANCE,
    RevisionRow,
    assemble,
    revision_arrays,
    revision_rows,
    row_values,
)
from formctl.store._pgconn import (
    _reason,
    connect,
    connect_failure,
    connect_options,
    describe_server,
    mask_dsn,
    require_psycopg,
)
from formctl.store._pgconversations import PostgresConversations
from formctl.store._pglisten import Watcher
from formctl.store.base import InstanceStore, check_provenance, missing
from formctl.store.ids import is_instance_id, new_instance_id
from formctl.store.maintenance import StoreProblem, StoreReport

try:
    import psycopg
    from psycopg.rows import namedtuple_row
except ImportError:  # pragma: no cover - exercised by the CLI's "not installed" message
    psycopg = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from collections.abc import Sequence

    from formctl.forms.reading import InstanceSummary
    from formctl.store.goals_postgres import PostgresGoalStore

__all__ = ["PostgresAdapter", "Watcher", "require_psycopg"]

T = TypeVar("T")

RECONNECT_PATIENCE = 8.0
"""Seconds a dropped connection is retried for (a server restart takes one or two). The tests
shorten it: here by assignment, in a ``formctl`` child process by ``FORMCTL_PG_RECONNECT_PATIENCE``."""

_CACHE_SIZE = 4096
_LOCK_CLASS = 0x666F726D  # "form": the advisory-lock space of exclusive(), keyed by hashtext(id)
_PAGE = 500


# Connections a forked child inherited: never closed (closing would end the parent's session
# on the server), never collected (collection closes them).
_INHERITED: list[Any] = []


def _reconnect_patience() -> float:
    try:
        return float(os.environ.get("FORMCTL_PG_RECONNECT_PATIENCE", RECONNECT_PATIENCE))
    except ValueError:
        return RECONNECT_PATIENCE


def _server_away(exc: BaseException) -> bool:
    """A failure to connect that waiting can cure: nobody listening, or a server starting or stopping."""
    text = str(exc)
    return any(
        s in text
        for s in (
            "Connection refused",
            "No such file or directory",
            "shutting down",
            "starting up",
            "not yet accepting connections",
            "in recovery mode",
        )
    )


def _like_escaped(word: str) -> str:
    """``word`` matched literally by LIKE (its default escape character is the backslash)."""
    return word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _close_in(conn: Any, pid: int) -> None:
    if os.getpid() == pid and not conn.closed:
        try:
            conn.close()
        except Exception:
            pass


@dataclass(frozen=True, slots=True)
class DatabaseReport(StoreReport):
    """``check()`` on a database: instances and answer revisions read (there are no files)."""

    revisions: int = 0

    def to_dict(self) -> dict[str, Any]:
        data = StoreReport.to_dict(self)
        del data["files_checked"]
        data["revisions_read"] = self.revisions
        return data


@dataclass(slots=True)
class _Cached:
    writes: int
    instance: Instance


class PostgresAdapter(InstanceStore):
    """Instances in PostgreSQL tables; implements :class:`~formctl.store.base.FormAdapter`.

    ``dsn`` is a libpq connection string (``postgresql://user@host/db``); what it leaves out
    comes from the ``PG*`` environment variables and ``~/.pgpass``, as for ``psql``. The
    password never appears in ``identifier``, ``repr`` or an error. ``conflicts`` counts the
    commits refused because the stored version had moved.
    """

    def __init__(self, dsn: str, *, identifier: str | None = None, connect_timeout: int = 10) -> None:
        require_psycopg()
        self.dsn = dsn
        self.display = mask_dsn(dsn)
        self.server = describe_server(dsn)
        self.identifier = identifier or f"postgres-forms:{self.display}"
        self.conflicts = 0
        self.one_trip = (
            True  # commit in one statement when the cached copy is current (the benchmark's "before" turns it off)
        )
        self._connect_timeout = connect_timeout
        self._conn: Any = None
        self._pid = 0
        self._tables = False  # the formctl tables exist at this formctl's schema (checked per connection)
        self._schema = 0  # the schema version found (_pgschema.version: 0, no formctl tables at all)
        self._search_path = ""
        self._cache: OrderedDict[str, _Cached] = OrderedDict()
        self._mutex = threading.RLock()
        self._committing = False
        self._lost = False  # the last connection died under us: reconnect with patience
        self._gave_up_at = -1e9  # when a patient reconnect last failed (monotonic seconds)
        self._stop = threading.Event()  # interrupt(): stop the wait in progress
        # Told (with where the server is) when a call starts waiting for the server, from any
        # thread: a chat says it is waiting for the database (formctl.forms.adapter.ReportsWaits).
        self.on_wait: Callable[[str], None] | None = None

    def __repr__(self) -> str:
        return f"PostgresAdapter({self.display!r})"

    def goal_store(self) -> PostgresGoalStore:
        """Goal programs in this database, in tables of their own (:mod:`formctl.store.goals_postgres`)."""
        goals: PostgresGoalStore | None = self.__dict__.get("_goals")
        if goals is None:
            from formctl.store.goals_postgres import PostgresGoalStore

            goals = self.__dict__["_goals"] = PostgresGoalStore(self.dsn)
        return goals

    def items_served(self, instances: Sequence[InstanceSummary]) -> list[list[dict[str, Any]]]:
        """Which program item each instance serves (:class:`~formctl.forms.adapter.KeepsPrograms`)."""
        from formctl.goals.serving import items_served_each

        return items_served_each(self.goal_store(), instances)

    def settle_bound_items(self, instance: Instance, *, actor: str, source: str) -> None:
        """Settle the program items bound to a form ``instance`` just completed (:class:`~formctl.forms.adapter.KeepsPrograms`)."""
        from formctl.goals.serving import settle_bound

        settle_bound(self, instance.subject, instance.def_id, actor=actor, source=source)

    def conversation_store(self, subject: str) -> PostgresConversations:
        """The chats' conversations of ``subject``'s instances, kept in this database
        (:mod:`formctl.store._pgconversations`), so a colleague who resumes one continues it."""
        return PostgresConversations(self._run, display=self.display, subject=subject)

    def close(self) -> None:
        """End this adapter's session on the server, and its goal store's (it reconnects if used again)."""
        with self._mutex:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None
            goals: PostgresGoalStore | None = self.__dict__.get("_goals")
            if goals is not None:
                goals.close()

    # ------------------------------------------------------------------ protocol: writes

    def _insert(self, instance: Instance) -> Instance:
        rows = list(revision_rows(instance.id, instance.entries, {}, version=1))

        def write(cur: Any) -> None:
            while True:
                cur.execute(INSERT_INSTANCE + " ON CONFLICT (id) DO NOTHING", row_values(instance, writes=0))
                if cur.rowcount == 1:
                    break
                instance.id = new_instance_id()  # two ids in one ms with equal random tails
                rows[:] = revision_rows(instance.id, instance.entries, {}, version=1)
            if rows:
                cur.executemany(INSERT_REVISIONS, rows)

        self._run(write, write=True)
        self._remember(instance.id, _Cached(0, instance))
        return instance.copy()

    def commit_instance(self, instance_id: str, commit: Commit, *, if_version: int, provenance: Provenance) -> Instance:
        """One round trip when this adapter's copy of the instance is current (the usual case: it
        read or wrote it last); else, or when that copy turns out stale, the locked read, check
        and write (docs/store-postgres.md, "A commit in one round trip")."""
        check_provenance(provenance)
        if not is_instance_id(instance_id):
            raise missing(instance_id)
        with self._mutex:
            return self._commit(instance_id, commit, if_version)

    def _commit(self, instance_id: str, commit: Commit, if_version: int) -> Instance:
        hit = self._cache.get(instance_id) if self.one_trip else None
        sent: tuple[Instance, int] | None = None  # a one-trip commit whose fate is unknown
        if hit is not None and hit.instance.version == if_version:
            new = apply_commit(hit.instance, commit, if_version=if_version, now=now_iso())
            changed = {f: new.entries[f] for f in (commit.entries or {})}
            rows = list(revision_rows(instance_id, changed, hit.instance.entries, version=new.version))
            landed = self._commit_in_one_trip(new, hit.writes, rows)
            if landed:
                self._remember(instance_id, _Cached(hit.writes + 1, new))
                return new.copy()
            if landed is None:
                sent = (new, hit.writes + 1)

        def write(cur: Any) -> tuple[Instance, int]:
            row = self._locked_row(cur, instance_id)
            if sent is not None and row.writes == sent[1] and self._assemble(cur, [row])[0] == sent[0]:
                return sent  # the one-trip commit landed before its connection went: not twice
            if row.version != if_version:
                self.conflicts += 1
                raise ConflictError(if_version, row.version)
            stored = self._assemble(cur, [row])[0]
            new = apply_commit(stored, commit, if_version=if_version, now=now_iso())
            changed = {f: new.entries[f] for f in (commit.entries or {})}
            rows = list(revision_rows(instance_id, changed, stored.entries, version=new.version))
            if rows:
                cur.executemany(INSERT_REVISIONS, rows)
            self._update(cur, new, row.writes + 1)
            return new, row.writes + 1

        new, writes = self._run(write, write=True)
        self._remember(instance_id, _Cached(writes, new))
        return new.copy()

    def _commit_in_one_trip(self, new: Instance, writes: int, rows: list[RevisionRow]) -> bool | None:
        """Send :data:`ONE_TRIP_COMMIT`: True when it committed, False when the row had moved since
        ``writes`` (nothing was written), None when the connection failed on the way (it may or
        may not have landed: the caller's locked read tells)."""
        conn = self._connection()  # a server that is away fails here, before anything is sent
        if not self._tables:
            return False  # the locked path says what the store lacks
        params = (*row_values(new, writes=writes + 1)[1:], new.id, writes, new.version, *revision_arrays(rows))
        try:
            return bool(conn.execute(ONE_TRIP_COMMIT, params).fetchone()[0])
        except psycopg.OperationalError as exc:
            if not (conn.broken or conn.closed):
                raise self._failure(exc, True) from None
            self._drop()
            self._lost = True
            return None
        except psycopg.Error as exc:
            raise self._failure(exc, True) from None

    def record_dispatch(self, instance_id: str, key: str, state: DispatchState, provenance: Provenance) -> None:
        check_provenance(provenance)
        if not is_instance_id(instance_id):
            raise missing(instance_id)

        def write(cur: Any) -> tuple[Instance, int]:
            row = self._locked_row(cur, instance_id)
            new = apply_dispatch(self._assemble(cur, [row])[0], key, state, now=now_iso())
            self._update(cur, new, row.writes + 1)
            return new, row.writes + 1

        new, writes = self._run(write, write=True)
        self._remember(instance_id, _Cached(writes, new))

    @contextmanager
    def exclusive(self, instance_id: str) -> Iterator[None]:
        """Hold a session-level advisory lock on ``instance_id`` across a whole read, stage and
        commit (the runner takes it around each commit round, when an adapter offers it).

        Every runner, on any machine, takes the same lock first, so none of them can commit
        between another's read and write: under contention they queue on the server instead
        of retrying conflicts. Reads and writes inside it go through this adapter's connection,
        which holds the lock. A lock lost with its connection (a server restart) leaves
        compare-and-set to catch what it no longer keeps out."""
        # PostgreSQL text holds no NUL (a key may carry a subject that does, and is refused
        # later): any fixed stand-in will do, as two keys that collide only queue together.
        key = (_LOCK_CLASS, instance_id.replace("\x00", "\ufffd"))
        with self._mutex:
            self._run(lambda cur: cur.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", key))
            conn = self._conn
            try:
                yield
            finally:
                if conn is not None and conn is self._conn and not conn.broken:
                    try:
                        conn.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", key)
                    except psycopg.Error:
                        self._drop()  # a session that cannot say whether it holds the lock: end it

    def _locked_row(self, cur: Any, instance_id: str) -> Any:
        cur.execute(f"SELECT {COLUMNS} FROM formctl_instances WHERE id = %s FOR UPDATE", (instance_id,))
        row = cur.fetchone()
        if row is None:
            raise missing(instance_id)
        return row

    @staticmethod
    def _update(cur: Any, new: Instance, writes: int) -> None:
        cur.execute(UPDATE_INSTANCE, (*row_values(new, writes=writes)[1:], new.id))

    # ------------------------------------------------------------------ protocol: reads

    def get_instance(self, instance_id: str) -> Instance | None:
        if not is_instance_id(instance_id):
            return None
        found = self._select("WHERE id = %s", (instance_id,))
        return found[0] if found else None

    def _find(self, listing: Listing, *, strict: bool, damaged: list[StoreError] | None) -> list[Instance]:
        """The instances ``listing`` takes, most recent first. An instance whose stored rows do not
        add up is left out (appended to ``damaged`` when given), or raises when ``strict`` and it is
        open (``formctl run`` asks this way, rather than start a second form beside it)."""
        filters = (("subject", listing.subject), ("def_id", listing.def_id), ("status", listing.status))
        if any("\x00" in v for _, v in filters if isinstance(v, str)):
            return []  # no stored text holds a NUL (PostgreSQL text cannot): nothing matches
        clauses, params = [], []
        for column, value in filters:
            if value is not None:
                clauses.append(f"{column} = %s")
                params.append(value)
        where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
        if listing.limit:
            where += f" ORDER BY updated_at DESC, id DESC LIMIT {int(listing.limit)}"
        else:
            where += " ORDER BY updated_at DESC, id DESC"

        def on_damage(row: Any, exc: StoreError) -> None:
            if strict and is_open(row):
                raise exc
            if damaged is not None:
                damaged.append(exc)

        return self._select(where, tuple(params), on_damage=on_damage)

    def find_latest_unclosed(self, subject: str) -> Instance | None:
        """The subject's most recently updated instance that is not closed, complete ones included
        (one probe of a partial index). A damaged one raises rather than let an older one stand in for it."""
        if "\x00" in subject:
            return None  # no stored subject holds a NUL
        found = self._select(
            # A literal, not a parameter: the planner matches it to the partial index's own
            # predicate (_pgschema), which it cannot do for a bound value under a generic plan.
            f"WHERE subject = %s AND status <> '{ABANDONED}' ORDER BY updated_at DESC, id DESC LIMIT 1",
            (subject,),
        )
        return found[0] if found else None

    def ensure_writable(self) -> None:
        """Raise :class:`StoreError` unless this database can be reached and written (its tables
        there, at this formctl's schema). ``formctl run`` asks before the chat opens."""

        def probe(cur: Any) -> None:
            cur.execute(
                "SELECT has_table_privilege('formctl_instances', 'INSERT, UPDATE') "
                "AND has_table_privilege('formctl_revisions', 'INSERT') "
                "AND has_table_privilege('formctl_conversation_heads', 'INSERT, UPDATE') "
                "AND has_table_privilege('formctl_conversation_turns', 'INSERT, UPDATE')"
            )
            if not cur.fetchone()[0]:
                raise StoreError(
                    f"The PostgreSQL store {self.display} is read-only for this user: "
                    "cannot record answers (ask for INSERT and UPDATE on the formctl tables)."
                )

        self._run(probe, write=True)

    def init(self) -> tuple[int, int]:
        """Create or upgrade the tables; (schema version before, after). ``formctl store init``,
        the only thing that creates a table: a role that may not is told to ask the schema's
        owner (a store already at this formctl's schema needs no privilege beyond reading)."""

        def upgrade(cur: Any) -> tuple[int, int]:
            found, path = _pgschema.version(cur)
            if found == _pgschema.NO_SCHEMA or found > _pgschema.SCHEMA_VERSION:
                raise StoreError(_pgschema.refusal(self.display, found, path) or "")
            try:
                return _pgschema.upgrade(cur)
            except psycopg.errors.InsufficientPrivilege:
                needs = {0: "its tables created", _pgschema.UNVERSIONED: "its schema version recorded"}
                raise StoreError(
                    f"The PostgreSQL store {self.display} needs "
                    + needs.get(found, f"its tables upgraded from schema version {found}")
                    + ", and this user may not change its schema: ask the owner of the schema to run "
                    "formctl store init."
                ) from None

        result = self._run(upgrade, write=True, any_schema=True)
        self._tables, self._schema = True, _pgschema.SCHEMA_VERSION
        if 0 < result[0] < 4 or result[0] == _pgschema.UNVERSIONED:
            self._run(lambda cur: self._fill_search(cur.connection))  # rows written before the search text
        return result

    def _select(
        self, where: str, params: tuple[Any, ...], *, on_damage: Callable[[Any, StoreError], None] | None = None
    ) -> list[Instance]:
        def read(cur: Any) -> list[Instance]:
            cur.execute(f"SELECT {COLUMNS} FROM formctl_instances {where}", params)
            return self._assemble(cur, cur.fetchall(), on_damage=on_damage)

        return [i.copy() for i in self._run(read)]

    def _assemble(
        self,
        cur: Any,
        rows: list[Any],
        *,
        on_damage: Callable[[Any, StoreError], None] | None = None,
        cached: bool = True,
    ) -> list[Instance]:
        """Instances for instance rows: cached ones as they are, the others with the revisions
        added since the cached copy (or all of them), fetched for every row in one query."""
        out: dict[str, Instance] = {}
        stale: list[tuple[Any, _Cached | None]] = []
        for row in rows:
            hit = self._cache.get(row.id) if cached else None
            if hit is not None and hit.writes == row.writes:
                out[row.id] = hit.instance
            else:
                stale.append((row, hit if hit is not None and hit.instance.version <= row.version else None))
        if stale:
            cur.execute(
                f"SELECT {REV_COLUMNS} FROM formctl_revisions r "
                "JOIN unnest(%s::text[], %s::bigint[], %s::bigint[]) AS t(id, since, upto) "
                "ON r.instance_id = t.id AND r.version > t.since AND r.version <= t.upto "
                "ORDER BY r.instance_id, r.field, r.pos",
                (
                    [row.id for row, _ in stale],
                    [hit.instance.version if hit else 0 for row, hit in stale],
                    [row.version for row, _ in stale],
                ),
            )
            fresh: dict[str, dict[str, list[RevisionRow]]] = {}
            for rev in cur.fetchall():
                fresh.setdefault(rev[0], {}).setdefault(rev[1], []).append(rev)
            for row, hit in stale:
                try:
                    instance = assemble(row, fresh.get(row.id, {}), hit.instance if hit else None, self.display)
                except StoreError as exc:
                    self._cache.pop(row.id, None)
                    if on_damage is None:
                        raise
                    on_damage(row, exc)
                    continue
                if cached:
                    self._remember(row.id, _Cached(row.writes, instance))
                out[row.id] = instance
        return [out[row.id] for row in rows if row.id in out]

    def _remember(self, instance_id: str, entry: _Cached) -> None:
        self._cache[instance_id] = entry
        self._cache.move_to_end(instance_id)
        if len(self._cache) > _CACHE_SIZE:
            self._cache.popitem(last=False)

    # ------------------------------------------------------------------ copying in

    def import_instances(self, instances: list[Instance]) -> list[tuple[str, str]]:
        """Store each instance exactly as given (id, version, timestamps, every revision), for
        ``formctl store copy``, in one transaction. Per instance, (outcome, why), as
        :func:`formctl.store.copy.outcome` decides: an instance that diverged is left as it is
        and reported, one the database refuses (a value it cannot hold) is rolled back alone
        (a savepoint each), and neither stops the rest of the batch."""
        from formctl.store.copy import outcome

        def write(cur: Any) -> list[tuple[str, str]]:
            cur.execute(
                f"SELECT {COLUMNS} FROM formctl_instances WHERE id = ANY(%s) ORDER BY id FOR UPDATE",
                ([i.id for i in instances],),
            )
            rows = {row.id: row for row in cur.fetchall()}
            damaged: dict[str, str] = {}

            def note(row: Any, exc: StoreError) -> None:
                damaged[row.id] = exc.message

            here = {i.id: i for i in self._assemble(cur, list(rows.values()), cached=False, on_damage=note)}
            outcomes: list[tuple[str, str]] = []
            for given in instances:
                if given.id in damaged:
                    outcomes.append(("refused", f"damaged in the target: {damaged[given.id]}"))
                    continue
                row = rows.get(given.id)
                held = here.get(given.id)
                done, why = outcome(held, given)
                if done not in ("copied", "updated"):
                    outcomes.append((done, why))
                    continue
                try:
                    with cur.connection.transaction():  # a savepoint: a refusal undoes this one alone
                        if row is None:
                            cur.execute(INSERT_INSTANCE, row_values(given, writes=given.version))
                            revisions = list(revision_rows(given.id, given.entries, {}, version=given.version))
                        else:
                            assert held is not None
                            revisions = list(
                                revision_rows(given.id, given.entries, held.entries, version=given.version)
                            )
                            cur.execute(UPDATE_INSTANCE, (*row_values(given, writes=row.writes + 1)[1:], given.id))
                        if revisions:
                            cur.executemany(INSERT_REVISIONS, revisions)
                except (psycopg.DataError, psycopg.IntegrityError, StoreError) as exc:
                    reason = exc.message if isinstance(exc, StoreError) else _reason(exc, self.dsn)
                    outcomes.append(("refused", f"the database cannot hold it: {reason}"))
                    continue
                outcomes.append((done, ""))
            return outcomes

        if not instances:
            return []
        return self._run(write, write=True)

    def conversation_documents(self) -> tuple[dict[str, dict[str, Any]], list[str]]:
        """Every chat's conversation, whole, by instance id, and a line for each that cannot be
        read (``formctl store copy``; :mod:`formctl.store._pgconversations`)."""
        return self._run(lambda cur: _pgconversations.all_documents(cur, self.display))

    def import_conversations(self, items: list[tuple[str, str, dict[str, Any]]]) -> list[tuple[str, str]]:
        """Store each (instance id, subject, document) as given, in one transaction, beside its
        instance of the same subject only; per item (outcome, why) as
        :func:`formctl.store.copy.conversation_outcome` decides."""
        from formctl.store.copy import conversation_outcome

        if not items:
            return []
        return self._run(
            lambda cur: _pgconversations.import_documents(cur, items, conversation_outcome, self.display), write=True
        )

    # ------------------------------------------------------------------ damage

    def damage(self, instance_id: str) -> None:
        """Always None: a transaction never leaves part of a commit behind, so nothing acknowledged
        goes missing the way a file can. Rows changed by hand are reported by ``get_instance`` and
        ``check()`` instead (a :class:`StoreError` naming the instance)."""
        return None

    def repairs(self, instance_id: str) -> tuple[dict[str, Any], ...]:
        return ()

    def repair(self, instance_id: str, *, by: str) -> None:
        raise StoreError(
            "The PostgreSQL store has nothing to repair: a transaction never leaves a partial write. "
            "An instance that formctl store check reports was changed by hand; restore it from a backup."
        )

    # ------------------------------------------------------------------ check

    def check(self) -> Any:
        """Read every instance and its answer log afresh (no cache) in one consistent snapshot and
        report any whose rows do not add up. Changes nothing."""

        def scan(cur: Any) -> tuple[int, int, list[StoreProblem], list[str]]:
            if not self._tables:
                self._check_schema(cur.connection)
            refused = self._refusal()
            if refused is not None:
                return 0, 0, [StoreProblem(self.display, refused)], []
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            problems: list[StoreProblem] = []
            instances = revisions = 0
            last = ""
            while True:
                cur.execute(f"SELECT {COLUMNS} FROM formctl_instances WHERE id > %s ORDER BY id LIMIT {_PAGE}", (last,))
                rows = cur.fetchall()
                if not rows:
                    break
                last = rows[-1].id

                def damaged(row: Any, exc: StoreError) -> None:
                    problems.append(StoreProblem(f"{self.display} instance {row.id}", exc.reason or exc.message))

                for instance in self._assemble(cur, rows, on_damage=damaged, cached=False):
                    instances += 1
                    revisions += sum(len(log.revisions) for log in instance.entries.values())
            cur.execute(
                "SELECT r.instance_id, count(*) FROM formctl_revisions r JOIN formctl_instances i ON i.id = r.instance_id "
                "WHERE r.version > i.version GROUP BY r.instance_id ORDER BY r.instance_id"
            )
            for iid, count in cur.fetchall():
                problems.append(
                    StoreProblem(
                        f"{self.display} instance {iid}",
                        (f"{count} answer(s) stamped with a version later than the instance's own; left as they are."),
                    )
                )
            return instances, revisions, problems, []

        instances, revisions, problems, notes = self._run(scan, write=False, transaction=True, any_schema=True)
        return DatabaseReport(
            directory=self.display,
            files_checked=0,
            instances=instances,
            problems=tuple(problems),
            notes=tuple(notes),
            revisions=revisions,
        )

    def reindex(self) -> Any:
        """PostgreSQL maintains its own indexes; what formctl derives itself, each row's ``search``
        text (``formctl find``), is written afresh; then :meth:`check`."""
        written = self._run(lambda cur: self._fill_search(cur.connection, every=True), write=True, transaction=False)
        report = self.check()
        from dataclasses import replace

        note = f"PostgreSQL keeps its own indexes; the search text of {written} instance(s) written afresh"
        return replace(report, notes=report.notes + (note,))

    # ------------------------------------------------------------------ live updates

    def watch(self) -> Watcher:
        """A :class:`Watcher` that wakes when any process commits a write to this store."""
        return Watcher(self._connect)

    # ------------------------------------------------------------------ connections

    def interrupt(self) -> None:
        """Stop waiting for a server that is away, now (safe from any thread: a chat's Ctrl-C).
        The wait in progress ends with a :class:`StoreError`; nothing is written by it."""
        self._stop.set()

    def _connect(self, *, patience: float = 0.0) -> Any:
        """A new connection. With ``patience``, keep trying that long while the server is away
        (refusing, starting up, shutting down): a restart then costs a pause, not an error.
        :meth:`interrupt` ends the wait early."""
        deadline = time.monotonic() + patience
        pause = 0.05
        if patience:
            self._stop.clear()
        while True:
            try:
                return connect(self.dsn, connect_timeout=self._connect_timeout, on_wait=self._slow)
            except psycopg.OperationalError as exc:
                if time.monotonic() + pause > deadline or not _server_away(exc):
                    raise StoreError(connect_failure(self.dsn, exc)) from None
            except (psycopg.Error, ValueError) as exc:  # ValueError: a NUL in the string
                raise StoreError(connect_failure(self.dsn, exc)) from None
            if pause == 0.05:
                self._slow()  # the first pause of a wait for a server that is away
            if self._stop.wait(pause):
                self._stop.clear()
                raise StoreError(
                    f"Stopped waiting for the PostgreSQL store at {self.server} (it is not answering): "
                    "nothing was saved by this message. Send it again once the server is back."
                )
            pause = min(pause * 2, 0.5)

    def _connect_options(self) -> dict[str, Any]:
        return connect_options(self.dsn, connect_timeout=self._connect_timeout)

    def _slow(self) -> None:
        """Tell :attr:`on_wait` (a chat's "waiting for the database…" line) that a call is waiting
        for the server: reconnecting to one that is away, or a statement it has not answered for
        a second (store/_pgwatch.py)."""
        if self.on_wait is not None:
            self.on_wait(self.server)

    def _connection(self) -> Any:
        if self._conn is not None and self._pid != os.getpid():
            _INHERITED.append(self._conn)  # a forked child: leave the parent's session alone
            self._conn = None
        if self._conn is None or self._conn.closed:
            patience = _reconnect_patience() if self._lost else 0.0
            if time.monotonic() - self._gave_up_at < patience:
                # Waited that long a moment ago and the server stayed away: the calls that follow
                # (the rest of one chat turn) fail at once, so a turn waits once, not once a call.
                patience = 0.0
            try:
                conn = self._connect(patience=patience)
            except BaseException:  # away after all that waiting, or Ctrl-C stopped the wait
                if patience:
                    self._gave_up_at = time.monotonic()
                raise
            self._lost = False
            self._gave_up_at = -1e9
            self._conn, self._pid = conn, os.getpid()
            weakref.finalize(self, _close_in, conn, self._pid)  # an adapter dropped unclosed closes its session
            self._tables = False
            try:
                self._check_schema(conn)
            except BaseException:
                self._drop()
                raise
        return self._conn

    def _check_schema(self, conn: Any) -> None:
        with conn.cursor() as cur:
            self._schema, self._search_path = _pgschema.version(cur)
        self._tables = self._schema == _pgschema.SCHEMA_VERSION

    def _refusal(self) -> str | None:
        """Why this store cannot be read or written as it is (docs/store-postgres.md, "Schema
        versions"): never read as empty for what it lacks. None when it can."""
        return _pgschema.refusal(self.display, self._schema, self._search_path)

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        self._tables = False
        if conn is not None:
            try:
                conn.close()
            except Exception:
                pass

    def _run(
        self, fn: Callable[[Any], T], *, write: bool = False, transaction: bool | None = None, any_schema: bool = False
    ) -> T:
        """Run ``fn(cursor)`` on this adapter's connection: in one transaction when writing (a
        write of one statement passes ``transaction=False``: the statement commits on its own, in
        one round trip); once more on a new connection when the old one turned out dead before
        anything was written.
        Refused in one line unless the tables are at this formctl's schema (``any_schema``: the
        commands that say what they found instead, ``store init`` and ``store check``)."""
        with self._mutex:
            for attempt in (1, 2):
                conn = self._connection()
                self._committing = False
                try:
                    if not (self._tables or any_schema):
                        self._check_schema(conn)  # another process may have run store init since
                        refused = self._refusal()
                        if refused is not None:
                            raise StoreError(refused)
                    if write if transaction is None else transaction:
                        with conn.transaction():
                            with conn.cursor(row_factory=namedtuple_row) as cur:
                                result = fn(cur)
                                self._committing = write
                    else:  # a read, or a write of one statement (it commits on its own: one round trip)
                        with conn.cursor(row_factory=namedtuple_row) as cur:
                            self._committing = write
                            result = fn(cur)
                    return result
                except psycopg.OperationalError as exc:
                    if not (conn.broken or conn.closed):
                        raise self._failure(exc, write) from None
                    self._drop()
                    self._lost = True
                    if self._committing:
                        raise StoreError(
                            f"Lost the connection to the PostgreSQL store at {self.server} while saving: "
                            "the change may or may not have been saved (formctl inspect shows what was)."
                        ) from None
                    if attempt == 2:
                        raise StoreError(
                            f"Lost the connection to the PostgreSQL store at {self.server} ({_reason(exc, self.dsn)})"
                            + ("; nothing was saved. Try again." if write else ". Try again.")
                        ) from None
                except psycopg.Error as exc:
                    raise self._failure(exc, write) from None
                finally:
                    self._committing = False
        raise AssertionError("unreachable")

    def _fill_search(self, conn: Any, *, every: bool = False) -> int:
        """The ``search`` text of rows written before there was one (a store just upgraded), or of
        ``every`` row (``store reindex``), a page at a time; every later write keeps it current.
        Returns how many rows were written."""
        last, written = "", 0
        only = "" if every else "search IS NULL AND "
        while True:
            with conn.transaction(), conn.cursor(row_factory=namedtuple_row) as cur:
                cur.execute(
                    f"SELECT {COLUMNS} FROM formctl_instances WHERE {only}id > %s ORDER BY id LIMIT {_PAGE}", (last,)
                )
                rows = cur.fetchall()
                if not rows:
                    return written
                last = rows[-1].id
                found = self._assemble(cur, rows, cached=False, on_damage=lambda row, exc: None)
                written += len(found)
                cur.executemany(
                    "UPDATE formctl_instances SET search = %s WHERE id = %s", [(terms_of(i), i.id) for i in found]
                )

    @staticmethod
    def _with_values(cur: Any, hits: list[SearchHit]) -> list[SearchHit]:
        """The hits with the values in force of their matched fields, fetched in one query."""
        wanted = {(h.instance_id, f) for h in hits for f in h.fields}
        values: dict[str, dict[str, Any]] = {h.instance_id: {} for h in hits}
        if wanted:
            cur.execute(
                "SELECT r.instance_id, r.field, r.value::text AS value FROM formctl_instances i "
                "CROSS JOIN LATERAL json_array_elements(i.fields) f JOIN formctl_revisions r "
                "ON r.instance_id = i.id AND r.field = f->>0 AND r.pos = (f->>2)::int "
                "WHERE i.id = ANY(%s) AND f->>0 = ANY(%s) AND NOT r.retracted",  # the instances by key
                (sorted({w[0] for w in wanted}), sorted({w[1] for w in wanted})),
            )
            for row in cur.fetchall():
                if row.value is not None and (row.instance_id, row.field) in wanted:
                    values[row.instance_id][row.field] = json.loads(row.value)
        return [dataclasses.replace(h, values=values[h.instance_id]) for h in hits]

    # ------------------------------------------------------------------ stats and export

    def form_facts(self, scope: Scope) -> FormFacts:
        """``formctl stats``: the facts from SQL aggregates (:mod:`formctl.store._pgstats`), in one
        read-only snapshot, no instance assembled."""
        from formctl.store import _pgstats

        def read(cur: Any) -> FormFacts:
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            return _pgstats.form_facts(cur, scope)

        return self._run(read, transaction=True)

    def iter_instances(self, scope: Scope) -> Iterator[Instance]:
        """The instances in ``scope``, oldest first, a page of :data:`_PAGE` at a time (``formctl
        export --form``): never more than one page in memory."""
        after = ("", "")
        while True:
            page = self._select(
                'WHERE def_id = %s AND (%s::text IS NULL OR created_at >= %s::text COLLATE "C") '
                "AND (%s::text IS NULL OR status = %s::text) AND (created_at, id) > (%s::text, %s::text) "
                f"ORDER BY created_at, id LIMIT {_PAGE}",
                (scope.def_id, scope.since, scope.since, scope.status, scope.status, *after),
                on_damage=lambda row, exc: scope.damaged.append(exc),
            )
            if not page:  # (a short page may only have lost a damaged row: ask again)
                return
            yield from page
            after = (page[-1].created_at, page[-1].id)

    # ------------------------------------------------------------------ find

    def search(self, query: SearchQuery) -> list[SearchHit]:
        """``formctl find`` in SQL: the rows whose ``search`` text holds every word (a trigram
        index probe), most recent first, a page at a time until ``query.limit`` hits; which field
        matched, and that it may be searched, is decided per candidate row
        (:func:`formctl.forms.search.matching`). No instance is assembled."""
        clauses = ["search LIKE %s"] * len(query.words)
        params: list[Any] = ["%" + _like_escaped(w) + "%" for w in query.words]
        for column, value in (("def_id", query.def_id), ("status", query.status)):
            if value is not None:
                clauses.append(f"{column} = %s")
                params.append(value)
        where = " AND ".join(clauses) or "true"

        def read(cur: Any) -> list[SearchHit]:
            hits: list[SearchHit] = []
            after: tuple[str, str] = ("\uffff", "")
            page = max(2 * query.limit, 100)  # rows a word every instance holds fetches at once
            while len(hits) < query.limit:
                cur.execute(
                    "SELECT id, def_id, status, subject, updated_at, search FROM formctl_instances "
                    f"WHERE {where} AND (updated_at, id) < (%s, %s) ORDER BY updated_at DESC, id DESC LIMIT {page}",
                    (*params, *after),
                )
                rows = cur.fetchall()
                hits.extend(hits_of(query, [(*r[:5], r.search or "") for r in rows], ordered=True))
                if len(rows) < page:
                    break
                after = (rows[-1].updated_at, rows[-1].id)
            return self._with_values(cur, hits[: query.limit])

        return self._run(read)

    def _failure(self, exc: BaseException, write: bool) -> StoreError:
        if isinstance(exc, psycopg.DataError):  # a value PostgreSQL cannot hold (a NUL in text)
            return StoreError(
                f"The instance holds a value that cannot be stored in PostgreSQL ({_reason(exc, self.dsn)})."
            )
        if isinstance(exc, psycopg.errors.InsufficientPrivilege):
            return StoreError(_pgschema.not_allowed(self.display, _reason(exc, self.dsn), write))
        tail = " Nothing was saved." if write else ""
        return StoreError(f"The PostgreSQL store at {self.server} failed: {_reason(exc, self.dsn)}{tail}")
