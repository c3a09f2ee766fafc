"""``formctl stats`` in the terminal (rich tables with bar charts) and as one HTML page.

Both draw the data :func:`formctl.forms.stats.summarise` returns, and nothing else: the JSON,
the tables and the page say the same figures. The page is self-contained (inline CSS and SVG,
no script, nothing fetched), so it can be mailed or opened from a shared folder.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from rich.text import Text

from formctl.cli.render import _table, console
from formctl.json_types import JsonObject

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["duration", "page", "print_stats"]

BAR = 24  # characters of the longest bar in the terminal


def duration(seconds: float | None) -> str:
    """``42s``, ``3m 05s``, ``2h 10m``, ``3d 4h``; ``-`` for none."""
    if seconds is None:
        return "-"
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h {s % 3600 // 60:02d}m"
    return f"{s // 86400}d {s % 86400 // 3600}h"


def _rate(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.1%}"


def _bar(n: int, most: int, style: str) -> Text:
    width = round(BAR * n / most) if most else 0
    return Text("█" * width or ("▏" if n else ""), style=style)


def print_stats(data: JsonObject, out: Console | None = None) -> None:
    out = out or console()
    since = f" since {data['since']}" if data["since"] else ""
    out.print(Text(f"{data['name']} ({data['form']}){since}", style="bold"))
    ttc = data["time_to_complete"]
    out.print(
        f"started {data['started']} · completed {data['completed']} ({_rate(data['completion_rate'])}) · "
        f"abandoned {data['abandoned']} · waiting {data['waiting']} · open {data['open']}"
    )
    out.print(f"time to complete: median {duration(ttc['median_seconds'])}, p90 {duration(ttc['p90_seconds'])}")
    _drop_off(data, out)
    _fields(data, out)
    _checkpoints(data, out)
    if data["by_model"]:
        table = _table("By model", pad_edge=True)
        for name in ("model", "started", "completed", "rate"):
            table.add_column(name, justify="left" if name == "model" else "right")
        for m in data["by_model"]:
            rate = m["completed"] / m["started"] if m["started"] else None
            table.add_row(m["model"], str(m["started"]), str(m["completed"]), _rate(rate))
        out.print(table)


def _drop_off(data: JsonObject, out: Console) -> None:
    rows = data["drop_off"]
    most = max((r["open"] + r["waiting"] + r["abandoned"] for r in rows), default=0)
    table = _table("Where people stop", pad_edge=True)
    table.add_column("step")
    for name in ("open", "waiting", "abandoned"):
        table.add_column(name, justify="right")
    table.add_column("")
    for r in rows:
        bar = _bar(r["abandoned"], most, "red")
        bar.append_text(_bar(r["open"] + r["waiting"], most, "yellow"))
        table.add_row(r["title"], str(r["open"]), str(r["waiting"]), str(r["abandoned"]), bar)
    out.print(table)


def _fields(data: JsonObject, out: Console) -> None:
    rows = [f for f in data["fields"] if f["refused"] or f["corrected"] or f["undone"]]
    if not rows:
        return
    most = max(f["refused"] for f in rows)
    table = _table("Answers refused, corrected, undone", pad_edge=True)
    table.add_column("field")
    table.add_column("refused", justify="right")
    table.add_column("")
    table.add_column("corrected", justify="right")
    table.add_column("undone", justify="right")
    table.add_column("top refusal")
    for f in rows:
        top = f["top_refusals"][0] if f["top_refusals"] else None
        said = f"{top['message']} ({top['count']})" if top else ""
        table.add_row(
            f["label"], str(f["refused"]), _bar(f["refused"], most, "red"), str(f["corrected"]), str(f["undone"]), said
        )
    out.print(table)


def _checkpoints(data: JsonObject, out: Console) -> None:
    if not data["checkpoints"]:
        return
    table = _table("Checkpoint waits (fired → resolved)", pad_edge=True)
    for name in ("checkpoint", "outcome", "count", "median", "p90"):
        table.add_column(name, justify="right" if name in ("count", "median", "p90") else "left")
    for c in data["checkpoints"]:
        table.add_row(
            c["checkpoint"], c["outcome"], str(c["count"]), duration(c["median_seconds"]), duration(c["p90_seconds"])
        )
    out.print(table)


# --------------------------------------------------------------------------- the HTML page

_CSS = """
body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;background:#f6f7f9;color:#1d2330}
main{max-width:1100px;margin:0 auto;padding:28px 32px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 10px}
.sub{color:#5b6474;margin:0 0 20px}
.cards{display:grid;grid-template-columns:repeat(6,1fr);gap:12px}
.card{background:#fff;border:1px solid #e1e4ea;border-radius:8px;padding:12px 14px}
.card b{display:block;font-size:24px}.card span{color:#5b6474;font-size:13px}
section{background:#fff;border:1px solid #e1e4ea;border-radius:8px;padding:14px 18px;margin-top:16px}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:6px 8px;border-bottom:1px solid #eef0f3}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.legend{font-size:13px;color:#5b6474}.legend i{display:inline-block;width:10px;height:10px;margin:0 4px 0 12px}
"""
_COLOURS = {"abandoned": "#d64545", "waiting": "#e0a100", "open": "#4a7fd6", "refused": "#d64545"}


def _esc(value: object) -> str:
    return html.escape(str(value))


def _bars_svg(rows: list[tuple[str, list[tuple[str, int]]]], *, width: int = 1000) -> str:
    """Horizontal stacked bars: one row per label, each part (series, n) in its colour."""
    label_w, row_h = 220, 30
    most = max((sum(n for _, n in parts) for _, parts in rows), default=0) or 1
    scale = (width - label_w - 60) / most
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="100%" viewBox="0 0 {width} {row_h * len(rows) + 6}" role="img">'
    ]
    for i, (label, parts) in enumerate(rows):
        y = i * row_h + 4
        out.append(f'<text x="0" y="{y + 17}" font-size="14" fill="#1d2330">{_esc(label)}</text>')
        x = float(label_w)
        for series, n in parts:
            w = n * scale
            if n:
                out.append(
                    f'<rect x="{x:.1f}" y="{y + 3}" width="{max(w, 2):.1f}" height="20" rx="3" fill="{_COLOURS[series]}">'
                )
                out.append(f"<title>{_esc(label)}: {n} {series}</title></rect>")
            x += w
        total = sum(n for _, n in parts)
        out.append(f'<text x="{x + 8:.1f}" y="{y + 17}" font-size="13" fill="#5b6474">{total}</text>')
    out.append("</svg>")
    return "".join(out)


def _table_html(head: list[str], rows: list[list[object]], numeric: set[int]) -> str:
    cells = "".join(
        f'<th class="n">{_esc(h)}</th>' if i in numeric else f"<th>{_esc(h)}</th>" for i, h in enumerate(head)
    )
    body = []
    for row in rows:
        body.append(
            "<tr>"
            + "".join(
                f'<td class="n">{_esc(v)}</td>' if i in numeric else f"<td>{_esc(v)}</td>" for i, v in enumerate(row)
            )
            + "</tr>"
        )
    return f"<table><thead><tr>{cells}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def page(data: JsonObject) -> str:
    """The whole report as one HTML document."""
    ttc = data["time_to_complete"]
    cards = [
        ("started", data["started"]),
        ("completed", data["completed"]),
        ("completion rate", _rate(data["completion_rate"])),
        ("abandoned", data["abandoned"]),
        ("waiting", data["waiting"]),
        ("median to complete", duration(ttc["median_seconds"])),
    ]
    since = f" · since {data['since']}" if data["since"] else ""
    parts = [
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{_esc(data['name'])}: stats</title>",
        f"<style>{_CSS}</style></head><body><main>",
        f"<h1>{_esc(data['name'])}</h1><p class=sub>{_esc(data['form'])}{_esc(since)} · p90 to complete "
        f"{_esc(duration(ttc['p90_seconds']))} · open {data['open']}</p>",
        '<div class="cards">'
        + "".join(f"<div class=card><b>{_esc(v)}</b><span>{_esc(k)}</span></div>" for k, v in cards)
        + "</div>",
        "<section id=drop-off><h2>Where people stop</h2><p class=legend>"
        + "".join(f'<i style="background:{_COLOURS[s]}"></i>{s}' for s in ("abandoned", "waiting", "open"))
        + "</p>",
        _bars_svg([(r["title"], [(s, r[s]) for s in ("abandoned", "waiting", "open")]) for r in data["drop_off"]]),
        "</section>",
    ]
    fields = [f for f in data["fields"] if f["refused"] or f["corrected"] or f["undone"]]
    parts.append("<section id=fields><h2>Answers refused, corrected, undone</h2>")
    if fields:
        parts.append(_bars_svg([(f["label"], [("refused", f["refused"])]) for f in fields]))
        rows = [
            [
                f["label"],
                f["refused"],
                f["corrected"],
                f["undone"],
                "; ".join(f"{t['message']} ({t['count']})" for t in f["top_refusals"]),
            ]
            for f in fields
        ]
        parts.append(_table_html(["field", "refused", "corrected", "undone", "top refusals"], rows, {1, 2, 3}))
    else:
        parts.append("<p class=sub>No answer was refused, corrected or undone.</p>")
    parts.append("</section>")
    if data["checkpoints"]:
        rows = [
            [c["checkpoint"], c["outcome"], c["count"], duration(c["median_seconds"]), duration(c["p90_seconds"])]
            for c in data["checkpoints"]
        ]
        parts.append("<section id=waits><h2>Checkpoint waits (fired → resolved)</h2>")
        parts.append(_table_html(["checkpoint", "outcome", "count", "median", "p90"], rows, {2, 3, 4}) + "</section>")
    if data["by_model"]:
        rows = [[m["model"], m["started"], m["completed"]] for m in data["by_model"]]
        parts.append(
            "<section id=models><h2>By model</h2>"
            + _table_html(["model", "started", "completed"], rows, {1, 2})
            + "</section>"
        )
    parts.append("</main></body></html>\n")
    return "".join(parts)
