"""The PostgreSQL store's tables: every one of them created by ``formctl store init``, and by
nothing else.

``formctl_schema`` holds one row: the schema version the tables are at. ``formctl store init``
brings a store to :data:`SCHEMA_VERSION` by running, in order and in one transaction, every
migration after the version it is at (:data:`MIGRATIONS`, the one place a table or an index
is added). Nothing creates or changes a table at run time, so a role granted only SELECT,
INSERT, UPDATE and DELETE runs every other command; a store at another version than this
formctl's, or whose version record is missing, is refused in one line that says what to run
(never read as empty, never upgraded behind the owner's back). A database at a *newer*
version than this formctl knows is refused, never downgraded.

Why ``json`` and not ``jsonb`` for values and maps: ``jsonb`` reorders object keys, drops
duplicate ones and refuses the ``\\u0000`` escape, so a value would not come back exactly as
it was given (and the JSON store gives it back exactly). Nothing here queries inside those
documents, so the indexable form buys nothing. The maps that must keep their order (the
fields in the order first answered, dispatch records) are ``json`` too.

The tables (all names start ``formctl_``; put them in a schema of their own with
``?options=-csearch_path%3Dformctl`` in the DSN if the database is shared):

* ``formctl_instances``: one row per instance, everything but the answers. ``version`` is
  the compare-and-set version, ``writes`` counts every write (commits and dispatch records,
  which leave the version alone) so a reader can tell that its cached copy is current, and
  ``fields`` lists ``[field, length, cursor]`` per answered field in the order first answered.
* ``formctl_revisions``: the answer logs, one row per revision, never updated or deleted (a
  trigger refuses both). ``pos`` is the revision's index in its field's log and ``version``
  the instance version whose commit appended it, so a reader holding version V fetches only
  the rows with a later version.
* ``formctl_conversation_heads`` and ``formctl_conversation_turns``: the chats' conversations,
  one row per exchange (``_pgconversations``); ``formctl_conversations`` holds those saved
  whole before schema 3.
* ``formctl_goal_*``: goal programs (``goals_postgres``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from psycopg import Cursor

SCHEMA_VERSION = 4

CHANNEL = "formctl_changes"
"""The NOTIFY channel: every write to an instance row sends ``"<id> <version> <writes>"`` on it
when its transaction commits."""

# An arbitrary constant: the advisory lock that serialises concurrent first-time creations.
_CREATE_LOCK = 0x666F726D63746C

MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        """CREATE TABLE formctl_instances (
            id text COLLATE "C" PRIMARY KEY,
            def_id text NOT NULL,
            def_version integer NOT NULL,
            subject text NOT NULL,
            status text NOT NULL,
            version bigint NOT NULL CHECK (version >= 1),
            writes bigint NOT NULL DEFAULT 0,
            revision_seq bigint NOT NULL,
            created_at text COLLATE "C" NOT NULL,
            updated_at text COLLATE "C" NOT NULL,
            completed_at text,
            closed_reason text,
            blocked_on text,
            open_step_override text,
            forced_complete boolean NOT NULL DEFAULT false,
            fields json NOT NULL,
            occurrences json NOT NULL,
            dispatches json NOT NULL
        )""",
        # "Most recent first" everywhere: ids break ties, and both sort as Python compares
        # strings (COLLATE "C"), whatever the database's own collation.
        "CREATE INDEX formctl_instances_recent ON formctl_instances (updated_at DESC, id DESC)",
        "CREATE INDEX formctl_instances_subject ON formctl_instances (subject, updated_at DESC, id DESC)",
        "CREATE INDEX formctl_instances_form ON formctl_instances (def_id, updated_at DESC, id DESC)",
        # The open-form lookup (find_latest_unclosed): one index probe, abandoned ones never visited.
        """CREATE INDEX formctl_instances_open ON formctl_instances (subject, updated_at DESC, id DESC)
            WHERE status <> 'abandoned'""",
        """CREATE TABLE formctl_revisions (
            instance_id text COLLATE "C" NOT NULL REFERENCES formctl_instances (id),
            field text NOT NULL,
            pos integer NOT NULL CHECK (pos >= 0),
            version bigint NOT NULL,
            seq bigint NOT NULL,
            at text NOT NULL,
            source text NOT NULL,
            actor text NOT NULL,
            note text,
            value json,
            error text,
            retracted boolean NOT NULL DEFAULT false,
            PRIMARY KEY (instance_id, field, pos)
        )""",
        "CREATE INDEX formctl_revisions_since ON formctl_revisions (instance_id, version)",
        """CREATE FUNCTION formctl_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                RAISE EXCEPTION 'formctl_revisions is append-only: an answer is never changed or removed'
                    USING ERRCODE = 'integrity_constraint_violation';
            END $$""",
        """CREATE TRIGGER formctl_revisions_append_only BEFORE UPDATE OR DELETE ON formctl_revisions
            FOR EACH ROW EXECUTE FUNCTION formctl_append_only()""",
        """CREATE TRIGGER formctl_revisions_no_truncate BEFORE TRUNCATE ON formctl_revisions
            FOR EACH STATEMENT EXECUTE FUNCTION formctl_append_only()""",
        # The live-update signal, sent from inside every writing transaction (so it is delivered
        # exactly when, and only if, the write commits).
        f"""CREATE FUNCTION formctl_notify() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                PERFORM pg_notify('{CHANNEL}', NEW.id || ' ' || NEW.version || ' ' || NEW.writes);
                RETURN NULL;
            END $$""",
        """CREATE TRIGGER formctl_instances_notify AFTER INSERT OR UPDATE ON formctl_instances
            FOR EACH ROW EXECUTE FUNCTION formctl_notify()""",
    ),
    # How each revision's value arrived (kind, the person's quote, turn and message, the hook):
    # NULL on the rows written before, which read back with no kind recorded.
    2: ("ALTER TABLE formctl_revisions ADD COLUMN how json",),
    # Everything a chat and a goal program write, so that nothing creates a table at run time
    # and a role with DML only can run every command (docs/store-postgres.md, "A team's roles").
    # IF NOT EXISTS where an older formctl created the table on first use.
    3: (
        # Goal programs (goals_postgres): the newest snapshot per scope, every version, each
        # definition once by digest, the hooks' receipts.
        """CREATE TABLE IF NOT EXISTS formctl_goal_heads (
            scope_id text COLLATE "C" PRIMARY KEY,
            subject text NOT NULL,
            key text NOT NULL,
            agent text,
            version bigint NOT NULL CHECK (version >= 1),
            digest text NOT NULL,
            state json NOT NULL,
            updated_at text NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS formctl_goal_heads_subject ON formctl_goal_heads (subject)",
        """CREATE TABLE IF NOT EXISTS formctl_goal_history (
            scope_id text COLLATE "C" NOT NULL,
            version bigint NOT NULL,
            digest text NOT NULL,
            state json NOT NULL,
            PRIMARY KEY (scope_id, version)
        )""",
        """CREATE TABLE IF NOT EXISTS formctl_goal_programs (
            scope_id text COLLATE "C" NOT NULL,
            digest text NOT NULL,
            definition json NOT NULL,
            PRIMARY KEY (scope_id, digest)
        )""",
        """CREATE TABLE IF NOT EXISTS formctl_goal_receipts (
            scope_id text COLLATE "C" NOT NULL,
            key text COLLATE "C" NOT NULL,
            ord bigint NOT NULL,
            receipt json NOT NULL,
            PRIMARY KEY (scope_id, key)
        )""",
        """CREATE OR REPLACE FUNCTION formctl_goal_history_append_only() RETURNS trigger AS $$
        BEGIN
            RAISE EXCEPTION 'formctl_goal_history is append-only';
        END $$ LANGUAGE plpgsql""",
        "DROP TRIGGER IF EXISTS formctl_goal_history_append_only ON formctl_goal_history",
        """CREATE TRIGGER formctl_goal_history_append_only BEFORE UPDATE OR DELETE ON formctl_goal_history
            FOR EACH ROW EXECUTE FUNCTION formctl_goal_history_append_only()""",
        # Conversations written whole by formctl before schema 3 (one document per instance):
        # read as the first part of that instance's conversation, never written again by a chat.
        """CREATE TABLE IF NOT EXISTS formctl_conversations (
            instance_id text COLLATE "C" PRIMARY KEY REFERENCES formctl_instances (id),
            subject text NOT NULL,
            saved_at text NOT NULL,
            document text NOT NULL
        )""",
        """CREATE TABLE IF NOT EXISTS formctl_conversations_aside (
            instance_id text COLLATE "C" NOT NULL,
            subject text NOT NULL,
            set_aside_at timestamptz NOT NULL DEFAULT now(),
            document text NOT NULL,
            why text NOT NULL
        )""",
        # A conversation as every chat that took part wrote it (_pgconversations): the head
        # numbers exchanges and the person's turns for every chat alike...
        """CREATE TABLE formctl_conversation_heads (
            instance_id text COLLATE "C" PRIMARY KEY REFERENCES formctl_instances (id),
            subject text NOT NULL,
            exchanges bigint NOT NULL DEFAULT 0,
            turns bigint NOT NULL DEFAULT 0,
            seen text,
            saved_at text NOT NULL
        )""",
        # ...and each exchange (a person's message and all the model and the tools did in answer)
        # is a row of its own, written only by the chat that claimed its number.
        """CREATE TABLE formctl_conversation_turns (
            instance_id text COLLATE "C" NOT NULL REFERENCES formctl_instances (id),
            pos bigint NOT NULL CHECK (pos >= 1),
            chat text NOT NULL,
            saved_at text NOT NULL,
            messages text NOT NULL,
            words text NOT NULL,
            PRIMARY KEY (instance_id, pos)
        )""",
    ),
    # --- issue 42, the support desk (formctl find, formctl stats): kept apart from the rest ---
    # Each instance's folded subject and values in force (formctl.forms.search), written with
    # every write to the row; NULL only on rows written before, until `store init` fills them.
    # And the model that answered each exchange of a chat (stats by model; NULL before).
    4: (
        "ALTER TABLE formctl_instances ADD COLUMN search text",
        "ALTER TABLE formctl_conversation_turns ADD COLUMN model text",
    ),
}
"""Every table, index, function and trigger formctl uses, by the schema version that added it.
To add one: a new entry ``SCHEMA_VERSION + 1`` here (and bump :data:`SCHEMA_VERSION`), and a line
in :func:`found_version` that recognises it (a table or column it adds); ``formctl store init``
runs it, and nothing else ever creates anything. A role with DML only needs no new GRANT: the
README's default privileges cover every table the owner creates."""

