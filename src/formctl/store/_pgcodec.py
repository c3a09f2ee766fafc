"""Instances to rows and back, for the PostgreSQL store (the tables are in ``_pgschema``).

An instance is one ``formctl_instances`` row plus one ``formctl_revisions`` row per answer
revision. Assembling checks that the rows add up (every field's revisions dense from 0, as
many as its row says, none for a field it does not list) and names the instance when not.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import partial
from typing import Any

from psycopg.types.json import Json

from formctl.errors import StoreError
from formctl.forms.instance import Entry, FieldLog, Instance, Provenance, instance_from_fields
from formctl.forms.search import terms_of

COLUMNS = (
    "id, def_id, def_version, subject, status, version, writes, revision_seq, created_at, updated_at, "
    "completed_at, closed_reason, blocked_on, open_step_override, forced_complete, fields, occurrences, dispatches"
)
REV_COLUMNS = "instance_id, field, pos, version, seq, at, source, actor, note, value, error, retracted, how"
INSERT_INSTANCE = f"INSERT INTO formctl_instances ({COLUMNS}, search) VALUES ({', '.join(['%s'] * 19)})"
INSERT_REVISIONS = f"INSERT INTO formctl_revisions ({REV_COLUMNS}) VALUES ({', '.join(['%s'] * 13)})"
UPDATE_INSTANCE = (
    "UPDATE formctl_instances SET def_id = %s, def_version = %s, subject = %s, status = %s, version = %s, "
    "writes = %s, revision_seq = %s, created_at = %s, updated_at = %s, completed_at = %s, closed_reason = %s, "
    "blocked_on = %s, open_step_override = %s, forced_complete = %s, fields = %s, occurrences = %s, "
    "dispatches = %s, search = %s WHERE id = %s"
)
ONE_TRIP_COMMIT = (
    f"WITH upd AS ({UPDATE_INSTANCE} AND writes = %s RETURNING id), "
    f"ins AS (INSERT INTO formctl_revisions ({REV_COLUMNS}) "
    "SELECT upd.id, r.field, r.pos, %s, r.seq, r.at, r.source, r.actor, r.note, r.value::json, r.error, "
    "r.retracted, r.how::json FROM upd, unnest(%s::text[], %s::int[], %s::bigint[], %s::text[], %s::text[], "
    "%s::text[], %s::text[], %s::text[], %s::text[], %s::bool[], %s::text[]) "
    "AS r(field, pos, seq, at, source, actor, note, value, error, retracted, how) RETURNING 1) "
    "SELECT count(*) FROM upd"
)
"""A whole commit as one statement, so one round trip: the instance row is updated only if its
``writes`` counter is still the one the writer's copy was read at (compare-and-set on every
write, dispatch records included), and the new revisions are inserted only if it was. The
parameters: the UPDATE's, the ``writes`` expected, the new version, then
:func:`revision_arrays`. Returns 1 when it committed, 0 when the row had moved (nothing
written)."""
RevisionRow = tuple[Any, ...]
"""One ``formctl_revisions`` row, its values in :data:`REV_COLUMNS` order."""
dumps = partial(json.dumps, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def row_values(instance: Instance, *, writes: int) -> tuple[Any, ...]:
    fields = [[f, len(log.revisions), log.cursor] for f, log in instance.entries.items()]
    return (
        instance.id,
        instance.def_id,
        instance.def_version,
        instance.subject,
        instance.status,
        instance.version,
        writes,
        instance.revision_seq,
        instance.created_at,
        instance.updated_at,
        instance.completed_at,
        instance.closed_reason,
        instance.blocked_on,
        instance.open_step_override,
        bool(instance.forced_complete),
        Json(fields, dumps=dumps),
        Json(instance.occurrences, dumps=dumps),
        Json({k: v.to_dict() for k, v in instance.dispatches.items()}, dumps=dumps),
        terms_of(instance),  # the search column (formctl find)
    )


def revision_rows(
    instance_id: str, entries: dict[str, FieldLog], before: dict[str, FieldLog], *, version: int
) -> Iterable[RevisionRow]:
    """Rows for the revisions of ``entries`` that ``before`` does not have yet."""
    for field, log in entries.items():
        start = len(before[field].revisions) if field in before else 0
        for pos in range(start, len(log.revisions)):
            e = log.revisions[pos]
            p = e.provenance
            try:
                value = None if e.retracted else dumps(e.value)
            except (TypeError, ValueError) as exc:
                raise StoreError(f"The instance holds a value that cannot be stored as JSON ({exc}).") from None
            how = p.extras()
            yield (
                instance_id,
                field,
                pos,
                version,
                e.seq,
                p.timestamp,
                p.source,
                p.actor,
                p.note,
                None if value is None else Json(value, dumps=lambda text: text),
                e.error,
                bool(e.retracted),
                Json(how, dumps=dumps) if how else None,
            )


def _damaged(display: str, instance_id: str, reason: str) -> StoreError:
    where = f"{display} instance {instance_id}"
    return StoreError(f"{where}: {reason}", path=where, reason=reason)


def assemble(row: Any, fresh: dict[str, list[RevisionRow]], base: Instance | None, display: str) -> Instance:
    """Assemble an instance from its row, the revisions newer than ``base`` (by field) and ``base``."""
    try:
        listed = [(str(f), int(length), int(cursor)) for f, length, cursor in row.fields]
    except (TypeError, ValueError) as exc:
        raise _damaged(display, row.id, f"its field list is malformed ({exc}); left as it is.") from None
    entries: dict[str, FieldLog] = {}
    for field, length, cursor in listed:
        old = base.entries[field].revisions if base is not None and field in base.entries else ()
        log = FieldLog(old + _fresh_entries(display, row, field, old, fresh.get(field, ())), cursor)
        _check_log(display, row, field, log, length)
        entries[field] = log
    strays = set(fresh) - {f for f, _, _ in listed}
    if strays:
        raise _damaged(display, row.id, f"answers stored for field(s) the instance does not list: {sorted(strays)}.")
    return instance_from_fields(row._asdict(), entries)


def _fresh_entries(
    display: str, row: Any, field: str, old: tuple[Entry, ...], fresh: Iterable[RevisionRow]
) -> tuple[Entry, ...]:
    """The revisions of ``field`` stored since ``old``, each at the position due next."""
    new: list[Entry] = []
    for rev in fresh:
        _, _, pos, _, seq, at, source, actor, note, value, error, retracted, how = rev
        if pos != len(old) + len(new):
            raise _damaged(
                display,
                row.id,
                f"field {field!r} has revision {pos} where {len(old) + len(new)} "
                "was due: an answer is missing; left as it is.",
            )
        prov = _provenance(source, actor, at, note, how or {})
        new.append(Entry(seq, None, prov, retracted=True) if retracted else Entry(seq, value, prov, error=error))
    return tuple(new)


def _provenance(source: str, actor: str, at: str, note: str | None, how: dict[str, Any]) -> Provenance:
    """A revision's provenance from its columns and its ``how`` (:meth:`Provenance.extras`)."""
    return Provenance(
        source,
        actor,
        at,
        note,
        how.get("kind"),
        how.get("quote"),
        how.get("turn"),
        how.get("message"),
        how.get("hook"),
        how.get("moment"),
        how.get("inputs"),
    )


