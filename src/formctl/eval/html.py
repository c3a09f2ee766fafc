"""``formctl eval --html FILE``: the whole eval as one page a person opens in a browser.

One self-contained file (inline CSS and SVG; no script, no font, no image from anywhere: it
opens the same from a CI artifact, an e-mail or a laptop on a train):

- per model, the figures that matter: pass^1, pass^k, invention attempts, invented values,
  turns, model calls and SDK retries, cost;
- the grid, scenario × model, each cell pass^1 and pass^k, coloured by outcome (green: every
  run passed; amber: some did; red: none did), failing scenarios first;
- turns and cost per scenario as bar charts, one bar per model;
- every run, failures first (open) and passes after (closed): its failure lines, its values
  table (expected, stored, verdict), its invention attempts, and its conversation.

Built from the ``--json`` report (:func:`formctl.eval.report.report_json`), so what the page
says is what the JSON says. Pure: :func:`page` returns the text.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from html import escape

from formctl.json_types import JsonObject, JsonValue

__all__ = ["page"]

_CSS = """
:root { --pass: #1b7f3a; --pass-bg: #e3f4e8; --some: #9a6700; --some-bg: #fff4d6; --fail: #b3261e; --fail-bg: #fde7e5;
        --ink: #1d2327; --muted: #5f6b73; --line: #d8dee2; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); margin: 0; }
main { max-width: 1200px; margin: 0 auto; padding: 24px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 10px; }
.meta { color: var(--muted); margin: 0 0 16px; }
.verdict { font-size: 16px; font-weight: 600; padding: 10px 14px; border-radius: 6px; display: inline-block; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px; min-width: 260px; }
.card h3 { margin: 0 0 6px; font-size: 15px; } .card dl { display: grid; grid-template-columns: auto auto; gap: 2px 14px; margin: 0; }
.card dt { color: var(--muted); } .card dd { margin: 0; text-align: right; font-variant-numeric: tabular-nums; }
table { border-collapse: collapse; } th, td { border: 1px solid var(--line); padding: 5px 9px; text-align: left; vertical-align: top; }
th { background: #f4f6f7; font-weight: 600; }
.grid td.cell { text-align: center; font-variant-numeric: tabular-nums; min-width: 120px; }
.pass { background: var(--pass-bg); color: var(--pass); } .some { background: var(--some-bg); color: var(--some); }
.fail { background: var(--fail-bg); color: var(--fail); } .none { color: var(--muted); }
.cell a { color: inherit; font-weight: 600; text-decoration: none; }
.charts { display: flex; flex-wrap: wrap; gap: 24px; } figure { margin: 0; } figcaption { font-weight: 600; margin-bottom: 4px; }
details.run { border: 1px solid var(--line); border-left: 6px solid var(--pass); border-radius: 6px; margin: 8px 0; padding: 6px 12px; }
details.run.failed { border-left-color: var(--fail); }
details.run summary { cursor: pointer; font-weight: 600; }
ul.problems { color: var(--fail); margin: 6px 0; padding-left: 20px; }
.values { margin: 8px 0; } .values td.v { font-family: ui-monospace, Menlo, monospace; font-size: 13px; }
ol.chat { list-style: none; padding: 0; margin: 8px 0; }
ol.chat li { margin: 3px 0; padding: 4px 8px; border-radius: 5px; white-space: pre-wrap; overflow-wrap: anywhere; }
ol.chat .who { font-weight: 600; margin-right: 6px; }
.w-person { background: #eef3fb; } .w-model { background: #f6f6f6; } .w-tool { font-family: ui-monospace, Menlo, monospace; font-size: 12px; color: var(--muted); }
.w-formctl { background: #fff4d6; } .w-host { background: #efe9fb; } .w-error { background: var(--fail-bg); color: var(--fail); }
.legend { color: var(--muted); font-size: 13px; }
"""

_PALETTE = ("#3867d6", "#e1703c", "#20a39e", "#8e44ad", "#c0392b", "#7f8c8d")


def _e(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return escape(text, quote=True)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.0f}%"


def _money(value: float | None) -> str:
    return "no price" if value is None else f"${value:.4f}"


def _outcome(row: JsonObject) -> str:
    if row["passed"] == row["runs"]:
        return "pass"
    return "fail" if row["passed"] == 0 else "some"


def _anchor(scenario: str, model: str, run: int | None = None) -> str:
    base = "".join(ch if ch.isalnum() else "-" for ch in f"{scenario}-{model}")
    return f"run-{base}-{run}" if run is not None else f"runs-{base}"


def _cards(report: JsonObject) -> str:
    k = report["k"]
    out = []
    for m in report["models"]:
        rows = [
            ("pass^1", _pct(m["pass_1"])),
            *([(f"pass^{k}", _pct(m["pass_k"]))] if k > 1 else []),
            ("runs passed", f"{m['passed']} / {m['runs']}"),
            ("invention attempts", str(m.get("invention_attempts", 0))),
            ("invented values stored", str(m["invented"])),
            ("turns per run", str(m["turns_mean"])),
            ("model calls / SDK retries", f"{m.get('model_calls', 0)} / {m.get('sdk_retries', 0)}"),
            ("cost", _money(m["cost_usd"])),
            ("time", f"{m['seconds']:.1f} s"),
        ]
        items = "".join(f"<dt>{_e(a)}</dt><dd>{_e(b)}</dd>" for a, b in rows)
        out.append(f'<div class="card"><h3>{_e(m["model"])}</h3><dl>{items}</dl></div>')
    return f'<div class="cards">{"".join(out)}</div>'


def _scenario_order(report: JsonObject) -> list[str]:
    """Scenarios by their worst pass^1 over the models, lowest first (failures first), then by name."""
    worst: dict[str, float] = {}
    for row in report["scenarios"]:
        worst[row["scenario"]] = min(worst.get(row["scenario"], 1.0), row["pass_1"])
    return sorted(worst, key=lambda s: (worst[s], s))


def _grid(report: JsonObject) -> str:
    k = report["k"]
    models = [m["model"] for m in report["models"]]
    rows = {(r["scenario"], r["model"]): r for r in report["scenarios"]}
    head = "".join(f"<th>{_e(m)}</th>" for m in models)
    body = []
    for scenario in _scenario_order(report):
        cells = []
        for model in models:
            row = rows.get((scenario, model))
            if row is None:
                cells.append('<td class="cell none">–</td>')
                continue
            figures = f"pass^1 {_pct(row['pass_1'])}" + (f" · pass^{k} {_pct(row['pass_k'])}" if k > 1 else "")
            cells.append(
                f'<td class="cell {_outcome(row)}"><a href="#{_anchor(scenario, model)}">{_e(figures)}</a>'
                f"<br><small>{row['passed']}/{row['runs']} runs</small></td>"
            )
        body.append(f"<tr><th>{_e(scenario)}</th>{''.join(cells)}</tr>")
    return f'<table class="grid"><tr><th>scenario</th>{head}</tr>{"".join(body)}</table>'


def _bars(title: str, report: JsonObject, key: str, show: Callable[[JsonValue], str]) -> str:
    """A horizontal bar chart, one group per scenario and one bar per model, as inline SVG."""
    models = [m["model"] for m in report["models"]]
    rows = {(r["scenario"], r["model"]): r for r in report["scenarios"]}
    scenarios = _scenario_order(report)
    values = [rows[(s, m)][key] for s in scenarios for m in models if (s, m) in rows and rows[(s, m)][key] is not None]
    top = max(values, default=0) or 1
    label_w, bar_w, bar_h = 210, 220, 12
    group_h = bar_h * len(models) + 8
    height = group_h * len(scenarios) + 30
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + bar_w + 90}" height="{height}" role="img" '
        f'aria-label="{_e(title)}">'
    ]
    for i, scenario in enumerate(scenarios):
        y0 = i * group_h + 4
        parts.append(
            f'<text x="{label_w - 6}" y="{y0 + group_h / 2}" text-anchor="end" font-size="11">{_e(scenario)}</text>'
        )
        for j, model in enumerate(models):
            row = rows.get((scenario, model))
            value = row[key] if row is not None else None
            y = y0 + j * bar_h
            width = 0 if value is None else max(1, round(bar_w * value / top))
            colour = _PALETTE[j % len(_PALETTE)]
            parts.append(
                f'<rect x="{label_w}" y="{y}" width="{width}" height="{bar_h - 2}" fill="{colour}"><title>'
                f"{_e(model)}: {_e(show(value))}</title></rect>"
            )
            parts.append(f'<text x="{label_w + width + 4}" y="{y + bar_h - 3}" font-size="10">{_e(show(value))}</text>')
    legend_y = height - 8
    for j, model in enumerate(models):
        x = label_w + j * 140
        parts.append(f'<rect x="{x}" y="{legend_y - 9}" width="10" height="10" fill="{_PALETTE[j % len(_PALETTE)]}"/>')
        parts.append(f'<text x="{x + 14}" y="{legend_y}" font-size="11">{_e(model)}</text>')
    parts.append("</svg>")
    return f"<figure><figcaption>{_e(title)}</figcaption>{''.join(parts)}</figure>"


def _values_table(run: JsonObject) -> str:
    expected: JsonObject = run.get("expected") or {}
    stored: JsonObject = run.get("stored") or {}
    invented = {i["field"] for i in run.get("invented") or []}
    attempted = {a["field"] for a in run.get("invention_attempts") or []}
    rows = []
    for field_id in [*expected, *(f for f in stored if f not in expected)]:
        want, got = expected.get(field_id), stored.get(field_id)
        if field_id in invented:
            verdict, css = "invented", "fail"
        elif field_id not in expected:
            verdict, css = "not expected", "none"
        elif field_id not in stored:
            verdict, css = "missing", "fail"
        elif field_id in run["values"]["right"]:
            verdict, css = "right", "pass"
        else:
            verdict, css = "wrong", "fail"
        if field_id in attempted:
            verdict += " · invention attempt"
            css = "fail"
        shown_want = _e(want) if field_id in expected else ""
        shown_got = _e(got) if field_id in stored else "<em>nothing</em>"
        rows.append(
            f'<tr><td>{_e(field_id)}</td><td class="v">{shown_want}</td><td class="v">{shown_got}</td>'
            f'<td class="{css}">{_e(verdict)}</td></tr>'
        )
    if not rows:
        return ""
    return (
        '<table class="values"><tr><th>field</th><th>expected</th><th>stored</th><th>verdict</th></tr>'
        f"{''.join(rows)}</table>"
    )


def _run(run: JsonObject) -> str:
    failed = not run["passed"]
    head = (
        f"{'FAILED' if failed else 'passed'} {run['scenario']} · {run['model']} · run {run['run']} — "
        f"{run['turns']} turns, {run['model_calls']} model calls, {run.get('sdk_retries', 0)} SDK retries, "
        f"{_money(run['cost_usd'])}, {run['seconds']:.1f} s"
    )
    problems = "".join(f"<li>{_e(p)}</li>" for p in run["problems"])
    chat = "".join(
        f'<li class="w-{_e(line.get("who", ""))}"><span class="who">{_e(line.get("who", ""))}</span>{_e(line.get("text", ""))}</li>'
        for line in run.get("conversation") or []
    )
    transcript = f'<p class="legend">transcript: {_e(run["transcript"])}</p>' if run.get("transcript") else ""
    return (
        f'<details class="run{" failed" if failed else ""}" id="{_anchor(run["scenario"], run["model"], run["run"])}"'
        f"{' open' if failed else ''}><summary>{_e(head)}</summary>"
        f"{f'<ul class=problems>{problems}</ul>' if problems else ''}{_values_table(run)}"
        f"{f'<ol class=chat>{chat}</ol>' if chat else ''}{transcript}</details>"
    )


def _runs(report: JsonObject) -> str:
    order = {s: i for i, s in enumerate(_scenario_order(report))}
    runs = sorted(report["runs"], key=lambda r: (r["passed"], order.get(r["scenario"], 0), r["model"], r["run"]))
    groups: list[str] = []
    seen: set[tuple[str, str]] = set()
    for run in runs:
        key = (run["scenario"], run["model"])
        anchor = f'<a id="{_anchor(*key)}"></a>' if key not in seen else ""
        seen.add(key)
        groups.append(anchor + _run(run))
    return "".join(groups)


def page(report: JsonObject, *, gate_lines: list[str] | None = None) -> str:
    """The HTML page of an eval report (see the module docstring)."""
    k = report["k"]
    runs = report["runs"]
    failed = sum(1 for r in runs if not r["passed"])
    verdict_css = "pass" if not failed else "fail"
    verdict = f"{len(runs) - failed} of {len(runs)} runs passed" + (f"; {failed} failed" if failed else "")
    gate = "".join(f"<li>{_e(line)}</li>" for line in gate_lines or [])
    charts = _bars("Turns per run (mean)", report, "turns_mean", lambda v: "–" if v is None else f"{v}") + _bars(
        "Cost per scenario (all runs)", report, "cost_usd", _money
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>formctl eval · {_e(verdict)}</title><style>{_CSS}</style></head><body><main>"
        f'<h1>formctl eval</h1><p class="meta">{k} run{"s" if k != 1 else ""} per scenario and model · person: '
        f"{_e(report['person'])} · transcripts: {_e(report.get('record_dir') or '–')}</p>"
        f'<p class="verdict {verdict_css}">{_e(verdict)}</p>'
        f"{f'<ul class=legend>{gate}</ul>' if gate else ''}"
        f"<h2>Models</h2>{_cards(report)}"
        '<h2>Scenarios × models</h2><p class="legend">green: every run passed · amber: some did · red: none did. '
        "Failing scenarios first; a cell opens its runs.</p>"
        f'{_grid(report)}<h2>Turns and cost per scenario</h2><div class="charts">{charts}</div>'
        f'<h2>Runs</h2><p class="legend">Failures first, each with what went wrong, its values and its conversation.</p>'
        f"{_runs(report)}</main></body></html>\n"
    )