SEARCH_INDEX = (
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    # The operator class named in the schema the extension lives in, which need not be on this
    # store's search_path (a database's stores in schemas of their own share one pg_trgm).
    "SELECT quote_ident(extnamespace::regnamespace::text) FROM pg_extension WHERE extname = 'pg_trgm'",
    "CREATE INDEX IF NOT EXISTS formctl_instances_search ON formctl_instances USING gin (search {}.gin_trgm_ops)",
)
"""``formctl find``'s index: a word anywhere in ``search`` (``LIKE '%word%'``) is a trigram index
probe, not a scan. pg_trgm ships with PostgreSQL and is a trusted extension (a database owner
may create it); a server without it keeps working, each search then a scan of one column
(about 20 ms at 10,000 instances). Using the index needs no privilege beyond SELECT."""


def create_search_index(cur: Cursor[Any]) -> bool:
    """Create :data:`SEARCH_INDEX` inside the caller's transaction, under a savepoint: True when
    it exists now, False when this server cannot have it (the search then scans)."""
    cur.execute("SAVEPOINT formctl_search_index")
    try:
        create, where, index = SEARCH_INDEX
        cur.execute(create)
        cur.execute(where)
        row = cur.fetchone()
        if row is None:
            raise LookupError("pg_trgm is not installed")
        cur.execute(index.format(row[0]))
    except Exception:  # psycopg.Error: no pg_trgm on this server, or no right to create it
        cur.execute("ROLLBACK TO SAVEPOINT formctl_search_index")
        return False
    cur.execute("RELEASE SAVEPOINT formctl_search_index")
    return True


