"""``formctl stats`` and ``formctl export --form`` on a generated store of 1,000 travel claims whose
figures are known from how they were made (tests/helpers/claims.py): the folder store's one pass
and PostgreSQL's SQL aggregates must both print exactly them."""

from __future__ import annotations

import csv
import io
import math

import pytest

from clitools import Cli
from formctl.forms.stats import percentile
from helpers.claims import EMAIL_ERROR, STAFF_ID_ERROR, Truth, generate

CLAIMS = 1000


def _close(a: float | None, b: float | None) -> bool:
    return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)


def _check(data: dict, truth: Truth) -> None:
    assert data["started"] == CLAIMS
    assert data["completed"] == truth.by_status["complete"]
    assert data["abandoned"] == truth.by_status["abandoned"]
    assert data["waiting"] == truth.by_status["awaiting"]
    assert data["open"] == truth.by_status["active"]
    assert data["completion_rate"] == truth.by_status["complete"] / CLAIMS
    ordered = sorted(truth.complete_seconds)
    ttc = data["time_to_complete"]
    assert ttc["count"] == len(ordered)
    assert _close(ttc["median_seconds"], percentile(ordered, 0.5)) and _close(
        ttc["p90_seconds"], percentile(ordered, 0.9)
    )
    for row in data["drop_off"]:
        for column in ("open", "waiting", "abandoned"):
            assert row[column] == truth.stopped[(row["step"], column)], (row, column)
    assert sum(truth.stopped.values()) == CLAIMS - truth.by_status["complete"]
    fields = {f["field"]: f for f in data["fields"]}
    for field_id in ("staff_id", "email", "destination", "total", "purpose", "full_name"):
        f = fields[field_id]
        assert (f["refused"], f["corrected"], f["undone"]) == (
            truth.refused[field_id],
            truth.corrected[field_id],
            truth.undone[field_id],
        ), field_id
    assert fields["staff_id"]["top_refusals"] == [{"message": STAFF_ID_ERROR, "count": truth.refused["staff_id"]}]
    assert fields["email"]["top_refusals"] == [{"message": EMAIL_ERROR, "count": truth.refused["email"]}]
    waits = {(c["checkpoint"], c["outcome"]): c for c in data["checkpoints"]}
    for outcome, seconds in truth.waits.items():
        c = waits[("policy-cap", outcome)]
        ordered = sorted(seconds)
        assert c["count"] == len(ordered)
        assert _close(c["median_seconds"], percentile(ordered, 0.5)) and _close(
            c["p90_seconds"], percentile(ordered, 0.9)
        )
    assert waits[("policy-cap", "waiting")]["count"] == truth.by_status["awaiting"]
    assert {o for _, o in waits} == {*truth.waits, "waiting"}


def _check_export(cli: Cli, truth: Truth) -> None:
    out = cli.ok("export", "--form", "travel-claim", "--format", "csv").stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == CLAIMS and len({r["instance_id"] for r in rows}) == CLAIMS
    assert sum(r["status"] == "complete" for r in rows) == truth.by_status["complete"]
    maria = [r for r in rows if r["subject"] == "María López"]
    assert maria and all(r["full_name"] in ("", "María López") for r in maria)
    assert list(rows[0])[:6] == ["instance_id", "subject", "status", "created_at", "updated_at", "completed_at"]
    complete = next(r for r in rows if r["status"] == "complete")
    assert complete["total"] in ("285.5", "900.0") and complete["completed_at"]
    lines = cli.ok("export", "--form", "travel-claim", "--format", "jsonl", "--status", "abandoned").stdout.splitlines()
    assert len(lines) == truth.by_status["abandoned"]


@pytest.fixture(scope="module")
def folder_claims(tmp_path_factory):
    from formctl import JsonFileAdapter

    store = str(tmp_path_factory.mktemp("claims") / "store")
    adapter = JsonFileAdapter(store)
    truth = generate(adapter, CLAIMS)
    adapter.close()
    return store, truth


def test_stats_on_the_folder_store_are_the_generated_truth(folder_claims, monkeypatch):
    store, truth = folder_claims
    cli = Cli(store)
    _check(cli.json("stats", "travel-claim"), truth)
    shown = cli.ok("stats", "travel-claim").stdout
    assert f"started {CLAIMS}" in shown and "Where people stop" in shown and "policy-cap" in shown
    later = cli.json("stats", "travel-claim", "--since", "2026-11-08")
    assert 0 < later["started"] < CLAIMS


def test_export_of_the_folder_store_is_one_csv_row_per_claim(folder_claims):
    store, truth = folder_claims
    _check_export(Cli(store), truth)


def test_stats_and_export_on_postgresql_are_the_generated_truth(pg_dsn):
    from formctl.store.postgres import PostgresAdapter

    adapter = PostgresAdapter(pg_dsn)
    try:
        truth = generate(adapter, CLAIMS)
    finally:
        adapter.close()
    cli = Cli(pg_dsn)
    _check(cli.json("stats", "travel-claim"), truth)
    _check_export(cli, truth)
    found = cli.json("find", "maria lopez", "--form", "travel-claim")["found"]
    assert found and all(f["subject"] == "María López" for f in found)


