"""``formctl stats`` on PostgreSQL: :class:`~formctl.forms.stats.FormFacts` from SQL aggregates.

Each query groups on the server and returns a handful of rows (per status, per field, per
message, per answered-fields pattern), never an instance; the rules are those of
:mod:`formctl.forms.stats`, which the folder store applies in Python, and the tests hold both
stores to the same figures. Times are ISO text (``created_at``...), cast to ``timestamptz`` for
durations and compared as text under ``COLLATE "C"`` (as Python compares them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from formctl.forms.stats import FormFacts, Spread

if TYPE_CHECKING:
    from formctl.forms.reading import Scope

# The instances of the scope, as a CTE every query starts from.
_SCOPE = (
    "WITH scope AS (SELECT * FROM formctl_instances WHERE def_id = %(form)s "
    'AND (%(since)s::text IS NULL OR created_at >= %(since)s::text COLLATE "C")) '
)

BY_STATUS = _SCOPE + "SELECT status, count(*) FROM scope GROUP BY status"

TO_COMPLETE = _SCOPE + (
    "SELECT count(*) AS n, percentile_cont(0.5) WITHIN GROUP (ORDER BY d) AS median, "
    "percentile_cont(0.9) WITHIN GROUP (ORDER BY d) AS p90 "
    "FROM (SELECT extract(epoch FROM completed_at::timestamptz - created_at::timestamptz)::float8 AS d "
    "FROM scope WHERE status = 'complete' AND completed_at IS NOT NULL) s"
)

# For every instance that did not complete: the fields whose revision in force was accepted
# (the cursor's row, not a retraction, no error), grouped into patterns.
STOPS = _SCOPE + (
    "SELECT status, answered, count(*) FROM (SELECT s.status, ARRAY("
    "SELECT f->>0 FROM json_array_elements(s.fields) f JOIN formctl_revisions r "
    "ON r.instance_id = s.id AND r.field = f->>0 AND r.pos = (f->>2)::int "
    'WHERE NOT r.retracted AND r.error IS NULL ORDER BY (f->>0) COLLATE "C") AS answered '
    "FROM scope s WHERE s.status <> 'complete') p GROUP BY status, answered"
)

REFUSED = _SCOPE + (
    "SELECT r.field, r.error, count(*) FROM formctl_revisions r JOIN scope s ON s.id = r.instance_id "
    "WHERE r.error IS NOT NULL GROUP BY r.field, r.error"
)

# An accepted value after an earlier accepted one of the same field.
CORRECTED = _SCOPE + (
    "SELECT field, count(*) FROM (SELECT r.field, r.error IS NULL AND NOT r.retracted AS ok, "
    "count(*) FILTER (WHERE r.error IS NULL AND NOT r.retracted) OVER (PARTITION BY r.instance_id, r.field "
    "ORDER BY r.pos ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before "
    "FROM formctl_revisions r JOIN scope s ON s.id = r.instance_id) w WHERE ok AND before > 0 GROUP BY field"
)

UNDONE = _SCOPE + (
    "SELECT split_part(d.value->>'detail', ':', 1), count(*) FROM scope s, json_each(s.dispatches) d "
    "WHERE d.key LIKE '%%:act:undo:%%' AND d.value->>'detail' IS NOT NULL GROUP BY 1"
)

# A resolution's wait: from the last answer written at or before it to the resolution itself.
WAITS = _SCOPE + (
    ", resolved AS MATERIALIZED (SELECT s.id, d.value AS v FROM scope s, json_each(s.dispatches) d "
    "WHERE d.key LIKE '%%:resolved%%' AND d.value->>'status' IN ('ok', 'failed')) "
    "SELECT cp, outcome, count(*) AS n, percentile_cont(0.5) WITHIN GROUP (ORDER BY waited) AS median, "
    "percentile_cont(0.9) WITHIN GROUP (ORDER BY waited) AS p90 FROM ("
    "SELECT split_part(v->>'hook_id', ':', 2) AS cp, "
    "CASE WHEN v->>'override' = 'withdrawn' THEN 'withdrawn' "
    "WHEN v->>'status' = 'failed' THEN 'rejected' ELSE 'approved' END AS outcome, "
    "extract(epoch FROM (v->>'at')::timestamptz - f.fired::timestamptz)::float8 AS waited "
    'FROM resolved, LATERAL (SELECT max(r.at COLLATE "C") AS fired FROM formctl_revisions r '
    'WHERE r.instance_id = resolved.id AND r.at COLLATE "C" <= (v->>\'at\') COLLATE "C") f) w '
    "WHERE waited IS NOT NULL GROUP BY cp, outcome ORDER BY cp, outcome"
)

WAITING_NOW = (
    _SCOPE + "SELECT blocked_on, count(*) FROM scope WHERE status = 'awaiting' AND blocked_on IS NOT NULL GROUP BY 1"
)


# The model that answered each instance's latest exchange that names one, by status.
BY_MODEL = _SCOPE + (
    "SELECT m.model, s.status, count(*) AS n FROM scope s JOIN ("
    "SELECT DISTINCT ON (instance_id) instance_id, model FROM formctl_conversation_turns WHERE model IS NOT NULL "
    "ORDER BY instance_id, pos DESC) m ON m.instance_id = s.id GROUP BY m.model, s.status"
)


def form_facts(cur: Any, scope: Scope) -> FormFacts:
    """The facts of ``scope``, each from one aggregate query (in the caller's transaction)."""
    params = {"form": scope.def_id, "since": scope.since}
    facts = FormFacts()
    cur.execute(BY_STATUS, params)
    facts.by_status = {status: n for status, n in cur.fetchall()}
    cur.execute(TO_COMPLETE, params)
    count, median, p90 = cur.fetchone()
    facts.to_complete = Spread(count, median, p90)
    cur.execute(STOPS, params)
    facts.stops = {(status, tuple(answered)): n for status, answered, n in cur.fetchall()}
    cur.execute(REFUSED, params)
    for field_id, error, n in cur.fetchall():
        f = facts.field_facts(field_id)
        f.refused += n
        f.messages[error] += n
    cur.execute(CORRECTED, params)
    for field_id, n in cur.fetchall():
        facts.field_facts(field_id).corrected = n
    cur.execute(UNDONE, params)
    for field_id, n in cur.fetchall():
        facts.field_facts(field_id).undone = n
    cur.execute(WAITS, params)
    facts.waits = {(cp, outcome): Spread(n, median, p90) for cp, outcome, n, median, p90 in cur.fetchall()}
    cur.execute(WAITING_NOW, params)
    facts.waiting_now = {cp: n for cp, n in cur.fetchall()}
    cur.execute(BY_MODEL, params)
    for model, status, n in cur.fetchall():
        facts.by_model.setdefault(model, {})[status] = n
    return facts