assert sorted(MIGRATIONS) == list(range(1, SCHEMA_VERSION + 1))

CREATE_VERSION_TABLE = """CREATE TABLE IF NOT EXISTS formctl_schema (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    version integer NOT NULL,
    migrated_at timestamptz NOT NULL DEFAULT now()
)"""

# One round trip: where the DSN's search_path lands, and which of formctl's tables are there.
PROBE = (
    "SELECT current_schema() AS schema, current_setting('search_path') AS path, "
    "to_regclass('formctl_schema') IS NOT NULL AS versioned, to_regclass('formctl_instances') IS NOT NULL AS tables"
)
CURRENT = "SELECT version FROM formctl_schema"

NO_SCHEMA = -1
""":func:`version`: the ``search_path`` names no schema that exists."""
UNVERSIONED = -2
""":func:`version`: formctl's tables are there but ``formctl_schema`` is missing or empty."""


def version(cur: Cursor[Any]) -> tuple[int, str]:
    """The schema version the tables are at (0: no formctl tables; or :data:`NO_SCHEMA`,
    :data:`UNVERSIONED`), and the ``search_path`` (for the words of a refusal)."""
    schema, path, versioned, tables = _one(cur, PROBE)
    if schema is None:
        return NO_SCHEMA, path
    if versioned:
        cur.execute(CURRENT)
        row = cur.fetchone()
        if row is not None:
            return int(row[0]), path
    return (UNVERSIONED if tables else 0), path


