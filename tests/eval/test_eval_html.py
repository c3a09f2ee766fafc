"""``formctl eval --html``: the page opened in a real headless Chromium (tests/helpers/chromium.py),
checked as a reader sees it: the verdict, the grid with failures first, each failed run open with
its failure lines, values table and conversation, the charts, and a screenshot at desktop width
whose colours are the outcomes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers.chromium import browser_page, read_png

REPO = Path(__file__).resolve().parents[2]
TERSE = REPO / "scenarios" / "travel_claim" / "terse_rail.toml"
NEW_CLIENT = REPO / "scenarios" / "client_intake" / "new_client.toml"
FAIL_BG, PASS_BG = (0xFD, 0xE7, 0xE5), (0xE3, 0xF4, 0xE8)  # the page's red and green cell backgrounds


@pytest.fixture(scope="module")
def report_page(tmp_path_factory):
    """One eval (a passing and a failing scenario, two runs each) written as HTML, opened in Chromium."""
    from clitools import invoke
    from fixture_project import FORMS

    folder = tmp_path_factory.mktemp("html")
    short = folder / "scenarios" / "short_budget.toml"  # the terse claim with too few turns: fails on them
    short.parent.mkdir()
    short.write_text(TERSE.read_text(encoding="utf-8").replace("max_turns = 16", "max_turns = 5"), encoding="utf-8")
    html = folder / "report.html"
    done = invoke(
        "eval", str(NEW_CLIENT), str(short), "--model", "guided", "--runs", "2", "--html", str(html),
        "--min-pass", "0.9", "--forms", str(FORMS), "--record-dir", str(folder / "runs"),
    )  # fmt: skip
    assert done.exit_code == 1, done.output
    return html, browser_page(html, folder / "shot.png", size=(1280, 1100))


def test_the_page_says_the_verdict_the_gate_and_the_models_figures(report_page):
    _, page = report_page
    assert "2 of 4 runs passed; 2 failed" in page.text
    assert "gate: guided pass^1 50.0% < 90.0% (--min-pass): NOT met" in page.text
    assert re.search(r"guided pass\^1 50% pass\^2 50% runs passed 2 / 4 invention attempts 0", page.text)


def test_the_grid_lists_the_failing_scenario_first_coloured_by_outcome(report_page):
    _, page = report_page
    grid = page.dom[page.dom.index('<table class="grid"') :]
    grid = grid[: grid.index("</table>")]
    assert grid.index("scenarios/short_budget") < grid.index("client_intake/new_client")
    cells = re.findall(r'<td class="cell (\w+)">', grid)
    assert cells == ["fail", "pass"]
    assert "pass^1 0% · pass^2 0%" in grid and "pass^1 100% · pass^2 100%" in grid


def test_each_failed_run_is_open_with_its_failure_values_and_conversation(report_page):
    _, page = report_page
    runs = [
        (bool(f), bool(o)) for f, o in re.findall(r'<details class="run( failed)?" id="[^"]*"( open="")?>', page.dom)
    ]
    assert runs == [(True, True), (True, True), (False, False), (False, False)]  # failures first, and open
    failed = page.dom[page.dom.index('<details class="run failed"') :]
    failed = failed[: failed.index("</details>")]
    assert "turns: expected at most 5 of the person's turns, took 14" in failed
    assert re.search(r"<td>staff_id</td><td[^>]*>AB1234</td><td[^>]*>AB1234</td><td[^>]*>right</td>", failed)
    assert '<li class="w-person"><span class="who">person</span>Dana Reeve</li>' in failed
    assert re.search(r'<li class="w-tool"><span class="who">tool</span>form_fill \{', failed)


def test_the_charts_are_inline_svg_and_nothing_comes_from_outside(report_page):
    html, page = report_page
    assert "Turns per run (mean)" in page.text and "Cost per scenario (all runs)" in page.text
    assert page.dom.count("<svg") == 2
    source = html.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", source)  # no script, font or image from anywhere
    assert "<script" not in source and "<link" not in source


def test_the_screenshot_at_desktop_width_shows_the_outcome_colours(report_page):
    _, page = report_page
    shot = read_png(page.screenshot)
    assert shot.width == 1280
    assert shot.count(FAIL_BG, within=3) > 2000  # the red verdict-free cells: the failing row of the grid, ...
    assert shot.count(PASS_BG, within=3) > 2000  # ... and the green one
    # nothing spills past the right edge: the last column of pixels is the page's white
    assert all(shot.pixel(1279, y) == (255, 255, 255) for y in range(0, shot.height, 50))
