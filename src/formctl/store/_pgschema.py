"""The PostgreSQL store's tables, created and upgraded by the adapter itself.

``formctl_schema`` holds one row: the schema version the tables are at. A store is brought
to :data:`SCHEMA_VERSION` by running, in order and in one transaction, every migration after
the version it is at; ``formctl store init`` does it explicitly, and the first write does
it implicitly. A database at a *newer* version than this formctl knows is refused, never
downgraded.

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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from psycopg import Cursor

SCHEMA_VERSION = 3

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
        # The open-form lookup (find_open_instance): one index probe, abandoned ones never visited.
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
    # --- issue 42, the support desk (formctl find): kept apart from the tables' own history ---
    # Each instance's folded subject and values in force (formctl.forms.search), written with
    # every write to the row; NULL only on rows written before, until `store init` fills them.
    3: ("ALTER TABLE formctl_instances ADD COLUMN search text",),
}

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

CONVERSATIONS = (
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
)
"""The chats' conversations (``_pgconversations``): created by the first save, beside the
versioned tables rather than as a migration, so that a store at schema 2 needs no upgrade
(and a reader no privilege) for a chat to keep its conversation there. ``document`` is the
conversation as JSON text, ASCII-escaped, exactly as the local store writes its file."""


def ensure_conversations(cur: Cursor[Any]) -> None:
    """Create the conversation tables if missing, inside the caller's transaction."""
    cur.execute("SELECT pg_advisory_xact_lock(%s)", (_CREATE_LOCK,))
    for statement in CONVERSATIONS:
        cur.execute(statement)


CREATE_VERSION_TABLE = """CREATE TABLE IF NOT EXISTS formctl_schema (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    version integer NOT NULL,
    migrated_at timestamptz NOT NULL DEFAULT now()
)"""

EXISTS = "SELECT to_regclass('formctl_schema') IS NOT NULL"
CURRENT = "SELECT version FROM formctl_schema"


def upgrade(cur: Cursor[Any]) -> tuple[int, int]:
    """Bring the tables to :data:`SCHEMA_VERSION` inside the caller's transaction.

    Returns (version before, version after). Concurrent callers are serialised by an
    advisory lock, so two first writes never both create the tables."""
    cur.execute("SELECT pg_advisory_xact_lock(%s)", (_CREATE_LOCK,))
    cur.execute(CREATE_VERSION_TABLE)
    cur.execute(CURRENT)
    row = cur.fetchone()
    before = row[0] if row else 0
    if before > SCHEMA_VERSION:
        return before, before
    for version in range(before + 1, SCHEMA_VERSION + 1):
        for statement in MIGRATIONS[version]:
            cur.execute(statement)
    if before < 3:
        create_search_index(cur)
    if row is None:
        cur.execute("INSERT INTO formctl_schema (version) VALUES (%s)", (SCHEMA_VERSION,))
    elif before < SCHEMA_VERSION:
        cur.execute("UPDATE formctl_schema SET version = %s, migrated_at = now()", (SCHEMA_VERSION,))
    return before, SCHEMA_VERSION