def found_version(cur: Cursor[Any]) -> int:
    """The schema version tables without a version row are at, read off the tables themselves."""
    search = _one(
        cur,
        "SELECT count(*) AS n FROM information_schema.columns WHERE table_schema = current_schema() "
        "AND table_name = 'formctl_instances' AND column_name = 'search'",
    )
    if search[0]:
        return 4
    if _one(cur, "SELECT to_regclass('formctl_conversation_turns') IS NOT NULL AS turns")[0]:
        return 3
    how = _one(
        cur,
        "SELECT count(*) AS n FROM information_schema.columns WHERE table_schema = current_schema() "
        "AND table_name = 'formctl_revisions' AND column_name = 'how'",
    )
    return 2 if how[0] else 1


def _one(cur: Cursor[Any], query: str) -> Any:
    """The one row ``query`` returns (an aggregate or a probe always returns one)."""
    cur.execute(query)
    row = cur.fetchone()
    assert row is not None
    return row


def upgrade(cur: Cursor[Any]) -> tuple[int, int]:
    """Bring the tables to :data:`SCHEMA_VERSION` inside the caller's transaction (``formctl
    store init``, and nothing else). Returns (version before, version after); tables without a
    version row are first given the version they show. Concurrent callers are serialised by an
    advisory lock, so two never both create the tables."""
    cur.execute("SELECT pg_advisory_xact_lock(%s)", (_CREATE_LOCK,))
    before, _ = version(cur)
    if before > SCHEMA_VERSION or before == SCHEMA_VERSION:
        return before, before
    cur.execute(CREATE_VERSION_TABLE)
    start = found_version(cur) if before == UNVERSIONED else before
    for number in range(start + 1, SCHEMA_VERSION + 1):
        for statement in MIGRATIONS[number]:
            cur.execute(statement)
    if start < 4:
        create_search_index(cur)
    cur.execute("DELETE FROM formctl_schema")
    cur.execute("INSERT INTO formctl_schema (version) VALUES (%s)", (SCHEMA_VERSION,))
    return max(before, 0), SCHEMA_VERSION


def refusal(display: str, found: int, search_path: str) -> str | None:
    """Why a store at ``found`` (:func:`version`) cannot be used by this formctl, in one line that
    says what to run; None when it is at :data:`SCHEMA_VERSION`."""
    if found == SCHEMA_VERSION:
        return None
    if found == NO_SCHEMA:
        return (
            f"The PostgreSQL store {display} names no schema that exists (search_path is {search_path}): "
            "create it (CREATE SCHEMA, as the owner) or correct the DSN's options."
        )
    if found == UNVERSIONED:
        return (
            f"The PostgreSQL store {display} holds formctl tables but no record of their schema version "
            "(formctl_schema is missing or empty, as after a partial restore): it is not read, rather than read "
            "as empty. Run formctl store init (as the role that owns the schema): it reads the version off the "
            "tables and records it; every answer is kept."
        )
    if found == 0:
        return (
            f"The PostgreSQL store {display} has no formctl tables (search_path is {search_path}): run formctl "
            "store init, as the role that owns the schema, to create them."
        )
    if found > SCHEMA_VERSION:
        return (
            f"The PostgreSQL store {display} is at schema version {found}, newer than this formctl "
            f"knows ({SCHEMA_VERSION}): use the formctl version that wrote it."
        )
    return (
        f"The PostgreSQL store {display} is at schema version {found}, older than this formctl's "
        f"{SCHEMA_VERSION}: formctl store init upgrades it (run it as the role that owns the schema; every "
        "answer is kept). Until then it is neither read nor written, rather than read as empty."
    )


def not_allowed(display: str, reason: str, write: bool) -> str:
    """A privilege the user lacks, said as what to ask for (README, "A team's roles")."""
    what = reason.rsplit(" for ", 1)[-1].rstrip(".") if "permission denied for " in reason else "the formctl tables"
    if write:
        return (
            f"The PostgreSQL store {display} is read-only for this user ({what} cannot be written): nothing "
            "was saved. Writing needs the staff role's privileges (SELECT, INSERT, UPDATE, DELETE)."
        )
    return f"The PostgreSQL store {display} does not let this user read {what}: ask the owner for SELECT on it."