def _check_log(display: str, row: Any, field: str, log: FieldLog, length: int) -> None:
    """The revisions add up to the count the instance row lists, and the cursor is among them."""
    if len(log.revisions) != length:
        raise _damaged(
            display,
            row.id,
            f"field {field!r} should hold {length} revision(s) at version "
            f"{row.version} but {len(log.revisions)} are stored: answers are missing; left as they are.",
        )
    cursor = log.cursor
    if not -1 <= cursor < max(length, 0) or (length == 0 and cursor != -1):
        raise _damaged(display, row.id, f"field {field!r} has cursor {cursor} outside its {length} revision(s).")


def revision_arrays(rows: list[RevisionRow]) -> list[list[Any]]:
    """:func:`revision_rows` as the eleven arrays :data:`ONE_TRIP_COMMIT` unnests (every column
    but the instance id and the version, which the statement supplies)."""
    columns: list[list[Any]] = [[] for _ in range(11)]
    for row in rows:
        _, field, pos, _, seq, at, source, actor, note, value, error, retracted, how = row
        values = (
            field,
            pos,
            seq,
            at,
            source,
            actor,
            note,
            None if value is None else value.obj,  # already JSON text (revision_rows)
            error,
            retracted,
            None if how is None else dumps(how.obj),
        )
        for column, item in zip(columns, values):
            column.append(item)
    return columns
