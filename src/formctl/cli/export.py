"""``formctl export --form F``: every instance of a form as CSV or JSON lines, written as read."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from formctl.cli.base import _fail
from formctl.json_types import FieldValue

if TYPE_CHECKING:  # pragma: no cover
    from formctl.forms.runner import FormRunner

FORMATS = ("csv", "jsonl")


def _cell(value: FieldValue) -> str:
    """A value as one CSV cell: text as it is, nothing as empty, anything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def export_form(
    runner: FormRunner, form: str, *, status: str | None, since: str | None, fmt: str | None, sensitive: bool
) -> None:
    """Write the rows to stdout; a warning on stderr first when sensitive values are included."""
    import csv

    from formctl.cli.commands.desk import _date
    from formctl.forms.export import META, columns
    from formctl.forms.instance import INSTANCE_STATUSES
    from formctl.forms.reading import Scope

    fmt = fmt or "csv"
    if fmt not in FORMATS:
        _fail(f"--format must be csv or jsonl, not {fmt!r}.", 2)
    if status is not None and status not in INSTANCE_STATUSES:
        _fail(f'Unknown status "{status}": use one of {", ".join(INSTANCE_STATUSES)}.', 2)
    compiled = runner.compiled(form)
    scope = Scope(compiled.id, status=status, since=_date(since))
    if sensitive and any(f.sensitive for f in compiled.fields):
        sys.stderr.write("warning: --include-sensitive: sensitive answers are written as given; keep the file safe\n")
    rows = runner.export_rows(scope, include_sensitive=sensitive)
    out = sys.stdout
    if fmt == "jsonl":
        for row in rows:
            out.write(json.dumps(row.to_dict(), ensure_ascii=False) + "\n")
    else:
        writer = csv.writer(out)
        header = columns(compiled)
        writer.writerow(header)
        fields = [f.id for f in compiled.fields]
        for row in rows:
            writer.writerow(
                [_cell(row.meta[k]) for k in META]
                + [_cell(row.values.get(f)) for f in fields]
                + [_cell(row.held.get(f)) for f in fields]
            )
    for exc in scope.damaged:
        sys.stderr.write(f"warning: not exported: {exc.message} (formctl store check)\n")