def test_a_bad_since_or_format_is_one_line(cli):
    bad = cli("stats", "travel-claim", "--since", "last week")
    assert (
        bad.exit_code == 2 and bad.stderr.strip() == 'error: --since expects a date like 2026-11-01, got "last week".'
    )
    fmt = cli("export", "--form", "travel-claim", "--format", "xlsx")
    assert fmt.exit_code == 2 and "--format must be csv or jsonl" in fmt.stderr
    assert cli.ok("export", "--form", "travel-claim").stdout.startswith("instance_id,subject,status,")  # csv by default
    both = cli("export", "form_mx0000_abcdef", "--form", "travel-claim")
    assert both.exit_code == 2 and both.stderr.strip() == "error: Give an instance ID or --form, not both."
    unknown = cli("stats", "no-such-form")
    assert unknown.exit_code != 0 and len(unknown.stderr.strip().splitlines()) == 1


@pytest.mark.e2e
def test_the_stats_page_opens_in_a_real_browser_with_its_charts(folder_claims, tmp_path):
    from helpers.chromium import DESKTOP, browser_page, read_png

    store, truth = folder_claims
    page = tmp_path / "claims.html"
    Cli(store).ok("stats", "travel-claim", "--html", str(page))
    html = page.read_text(encoding="utf-8")
    assert "<script" not in html and "http://" not in html.replace("http://www.w3.org/2000/svg", "")  # self-contained
    shot = tmp_path / "claims.png"
    seen = browser_page(page, shot)
    text = seen.text
    assert "Travel reimbursement claim" in text and "Where people stop" in text
    assert f"{CLAIMS} started" in text and f"{truth.by_status['complete']} completed" in text
    assert f"{truth.refused['staff_id']}" in text and "policy-cap" in text
    assert seen.dom.count("<svg") >= 2 and seen.dom.count("<rect") >= 8  # the charts were drawn
    png = read_png(shot)
    assert png.width == DESKTOP[0]
    assert png.count((0xD6, 0x45, 0x45)) > 2000  # the red bars (abandoned, refused) are visible
    assert png.count((0x4A, 0x7F, 0xD6)) > 500  # and the blue ones (still open)


def _two_chats(cli: Cli) -> None:
    for subject in ("dana", "sam"):
        chat = cli("run", "travel-claim", "--offline", "--subject", subject, input="Dana Reeve\nAB1234\n")
        assert chat.exit_code == 0, chat.output


def test_stats_count_by_the_model_each_conversation_names(cli):
    _two_chats(cli)
    cli.start({"full_name": "Kim Ode"}, subject="kim")  # started by a host: no conversation, no model
    data = cli.json("stats", "travel-claim")
    assert data["started"] == 3
    assert data["by_model"] == [{"model": "guided", "started": 2, "completed": 0}]


def test_stats_by_model_on_postgresql(pg_dsn):
    cli = Cli(pg_dsn)
    _two_chats(cli)
    assert cli.json("stats", "travel-claim")["by_model"] == [{"model": "guided", "started": 2, "completed": 0}]


def test_store_reindex_on_postgresql_writes_the_search_text_afresh(pg_dsn):
    import psycopg

    from fixture_project import FORMS
    from formctl import FormRegistry, FormRunner
    from formctl.store.postgres import PostgresAdapter

    adapter = PostgresAdapter(pg_dsn)
    try:
        runner = FormRunner(adapter, registry=FormRegistry.from_toml(FORMS / "registry.toml"), subject="mlopez")
        iid = runner.start("travel-claim", seed={"full_name": "María López"}).view.instance_id
    finally:
        adapter.close()
    cli = Cli(pg_dsn)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("UPDATE formctl_instances SET search = ''")  # as if written by a rule now changed
    assert cli.json("find", "maria")["found"] == []
    done = cli.ok("store", "reindex").stdout
    assert "search text of 1 instance(s) written afresh" in done
    assert [f["instance_id"] for f in cli.json("find", "maria")["found"]] == [iid]


def test_a_staff_role_with_dml_only_finds_through_the_trigram_index_and_reads_the_figures(pg_dsn):
    import psycopg
    from psycopg.conninfo import make_conninfo

    from formctl.store.postgres import PostgresAdapter

    cli = Cli(pg_dsn)
    cli.ok("store", "init")  # the owner: the tables, and the search index
    adapter = PostgresAdapter(pg_dsn)
    try:
        truth = generate(adapter, 60, seed=7)
    finally:
        adapter.close()
    schema = pg_dsn.rsplit("search_path%3D", 1)[1]
    staff = f"staff_{schema}"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{staff}" LOGIN')
        conn.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{staff}"')
        conn.execute(f'GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA "{schema}" TO "{staff}"')
    try:
        as_staff = make_conninfo(pg_dsn, user=staff)
        with psycopg.connect(as_staff, autocommit=True) as conn:
            conn.execute("SET enable_seqscan = off")  # 60 rows: without this a scan is cheaper
            plan = "\n".join(
                r[0] for r in conn.execute("EXPLAIN SELECT id FROM formctl_instances WHERE search LIKE '%maria%'")
            )
        assert "formctl_instances_search" in plan, plan
        desk = Cli(as_staff)
        found = desk.json("find", "maria lopez")["found"]
        assert found and {f["subject"] for f in found} == {"María López"}
        assert desk.json("stats", "travel-claim")["started"] == sum(truth.by_status.values()) == 60
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(f'DROP OWNED BY "{staff}"')
            conn.execute(f'DROP ROLE "{staff}"')
