"""The model's tools, fuzzed through the chat loop (see ``tool_fuzz.py`` for what each call must
keep true). A few hundred examples here; ``benchmarks/fuzz.py`` runs ten thousand calls and
counts what it finds."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from fixture_project import REGISTRY
from tool_fuzz import Tally, play, turns

FUZZ_SETTINGS = settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)


@FUZZ_SETTINGS
@given(example=turns())
def test_no_tool_call_a_model_gets_wrong_crashes_loses_or_writes_what_it_should_not(example):
    tally = Tally()
    play(example, REGISTRY, tally)
    assert not tally.findings, "\n".join(str(f) for f in tally.findings)
